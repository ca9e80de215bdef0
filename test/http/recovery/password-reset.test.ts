import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness, registeredCustomer, type Reply, type TestApp } from '../../helpers/harness.js';
import { assertFieldError, otherThan } from '../../helpers/assertions.js';
import { assertNoSessionOpened, verifiedAt } from '../../helpers/customers.js';

const oldPassword = 'analytical engine 1843';
const newPassword = 'difference engine 1822';
const tenMinutes = 10 * 60;

function forgot(t: TestApp, identity: unknown) {
  return t.post(`${auth}/password/forgot`, { identity });
}

function reset(t: TestApp, identity: string, code: string, password = newPassword, confirmation = password) {
  return t.post(`${auth}/password/reset`, { identity, code, password, password_confirmation: confirmation });
}

function login(t: TestApp, identity: string, password: string) {
  return t.post(`${auth}/login`, { identity, password });
}

function assertChallengeRefused(reply: Reply) {
  assert.equal(reply.status, 422, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'invalid_identity_challenge');
}

/** A registered customer with a reset code in hand. */
async function withResetCode(t: TestApp, overrides: Record<string, unknown> = {}) {
  const customer = await registeredCustomer(t, overrides);
  assert.equal((await forgot(t, customer.identity)).status, 202);
  const code = await t.codeFor(customer.identity, 'password_reset');
  return { ...customer, code };
}

describe('password reset', () => {
  const harness = useHarness();

  describe('forgot password', () => {
    test('answers 202 accepted alike for an existing and an unknown identity', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      const existing = await forgot(t, customer.identity);
      const unknown = await forgot(t, 'nobody@example.com');
      for (const reply of [existing, unknown]) {
        assert.equal(reply.status, 202);
        assert.equal(reply.headers['cache-control'], 'no-store');
      }
      const { request_id: _a, ...existingBody } = existing.body;
      const { request_id: _b, ...unknownBody } = unknown.body;
      assert.deepEqual(existingBody, { status: 'accepted' });
      assert.deepEqual(unknownBody, existingBody);
      assert.deepEqual(Object.keys(unknown.headers).sort(), Object.keys(existing.headers).sort());
    });

    test('sends a reset code only to the identity that has an account', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      await t.deliver();
      await forgot(t, customer.identity);
      await forgot(t, 'nobody@example.com');
      const sent = await t.deliver();
      assert.deepEqual(
        sent.map((m) => [m.to, m.purpose, m.channel]),
        [['ada@example.com', 'password_reset', 'email']],
      );
      assert.match(sent[0]?.content.text ?? '', /\b\d{6}\b/);
    });

    test('answers 202 for a malformed identity, which names no account', async () => {
      const t = await harness.start();
      const reply = await forgot(t, 'not an email');
      assert.equal(reply.status, 202);
      assert.deepEqual(reply.body, { status: 'accepted' });
      assert.deepEqual(await t.deliver(), []);
    });

    test('answers 422 validation_failed on identity when it is missing, empty, too long or not a string', async () => {
      const t = await harness.start();
      assertFieldError(await t.post(`${auth}/password/forgot`, {}), 'identity');
      assertFieldError(await forgot(t, ''), 'identity');
      assertFieldError(await forgot(t, `${'a'.repeat(243)}@example.com`), 'identity');
      assertFieldError(await forgot(t, 42), 'identity');
    });

    test('normalizes the identity: a differently typed phone gets the SMS', async () => {
      const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
      await registeredCustomer(t, { email: undefined, phone: '+14155550123' });
      await t.deliver();
      assert.equal((await forgot(t, '+1 (415) 555-0123')).status, 202);
      const sent = await t.deliver();
      assert.deepEqual(
        sent.map((m) => [m.to, m.purpose, m.channel]),
        [['+14155550123', 'password_reset', 'sms']],
      );
    });
  });

  describe('reset with a valid code', () => {
    test('sets the new password and answers 200 password_reset', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      const reply = await reset(t, customer.identity, customer.code);
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, { status: 'password_reset' });
      assert.equal((await login(t, customer.identity, oldPassword)).status, 401);
      assert.equal((await login(t, customer.identity, newPassword)).status, 200);
    });

    test('never sets a session cookie', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      const reply = await reset(t, customer.identity, customer.code);
      assert.equal(reply.status, 200);
      await assertNoSessionOpened(t, reply);
    });

    test('marks an unverified customer verified', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      assert.equal(await verifiedAt(t, customer.id), null);
      t.clock.advance(60);
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200);
      assert.equal((await verifiedAt(t, customer.id))?.toISOString(), t.clock.now().toISOString());
    });

    test('keeps the first verification time of a verified customer', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      const verification = await t.codeFor(customer.identity, 'verification');
      assert.equal((await t.post(`${auth}/verify`, { identity: customer.identity, code: verification })).status, 200);
      const first = await verifiedAt(t, customer.id);
      t.clock.advance(3600);
      assert.equal((await forgot(t, customer.identity)).status, 202);
      const code = await t.codeFor(customer.identity, 'password_reset');
      assert.equal((await reset(t, customer.identity, code)).status, 200);
      assert.equal((await verifiedAt(t, customer.id))?.toISOString(), first?.toISOString());
    });

    test('sends a password_changed notice by email on an email store', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200);
      const sent = await t.deliver();
      assert.deepEqual(
        sent.map((m) => [m.to, m.purpose, m.channel]),
        [['ada@example.com', 'password_changed', 'email']],
      );
      assert.doesNotMatch(sent[0]?.content.text ?? '', /\b\d{6}\b/, 'the notice carries no code');
    });

    test('sends the password_changed notice by SMS on a phone store', async () => {
      const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
      const customer = await withResetCode(t, { email: undefined, phone: '+1 415 555 0123' });
      assert.equal((await reset(t, '+1 (415) 555-0123', customer.code)).status, 200);
      const sent = await t.deliver();
      assert.deepEqual(
        sent.map((m) => [m.to, m.purpose, m.channel]),
        [['+14155550123', 'password_changed', 'sms']],
      );
      assert.equal((await login(t, '+14155550123', newPassword)).status, 200);
    });
  });

  describe('refused resets', () => {
    test('a wrong code answers 422 invalid_identity_challenge and keeps the old password', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      assertChallengeRefused(await reset(t, customer.identity, otherThan(customer.code)));
      assert.equal((await login(t, customer.identity, oldPassword)).status, 200);
      assert.deepEqual(await t.deliver(), [], 'no password_changed notice');
    });

    test('an unknown or malformed identity answers 422 invalid_identity_challenge', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      assertChallengeRefused(await reset(t, 'nobody@example.com', customer.code));
      assertChallengeRefused(await reset(t, 'not an email', customer.code));
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200, 'the code was untouched');
    });

    test('a verification code does not reset the password', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      const verification = await t.codeFor(customer.identity, 'verification');
      assertChallengeRefused(await reset(t, customer.identity, verification));
      assert.equal((await login(t, customer.identity, oldPassword)).status, 200);
    });

    test('a weak new password answers 422 on password and does not consume the code', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      assertFieldError(await reset(t, customer.identity, customer.code, 'short1'), 'password');
      assertFieldError(await reset(t, customer.identity, customer.code, 'password1'), 'password');
      assertFieldError(await reset(t, customer.identity, customer.code, 'nodigitshere'), 'password');
      assert.equal((await login(t, customer.identity, oldPassword)).status, 200, 'the password is unchanged');
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200, 'the code still works');
      assert.equal((await login(t, customer.identity, newPassword)).status, 200);
    });

    test('a mismatched confirmation answers 422 on password_confirmation and does not consume the code', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      const reply = await reset(t, customer.identity, customer.code, newPassword, 'difference engine 1823');
      assertFieldError(reply, 'password_confirmation');
      assert.equal(reply.body.errors.password, undefined);
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200);
    });

    test('a code that is not six digits answers 422 validation_failed on code', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      for (const code of ['12345', 'abcdef', 123456]) {
        assertFieldError(
          await t.post(`${auth}/password/reset`, {
            identity: customer.identity,
            code,
            password: newPassword,
            password_confirmation: newPassword,
          }),
          'code',
        );
      }
    });
  });

  describe('the reset code', () => {
    test('works only once', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200);
      assertChallengeRefused(await reset(t, customer.identity, customer.code, 'third engine 1871'));
      assert.equal((await login(t, customer.identity, newPassword)).status, 200);
    });

    test('is dead after five wrong tries, even for the right value', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      for (let i = 0; i < 5; i += 1)
        assertChallengeRefused(await reset(t, customer.identity, otherThan(customer.code)));
      assertChallengeRefused(await reset(t, customer.identity, customer.code));
      assert.equal((await login(t, customer.identity, oldPassword)).status, 200);
    });

    test('still works after four wrong tries', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      for (let i = 0; i < 4; i += 1)
        assertChallengeRefused(await reset(t, customer.identity, otherThan(customer.code)));
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200);
    });

    test('still works a second before ten minutes', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      t.clock.advance(tenMinutes - 1);
      assert.equal((await reset(t, customer.identity, customer.code)).status, 200);
    });

    test('expires after ten minutes', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      t.clock.advance(tenMinutes);
      assertChallengeRefused(await reset(t, customer.identity, customer.code));
      assert.equal((await login(t, customer.identity, oldPassword)).status, 200);
    });

    test('is voided by a newer reset code', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      t.clock.advance(61);
      assert.equal((await forgot(t, customer.identity)).status, 202);
      const newer = await t.codeFor(customer.identity, 'password_reset');
      assert.notEqual(newer, customer.code, 'a new code (equal only with probability 1e-6)');
      assertChallengeRefused(await reset(t, customer.identity, customer.code));
      assert.equal((await reset(t, customer.identity, newer)).status, 200);
    });

    test('of 16 concurrent resets with one valid code exactly one succeeds', async () => {
      const t = await harness.start();
      const customer = await withResetCode(t);
      const replies = await Promise.all(
        Array.from({ length: 16 }, (_, i) => reset(t, customer.identity, customer.code, `parallel engine ${i}a`)),
      );
      const winners = replies.flatMap((reply, i) => (reply.status === 200 ? [i] : []));
      assert.equal(winners.length, 1, replies.map((r) => r.status).join(','));
      for (const reply of replies.filter((r) => r.status !== 200)) assertChallengeRefused(reply);
      assert.equal((await login(t, customer.identity, `parallel engine ${winners[0]}a`)).status, 200);
    });
  });
});
