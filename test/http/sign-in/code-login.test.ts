import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { listAudit } from '../../../src/audit.js';
import { updateStore } from '../../../src/store/store.js';
import {
  api,
  auth,
  useHarness,
  registeredCustomer,
  stableHeaders,
  withoutRequestId,
  type Reply,
  type TestApp,
} from '../../helpers/harness.js';
import { otherThan } from '../../helpers/assertions.js';
import { count, sessionCookie, verifiedAt } from '../../helpers/customers.js';
import { until, waitingOnLocks } from '../../helpers/races.js';
import { defaultStore } from '../../helpers/database.js';

const tenMinutes = 10 * 60;

async function allowCodes(t: TestApp, on = true): Promise<void> {
  const result = await updateStore(t.db, t.clock, { signInWithCode: on });
  assert.ok(result.ok);
  t.services.store.invalidate();
}

function requestCode(t: TestApp, identity: unknown, headers?: Record<string, string>) {
  return t.post(`${auth}/code/request`, { identity }, headers);
}

function codeLogin(t: TestApp, identity: unknown, code: unknown, headers?: Record<string, string>) {
  return t.post(`${auth}/code/login`, { identity, code }, headers);
}

/** A customer (verified unless told otherwise) with a sign-in code in hand. */
async function withSignInCode(t: TestApp, overrides: Record<string, unknown> = {}, { verify = true } = {}) {
  const customer = await registeredCustomer(t, overrides);
  if (verify) {
    const code = await t.codeFor(customer.identity, 'verification');
    assert.equal((await t.post(`${auth}/verify`, { identity: customer.identity, code })).status, 200);
  }
  assert.equal((await requestCode(t, customer.identity)).status, 202);
  const code = await t.codeFor(customer.identity, 'sign_in');
  return { ...customer, code };
}

function cookieOf(reply: Reply, name: string) {
  return reply.cookies.find((c) => c.name === name);
}

function sessionCount(t: TestApp, customerId: string): Promise<number> {
  return count(t, 'sessions WHERE customer_id = $1', [customerId]);
}

describe('signing in with a code', () => {
  const harness = useHarness();

  describe('the store setting', () => {
    test('off by default: both calls answer 404 not_found like a path that does not exist, whatever the body', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      assert.equal((await t.services.store.get()).signInWithCode, false);
      const missing = await t.post(`${auth}/no/such/path`, { identity: customer.identity });
      assert.equal(missing.status, 404);
      for (const reply of [
        await requestCode(t, customer.identity),
        await codeLogin(t, customer.identity, '123456'),
        await t.post(`${auth}/code/request`, {}),
        await t.post(`${auth}/code/login`, { code: 'nope' }),
      ]) {
        assert.equal(reply.status, 404, JSON.stringify(reply.body));
        assert.deepEqual(withoutRequestId(reply.body), withoutRequestId(missing.body));
        assert.equal(reply.headers['cache-control'], 'no-store');
      }
      assert.deepEqual(
        (await t.deliver()).filter((m) => m.purpose === 'sign_in'),
        [],
      );
    });

    test('turned on and off again through the store settings, taking effect for the next request', async () => {
      const t = await harness.start();
      await allowCodes(t);
      assert.equal((await requestCode(t, 'ada@example.com')).status, 202);
      await allowCodes(t, false);
      assert.equal((await requestCode(t, 'ada@example.com')).status, 404);
    });
  });

  describe('asking for a code', () => {
    test('answers 202 accepted alike for an existing and an unknown identity', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await registeredCustomer(t);
      const existing = await requestCode(t, customer.identity);
      const unknown = await requestCode(t, 'nobody@example.com');
      for (const reply of [existing, unknown]) {
        assert.equal(reply.status, 202);
        assert.equal(reply.headers['cache-control'], 'no-store');
      }
      assert.deepEqual(withoutRequestId(existing.body), { status: 'accepted' });
      assert.deepEqual(withoutRequestId(unknown.body), withoutRequestId(existing.body));
      assert.deepEqual(stableHeaders(unknown), stableHeaders(existing));
    });

    test('verified, unverified, unknown and malformed identities get identical answers, and an identical 429 within the minute', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const verified = await registeredCustomer(t);
      const code = await t.codeFor(verified.identity, 'verification');
      assert.equal((await t.post(`${auth}/verify`, { identity: verified.identity, code })).status, 200);
      const unverified = await registeredCustomer(t, { email: 'babbage@example.com' });
      const identities = [verified.identity, unverified.identity, 'nobody@example.com', 'not an email'];
      for (const round of [
        { status: 202, replies: [] as Reply[] },
        { status: 429, replies: [] as Reply[] },
      ]) {
        for (const identity of identities) round.replies.push(await requestCode(t, identity));
        const [first, ...rest] = round.replies;
        assert.equal(first!.status, round.status);
        for (const reply of rest) {
          assert.equal(reply.status, round.status);
          assert.deepEqual(withoutRequestId(reply.body), withoutRequestId(first!.body));
          assert.deepEqual(stableHeaders(reply), stableHeaders(first!));
        }
      }
    });

    test('sends a sign_in code through the outbox only to an account, verified or not, naming the store and no link', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await registeredCustomer(t);
      await t.deliver();
      await requestCode(t, customer.identity);
      await requestCode(t, 'nobody@example.com');
      await requestCode(t, 'not an email');
      const sent = await t.deliver();
      assert.deepEqual(
        sent.map((m) => [m.to, m.purpose, m.channel]),
        [['ada@example.com', 'sign_in', 'email']],
      );
      const message = sent[0]!;
      assert.match(message.content.subject, /^\d{6} is your My Store sign-in code$/);
      assert.match(message.content.text, /Your My Store sign-in code is \d{6}\./);
      assert.match(message.content.text, /expires in 10 minutes/);
      assert.doesNotMatch(message.content.text + message.content.html, /https?:|href=/);
      const [row] = await t.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM challenges WHERE purpose = 'sign_in' AND customer_id = $1",
        [customer.id],
      );
      assert.equal(row!.n, 1);
    });

    test('on a phone store, a differently typed number gets the code by SMS', async () => {
      const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
      await allowCodes(t);
      await registeredCustomer(t, { email: undefined, phone: '+14155550123' });
      await t.deliver();
      assert.equal((await requestCode(t, '+1 (415) 555-0123')).status, 202);
      const sent = await t.deliver();
      assert.deepEqual(
        sent.map((m) => [m.to, m.purpose, m.channel]),
        [['+14155550123', 'sign_in', 'sms']],
      );
      assert.match(sent[0]!.content.text, /^My Store: Your My Store sign-in code is \d{6}\./);
      const code = sent[0]!.content.text.match(/\b\d{6}\b/)![0];
      const reply = await codeLogin(t, '+1 415 555 0123', code);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
    });

    test('answers 422 validation_failed on identity when it is missing, empty or not a string', async () => {
      const t = await harness.start();
      await allowCodes(t);
      for (const body of [{}, { identity: '' }, { identity: 42 }]) {
        const reply = await t.post(`${auth}/code/request`, body);
        assert.equal(reply.status, 422);
        assert.equal(reply.body.code, 'validation_failed');
        assert.ok(reply.body.errors.identity);
      }
    });

    test('limits as forgot: one a minute and five an hour per identity, counted apart from forgot', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await registeredCustomer(t);
      assert.equal((await requestCode(t, customer.identity)).status, 202);
      const second = await requestCode(t, 'ADA@example.com');
      assert.equal(second.status, 429);
      assert.equal(second.body.code, 'rate_limited');
      assert.ok(Number(second.headers['retry-after']) > 0);
      assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
      // The refused request counted too (counters are raised before they are compared): three more fit the hour.
      for (let i = 0; i < 3; i += 1) {
        t.clock.advance(61);
        assert.equal((await requestCode(t, customer.identity)).status, 202);
      }
      t.clock.advance(61);
      assert.equal((await requestCode(t, customer.identity)).status, 429, 'the sixth in an hour');
    });
  });

  describe('signing in', () => {
    test('answers 200 with the customer, sets the session cookie and a fresh XSRF-TOKEN, and the session works', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      const reply = await codeLogin(t, customer.identity, customer.code);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.equal(reply.body.auth_type, 'session');
      assert.equal(reply.body.customer.id, customer.id);
      assert.equal(reply.body.customer.identity.value, 'ada@example.com');
      const session = cookieOf(reply, sessionCookie);
      assert.ok(session, 'the session cookie is set');
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Lax');
      assert.ok(cookieOf(reply, 'XSRF-TOKEN'), 'a fresh XSRF-TOKEN is set');
      const me = await t.get(`${auth}/session`, { cookie: `${sessionCookie}=${session.value}` });
      assert.equal(me.status, 200);
      assert.equal(me.body.customer.id, customer.id);
    });

    test('the code works once', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      assert.equal((await codeLogin(t, customer.identity, customer.code)).status, 200);
      const again = await codeLogin(t, customer.identity, customer.code);
      assert.equal(again.status, 422);
      assert.equal(again.body.code, 'invalid_identity_challenge');
    });

    test('sets verified_at when it was null, and signs in on a store that requires verification', async () => {
      const t = await harness.start({ env: { STORE_VERIFICATION_REQUIRED: 'true' } });
      await allowCodes(t);
      const customer = await withSignInCode(t, {}, { verify: false });
      assert.equal(await verifiedAt(t, customer.id), null);
      const password = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      assert.equal(password.status, 401, 'the password alone does not sign an unverified account in');
      const reply = await codeLogin(t, customer.identity, customer.code);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.customer.identity.verified_at, t.clock.now().toISOString());
      assert.deepEqual(await verifiedAt(t, customer.id), t.clock.now());
    });

    test('keeps an earlier verified_at', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      const before = await verifiedAt(t, customer.id);
      assert.ok(before);
      t.clock.advance(60);
      const reply = await codeLogin(t, customer.identity, customer.code);
      assert.equal(reply.body.customer.identity.verified_at, before.toISOString());
    });

    test('a session the request carried is replaced, not reused', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      const first = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      const old = cookieOf(first, sessionCookie)!.value;
      const reply = await codeLogin(t, customer.identity, customer.code, { cookie: `${sessionCookie}=${old}` });
      assert.equal(reply.status, 200);
      assert.notEqual(cookieOf(reply, sessionCookie)!.value, old);
      assert.equal((await t.get(`${auth}/session`, { cookie: `${sessionCookie}=${old}` })).status, 401);
      assert.equal(await sessionCount(t, customer.id), 1);
    });

    test('is a login for the audit trail (method code) and the login metric; a password login says method password', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      await t.post(`${auth}/login`, { identity: customer.identity, password: 'not the password 1' });
      await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      await codeLogin(t, customer.identity, otherThan(customer.code));
      await codeLogin(t, customer.identity, customer.code);
      await t.services.background.drain();
      const events = (await listAudit(defaultStore(t.db), { limit: 100 }))
        .reverse()
        .filter((entry) => entry.event.startsWith('login.'));
      assert.deepEqual(
        events.map((entry) => [entry.event, entry.customer_id, entry.details]),
        [
          ['login.failed', customer.id, { method: 'password' }],
          ['login.succeeded', customer.id, { method: 'password' }],
          ['login.failed', customer.id, { method: 'code' }],
          ['login.succeeded', customer.id, { method: 'code' }],
        ],
      );
      const metrics = await t.services.metrics.registry.getSingleMetricAsString('storefront_login_attempts_total');
      assert.match(metrics, /storefront_login_attempts_total\{outcome="success",store="default"\} 2/);
      assert.match(metrics, /storefront_login_attempts_total\{outcome="failure",store="default"\} 2/);
    });
  });

  describe('refusals', () => {
    test('a wrong code, an expired code, an unknown identity and a malformed one are one 422 invalid_identity_challenge', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      const wrong = await codeLogin(t, customer.identity, otherThan(customer.code));
      const unknown = await codeLogin(t, 'nobody@example.com', customer.code);
      const malformed = await codeLogin(t, 'not an email', customer.code);
      t.clock.advance(tenMinutes);
      const expired = await codeLogin(t, customer.identity, customer.code);
      for (const reply of [wrong, unknown, malformed, expired]) {
        assert.equal(reply.status, 422, JSON.stringify(reply.body));
        assert.equal(reply.body.code, 'invalid_identity_challenge');
        assert.deepEqual(withoutRequestId(reply.body), withoutRequestId(wrong.body));
        assert.deepEqual(stableHeaders(reply), stableHeaders(wrong));
        assert.equal(cookieOf(reply, sessionCookie), undefined);
      }
      assert.equal(await sessionCount(t, customer.id), 0);
    });

    test('a code of another purpose does not sign in', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await registeredCustomer(t);
      const verification = await t.codeFor(customer.identity, 'verification');
      const reply = await codeLogin(t, customer.identity, verification);
      assert.equal(reply.status, 422);
      assert.equal(reply.body.code, 'invalid_identity_challenge');
    });

    test('five wrong tries end the code: the right one is refused after them', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      for (let i = 0; i < 5; i += 1) {
        assert.equal((await codeLogin(t, customer.identity, otherThan(customer.code))).status, 422);
      }
      assert.equal((await codeLogin(t, customer.identity, customer.code)).status, 422);
    });

    test('four wrong tries leave the fifth to the right code', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      for (let i = 0; i < 4; i += 1) {
        assert.equal((await codeLogin(t, customer.identity, otherThan(customer.code))).status, 422);
      }
      assert.equal((await codeLogin(t, customer.identity, customer.code)).status, 200);
    });

    test('a new code voids the old one', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      t.clock.advance(61);
      assert.equal((await requestCode(t, customer.identity)).status, 202);
      const fresh = await t.codeFor(customer.identity, 'sign_in');
      if (fresh !== customer.code) {
        assert.equal((await codeLogin(t, customer.identity, customer.code)).status, 422, 'the old code is void');
      }
      assert.equal((await codeLogin(t, customer.identity, fresh)).status, 200);
    });

    test('parallel tries with the right code sign in once', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      const replies = await Promise.all(
        Array.from({ length: 6 }, () => codeLogin(t, customer.identity, customer.code)),
      );
      assert.deepEqual(replies.map((reply) => reply.status).sort(), [200, 422, 422, 422, 422, 422]);
      assert.equal(await sessionCount(t, customer.id), 1);
    });

    test('answers 422 validation_failed naming both fields when they are missing or malformed', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const reply = await t.post(`${auth}/code/login`, { identity: '', code: '12345' });
      assert.equal(reply.status, 422);
      assert.equal(reply.body.code, 'validation_failed');
      assert.deepEqual(Object.keys(reply.body.errors).sort(), ['code', 'identity']);
    });

    test('limits as verify and reset: the code counter per address refuses the 31st try in ten minutes', async () => {
      const t = await harness.start();
      await allowCodes(t);
      // Unverified, so no verify call has counted against the address yet.
      const customer = await withSignInCode(t, {}, { verify: false });
      for (let i = 0; i < 30; i += 1) {
        assert.equal((await codeLogin(t, 'nobody@example.com', '000000')).status, 422);
      }
      const limited = await codeLogin(t, customer.identity, customer.code);
      assert.equal(limited.status, 429);
      assert.equal(limited.body.code, 'rate_limited');
      const metrics = await t.services.metrics.registry.getSingleMetricAsString('storefront_login_attempts_total');
      assert.match(metrics, /storefront_login_attempts_total\{outcome="throttled",store="default"\} 1/);
    });
  });

  describe('the credential version', () => {
    test('a code login racing a password change waits for it, then opens a session against the new version', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      // A password change in progress, as a reset makes it: the row locked first, a new credential
      // version and no sessions, not yet committed.
      const changer = new pg.Client({ connectionString: harness.databaseUrl });
      await changer.connect();
      const watcher = new pg.Client({ connectionString: harness.databaseUrl });
      await watcher.connect();
      try {
        await changer.query('BEGIN');
        await changer.query('SELECT id FROM customers WHERE id = $1 FOR UPDATE', [customer.id]);
        await changer.query('UPDATE customers SET credential_version = credential_version + 1 WHERE id = $1', [
          customer.id,
        ]);
        await changer.query('DELETE FROM sessions WHERE customer_id = $1', [customer.id]);
        const signingIn = codeLogin(t, customer.identity, customer.code);
        await until(async () => (await waitingOnLocks(watcher)) === 1, 'the code login waits on the password change');
        await changer.query('COMMIT');
        // Had it read the old version before waiting, its session would be refused after the
        // change and the spent code would answer 422.
        const reply = await signingIn;
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        const cookie = `${sessionCookie}=${cookieOf(reply, sessionCookie)!.value}`;
        assert.equal((await t.get(`${auth}/session`, { cookie })).status, 200);
        assert.equal(await sessionCount(t, customer.id), 1);
      } finally {
        await changer.end();
        await watcher.end();
      }
    });
  });

  describe('CSRF', () => {
    test('a same-origin browser request without a token answers 419 csrf_token_mismatch on both paths, and with one it passes', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const customer = await withSignInCode(t);
      for (const reply of [
        await requestCode(t, customer.identity, { 'sec-fetch-site': 'same-origin' }),
        await codeLogin(t, customer.identity, customer.code, { 'sec-fetch-site': 'same-origin' }),
      ]) {
        assert.equal(reply.status, 419);
        assert.equal(reply.body.code, 'csrf_token_mismatch');
      }
      const bootstrap = await t.get(`${api}/csrf-cookie`);
      const token = cookieOf(bootstrap, 'XSRF-TOKEN')!.value;
      const headers = { 'sec-fetch-site': 'same-origin', cookie: `XSRF-TOKEN=${token}`, 'x-xsrf-token': token };
      const reply = await codeLogin(t, customer.identity, customer.code, headers);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.notEqual(cookieOf(reply, 'XSRF-TOKEN')!.value, token, 'the token is rotated with the session');
    });

    test('a cross-site request is refused with 403 untrusted_origin', async () => {
      const t = await harness.start();
      await allowCodes(t);
      const reply = await requestCode(t, 'ada@example.com', {
        'sec-fetch-site': 'cross-site',
        origin: 'https://evil.example',
      });
      assert.equal(reply.status, 403);
      assert.equal(reply.body.code, 'untrusted_origin');
    });
  });

  test('answers 503 store_unavailable while the store is paused', async () => {
    const t = await harness.start();
    await allowCodes(t);
    await updateStore(t.db, t.clock, { status: 'paused' });
    t.services.store.invalidate();
    const reply = await requestCode(t, 'ada@example.com');
    assert.equal(reply.status, 503);
    assert.equal(reply.body.code, 'store_unavailable');
  });
});
