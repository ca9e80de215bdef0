import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness, registeredCustomer, type Reply, type TestApp } from '../../helpers/harness.js';
import { assertFieldError, otherThan } from '../../helpers/assertions.js';
import { assertNoSessionOpened } from '../../helpers/customers.js';

const tenMinutes = 10 * 60;

function verify(t: TestApp, identity: unknown, code: unknown) {
  return t.post(`${auth}/verify`, { identity, code });
}

function assertChallengeRefused(reply: Reply) {
  assert.equal(reply.status, 422, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'invalid_identity_challenge');
  assert.equal(reply.body.errors, undefined);
}

async function verifiedAt(t: TestApp, identity: string): Promise<Date | null> {
  const [row] = await t.db.query<{ verified_at: Date | null }>(
    'SELECT verified_at FROM customers WHERE identity_value = $1',
    [identity],
  );
  assert.ok(row, `a customer ${identity}`);
  return row.verified_at;
}

describe('verify', () => {
  const harness = useHarness();

  test('a correct code answers 200 with the Customer, verified now', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    t.clock.advance(30);
    const code = await t.codeFor(customer.identity, 'verification');
    const reply = await verify(t, customer.identity, code);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, {
      id: customer.id,
      name: 'Ada Lovelace',
      identity: { type: 'email', value: 'ada@example.com', verified_at: t.clock.now().toISOString() },
      has_password: true,
    });
    assert.equal((await verifiedAt(t, customer.identity))?.toISOString(), t.clock.now().toISOString());
  });

  test('never creates a session', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const reply = await verify(t, customer.identity, await t.codeFor(customer.identity, 'verification'));
    assert.equal(reply.status, 200);
    await assertNoSessionOpened(t, reply);
  });

  test('accepts the identity in another case and with surrounding spaces', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    assert.equal((await verify(t, '  ADA@Example.com ', code)).status, 200);
  });

  test('accepts a differently formatted phone number on a phone store', async () => {
    const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
    await registeredCustomer(t, { email: undefined, phone: '+14155550123' });
    const code = await t.codeFor('+14155550123', 'verification');
    const reply = await verify(t, '+1 (415) 555-0123', code);
    assert.equal(reply.status, 200);
    assert.equal(reply.body.identity.type, 'phone');
    assert.equal(reply.body.identity.value, '+14155550123');
  });

  test('a wrong code answers 422 invalid_identity_challenge and leaves the account unverified', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    assertChallengeRefused(await verify(t, customer.identity, otherThan(code)));
    assert.equal(await verifiedAt(t, customer.identity), null);
  });

  test('a code works only once', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    assert.equal((await verify(t, customer.identity, code)).status, 200);
    assertChallengeRefused(await verify(t, customer.identity, code));
  });

  test('a code still works just before ten minutes', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    t.clock.advance(tenMinutes - 1);
    assert.equal((await verify(t, customer.identity, code)).status, 200);
  });

  test('a code is expired after ten minutes', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    t.clock.advance(tenMinutes);
    assertChallengeRefused(await verify(t, customer.identity, code));
    assert.equal(await verifiedAt(t, customer.identity), null);
  });

  test('resend sends a fresh code to an unverified account and voids the earlier one', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const first = await t.codeFor(customer.identity, 'verification');
    const resent = await t.post(`${auth}/verification/resend`, { identity: customer.identity });
    assert.equal(resent.status, 202);
    assert.deepEqual(resent.body, { status: 'accepted' });
    const sent = await t.deliver();
    assert.equal(sent.length, 1, 'one new message');
    assert.equal(sent[0]?.purpose, 'verification');
    const second = await t.codeFor(customer.identity, 'verification');
    assert.notEqual(second, first, 'a new code (equal only with probability 1e-6)');
    assertChallengeRefused(await verify(t, customer.identity, first));
    assert.equal((await verify(t, customer.identity, second)).status, 200);
  });

  test('after five wrong tries even the right code is refused', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    for (let i = 0; i < 5; i += 1) assertChallengeRefused(await verify(t, customer.identity, otherThan(code)));
    assertChallengeRefused(await verify(t, customer.identity, code));
    assert.equal(await verifiedAt(t, customer.identity), null);
  });

  test('after four wrong tries the right code still works', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    for (let i = 0; i < 4; i += 1) assertChallengeRefused(await verify(t, customer.identity, otherThan(code)));
    assert.equal((await verify(t, customer.identity, code)).status, 200);
  });

  test('an unknown identity answers 422 invalid_identity_challenge', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    assertChallengeRefused(await verify(t, 'nobody@example.com', code));
  });

  test('a malformed identity answers 422 invalid_identity_challenge, not a validation error', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    assertChallengeRefused(await verify(t, 'not an email', code));
    assertChallengeRefused(await verify(t, '+14155550123', code));
    const phone = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
    assertChallengeRefused(await verify(phone, 'ada@example.com', '123456'));
    assertChallengeRefused(await verify(phone, '+1 123 456 7890', '123456'));
  });

  test('a wrong, used, replaced, expired or dead code and an unknown identity all tell the shopper the same: ask for a new code', async () => {
    const t = await harness.start();
    const refusal = async (identity: string, code: string) => {
      const reply = await verify(t, identity, code);
      assertChallengeRefused(reply);
      return String(reply.body.detail);
    };
    const customers = [];
    for (const name of ['wrong', 'used', 'replaced', 'dead', 'expired'])
      customers.push(await registeredCustomer(t, { email: `${name}@example.com` }));
    const [wrongOne, usedOne, replacedOne, deadOne, expiredOne] = customers;
    const details: Record<string, string> = {};
    const wrongCode = await t.codeFor(wrongOne!.identity, 'verification');
    details['wrong'] = await refusal(wrongOne!.identity, otherThan(wrongCode));

    const usedCode = await t.codeFor(usedOne!.identity, 'verification');
    assert.equal((await verify(t, usedOne!.identity, usedCode)).status, 200);
    details['used'] = await refusal(usedOne!.identity, usedCode);

    const replacedCode = await t.codeFor(replacedOne!.identity, 'verification');
    assert.equal((await t.post(`${auth}/verification/resend`, { identity: replacedOne!.identity })).status, 202);
    await t.deliver();
    details['replaced'] = await refusal(replacedOne!.identity, replacedCode);

    const deadCode = await t.codeFor(deadOne!.identity, 'verification');
    for (let i = 0; i < 5; i += 1) await refusal(deadOne!.identity, otherThan(deadCode));
    details['dead after five tries'] = await refusal(deadOne!.identity, deadCode);

    details['unknown identity'] = await refusal('nobody@example.com', deadCode);

    const expiredCode = await t.codeFor(expiredOne!.identity, 'verification');
    t.clock.advance(tenMinutes);
    details['expired'] = await refusal(expiredOne!.identity, expiredCode);

    assert.equal(new Set(Object.values(details)).size, 1, JSON.stringify(details, null, 2));
    assert.match(details['wrong']!, /ask for a new code/i);
  });

  test('an unknown identity and a wrong code give the same answer apart from request_id', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    const wrong = await verify(t, customer.identity, otherThan(code));
    const unknown = await verify(t, 'nobody@example.com', code);
    const { request_id: _a, ...wrongBody } = wrong.body;
    const { request_id: _b, ...unknownBody } = unknown.body;
    assert.equal(unknown.status, wrong.status);
    assert.deepEqual(unknownBody, wrongBody);
  });

  test('a missing, empty, over-long or non-string identity answers 422 validation_failed on identity', async () => {
    const t = await harness.start();
    assertFieldError(await t.post(`${auth}/verify`, { code: '123456' }), 'identity');
    assertFieldError(await verify(t, '', '123456'), 'identity');
    assertFieldError(await verify(t, `${'a'.repeat(243)}@example.com`, '123456'), 'identity');
    assertFieldError(await verify(t, 4155550123, '123456'), 'identity');
  });

  // Arabic-Indic digits are read as ASCII (test/http/core/typed-input.test.ts); no other script's are.
  test('a code that is not exactly six digits in a string answers 422 validation_failed on code', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    for (const code of [
      '12345',
      '1234567',
      'abcdef',
      '12345a',
      ' 123456',
      '１２３４５６',
      '١٢٣٤٥',
      '۱۲۳۴۵۶۷',
      '१२३४५६',
      '',
      123456,
      null,
    ]) {
      assertFieldError(await verify(t, customer.identity, code), 'code');
    }
    assertFieldError(await t.post(`${auth}/verify`, { identity: customer.identity }), 'code');
  });

  test('malformed codes do not spend attempts on the live code', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    for (let i = 0; i < 6; i += 1) assertFieldError(await verify(t, customer.identity, '12345'), 'code');
    assert.equal((await verify(t, customer.identity, code)).status, 200);
  });

  test('of 16 concurrent submissions of a valid code exactly one answers 200', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    const replies = await Promise.all(Array.from({ length: 16 }, () => verify(t, customer.identity, code)));
    const statuses = replies.map((reply) => reply.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, statuses.join(','));
    for (const reply of replies.filter((r) => r.status !== 200)) assertChallengeRefused(reply);
  });

  test('resend to an already verified account sends no new code', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    assert.equal((await verify(t, customer.identity, await t.codeFor(customer.identity, 'verification'))).status, 200);
    const resent = await t.post(`${auth}/verification/resend`, { identity: customer.identity });
    assert.equal(resent.status, 202);
    assert.deepEqual(resent.body, { status: 'accepted' });
    assert.deepEqual(await t.deliver(), []);
    const [live] = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM challenges WHERE purpose = 'verification' AND consumed_at IS NULL AND voided_at IS NULL`,
    );
    assert.equal(live?.n, 0);
  });

  test('resend for an unknown identity answers 202 accepted and sends nothing', async () => {
    const t = await harness.start();
    const unknown = await t.post(`${auth}/verification/resend`, { identity: 'nobody@example.com' });
    assert.equal(unknown.status, 202);
    assert.deepEqual(unknown.body, { status: 'accepted' });
    const malformed = await t.post(`${auth}/verification/resend`, { identity: 'not an email' });
    assert.equal(malformed.status, 202);
    assert.deepEqual(await t.deliver(), []);
  });

  test('a password reset code does not verify the identity', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
    const resetCode = await t.codeFor(customer.identity, 'password_reset');
    const verificationCode = await t.codeFor(customer.identity, 'verification');
    assert.notEqual(resetCode, verificationCode, 'two independent codes (equal only with probability 1e-6)');
    assertChallengeRefused(await verify(t, customer.identity, resetCode));
    assert.equal((await verify(t, customer.identity, verificationCode)).status, 200);
  });
});
