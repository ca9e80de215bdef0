import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  auth,
  createHarness,
  stableHeaders,
  withoutRequestId,
  type Reply,
  type TestApp,
} from '../../helpers/harness.js';
import {
  addPasskey,
  allowPasskeys,
  auditRows,
  challengeCookieName,
  cookieOf,
  cookies,
  count,
  loginOptions,
  passkeyLogin,
  registrationOptions,
  sessionCookieName,
  signedInCustomer,
  signInWithPasskey,
} from '../../helpers/passkeys.js';
import { until, waitingOnLocks } from '../../helpers/races.js';
import { SoftAuthenticator } from '../../helpers/webauthn.js';

/** The registration and sign-in ceremonies, with real WebAuthn answers from a software authenticator. */

function assertRefused(reply: Reply) {
  assert.equal(reply.status, 401, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'unauthenticated');
  assert.equal(cookieOf(reply, sessionCookieName), undefined);
}

function loginCounter(t: TestApp, outcome: string): Promise<number> {
  return t.services.metrics.registry
    .getSingleMetric('storefront_login_attempts_total')!
    .get()
    .then((metric) => metric.values.find((value) => value.labels['outcome'] === outcome)?.value ?? 0);
}

/** A customer with one passkey, signed out of nothing (the password session stays). */
async function customerWithPasskey(t: TestApp, { keepsCounter = true } = {}) {
  await allowPasskeys(t);
  const customer = await signedInCustomer(t);
  const authenticator = new SoftAuthenticator('localhost', 'http://localhost', keepsCounter);
  const added = await addPasskey(t, customer, authenticator);
  assert.equal(added.status, 201, JSON.stringify(added.body));
  return { ...customer, authenticator, passkeyId: added.body.id as string };
}

describe('passkeys', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  before(async () => {
    harness = await createHarness();
  });
  after(async () => harness.close());

  test('registration options ask for a resident key for this RP, naming the store and the customer', async () => {
    const t = await harness.start({ env: { STORE_NAME: 'Corner Shop' } });
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    const reply = await t.post(
      `${auth}/passkeys/register/options`,
      undefined,
      cookies({ [sessionCookieName]: customer.session }),
    );
    assert.equal(reply.status, 200);
    assert.equal(reply.body.rp.id, 'localhost');
    assert.equal(reply.body.rp.name, 'Corner Shop');
    assert.equal(reply.body.user.name, customer.identity);
    assert.equal(reply.body.authenticatorSelection.residentKey, 'required');
    assert.equal(reply.body.authenticatorSelection.userVerification, 'preferred');
    assert.equal(reply.body.attestation, 'none');
    const cookie = reply.cookies.find((c) => c.name === challengeCookieName);
    assert.ok(cookie);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.maxAge, 300);
    assert.equal(cookie.sameSite, 'Strict');
    // The cookie holds a handle, never the challenge itself.
    assert.ok(!cookie.value.includes(reply.body.challenge));
    assert.equal(reply.headers['cache-control'], 'no-store');
  });

  test('a passkey is added, listed, and signs the customer in like a login, leaving verified_at as it was', async () => {
    const t = await harness.start();
    const { authenticator, passkeyId, ...customer } = await customerWithPasskey(t);
    const listed = await t.get(`${auth}/passkeys`, cookies({ [sessionCookieName]: customer.session }));
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.passkeys.map((p: { id: string; name: string; last_used_at: null }) => [p.id, p.name, p.last_used_at]),
      [[passkeyId, 'Unknown browser on unknown system', null]],
    );
    const [before] = await t.db.query<{ verified_at: Date | null }>('SELECT verified_at FROM customers WHERE id = $1', [
      customer.id,
    ]);
    assert.ok(before?.verified_at);

    // Signing in from the browser that still holds the password session replaces that session.
    const { options, challenge } = await loginOptions(t);
    assert.deepEqual(options.allowCredentials, []);
    assert.equal(options.userVerification, 'preferred');
    const reply = await passkeyLogin(t, authenticator.assert(options), challenge, {
      [sessionCookieName]: customer.session,
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.auth_type, 'session');
    assert.equal(reply.body.customer.id, customer.id);
    assert.equal(reply.body.customer.identity.verified_at, before.verified_at.toISOString());
    const session = cookieOf(reply, sessionCookieName);
    assert.ok(session && session !== customer.session);
    assert.ok(cookieOf(reply, 'XSRF-TOKEN'));
    assert.equal(cookieOf(reply, challengeCookieName), '');
    assert.equal((await t.get(`${auth}/session`, cookies({ [sessionCookieName]: customer.session }))).status, 401);
    assert.equal((await t.get(`${auth}/session`, cookies({ [sessionCookieName]: session }))).status, 200);

    const used = await t.get(`${auth}/passkeys`, cookies({ [sessionCookieName]: session }));
    assert.equal(used.body.passkeys[0].last_used_at, t.clock.now().toISOString());
    assert.deepEqual(
      (await auditRows(t, 'login.succeeded')).map((row) => row.details['method']),
      ['password', 'passkey'],
    );
    assert.deepEqual(
      (await auditRows(t, 'passkey.added')).map((row) => [row.customer_id, row.details['passkey']]),
      [[customer.id, passkeyId]],
    );
  });

  test('a name given at registration is kept; a blank one is a 422 on name', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    const named = await addPasskey(t, customer, new SoftAuthenticator(), {}, '  Work laptop ');
    assert.equal(named.status, 201);
    assert.equal(named.body.name, 'Work laptop');
    const blank = await addPasskey(t, customer, new SoftAuthenticator(), {}, '   ');
    assert.equal(blank.status, 422);
    assert.deepEqual(Object.keys(blank.body.errors), ['name']);
  });

  test('registration is refused for a wrong origin, a wrong RP ID, a reused challenge and a credential already registered', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    const refusedWith = async (reply: Reply) => {
      assert.equal(reply.status, 422, JSON.stringify(reply.body));
      assert.deepEqual(Object.keys(reply.body.errors), ['credential']);
    };
    await refusedWith(await addPasskey(t, customer, new SoftAuthenticator(), { origin: 'https://evil.example' }));
    await refusedWith(await addPasskey(t, customer, new SoftAuthenticator(), { rpId: 'evil.example' }));

    const authenticator = new SoftAuthenticator();
    const { options, challenge } = await registrationOptions(t, customer.session);
    const credential = authenticator.register(options);
    const headers = cookies({ [sessionCookieName]: customer.session, [challengeCookieName]: challenge });
    const body = { credential, current_password: customer.password };
    assert.equal((await t.post(`${auth}/passkeys/register`, body, headers)).status, 201);
    await refusedWith(await t.post(`${auth}/passkeys/register`, body, headers));
    // The same authenticator again, with fresh options: already registered.
    await refusedWith(await addPasskey(t, customer, authenticator));
    assert.equal(await count(t, 'passkeys'), 1);
  });

  test("another customer's registration challenge does not register a passkey to this one", async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const ada = await signedInCustomer(t);
    const bob = await signedInCustomer(t, { email: 'bob@example.com' });
    const { options, challenge } = await registrationOptions(t, ada.session);
    const credential = new SoftAuthenticator().register(options);
    const reply = await t.post(
      `${auth}/passkeys/register`,
      { credential, current_password: bob.password },
      cookies({ [sessionCookieName]: bob.session, [challengeCookieName]: challenge }),
    );
    assert.equal(reply.status, 422);
    assert.equal(await count(t, 'passkeys'), 0);
  });

  test('sign-in is refused for a wrong origin and for a wrong RP ID', async () => {
    const t = await harness.start();
    const { authenticator } = await customerWithPasskey(t);
    const [failures, successes] = [await loginCounter(t, 'failure'), await loginCounter(t, 'success')];
    assertRefused(await signInWithPasskey(t, authenticator, { origin: 'https://evil.example' }));
    assertRefused(await signInWithPasskey(t, authenticator, { origin: 'http://localhost:8080' }));
    assertRefused(await signInWithPasskey(t, authenticator, { rpId: 'evil.example' }));
    assert.equal((await signInWithPasskey(t, authenticator)).status, 200);
    // Counted with password and code logins, in the login metric.
    assert.equal(await loginCounter(t, 'failure'), failures + 3);
    assert.equal(await loginCounter(t, 'success'), successes + 1);
  });

  test("WEBAUTHN_ORIGINS names the only accepted origins: the service's own is no longer one", async () => {
    const t = await harness.start({ env: { WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGINS: 'https://shop.localhost' } });
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    const authenticator = new SoftAuthenticator('localhost', 'https://shop.localhost');
    assert.equal((await addPasskey(t, customer, authenticator, { origin: 'http://localhost' })).status, 422);
    assert.equal((await addPasskey(t, customer, authenticator)).status, 201);
    assertRefused(await signInWithPasskey(t, authenticator, { origin: 'http://localhost' }));
    assert.equal((await signInWithPasskey(t, authenticator)).status, 200);
  });

  test('a challenge is single use: the same assertion and cookie again is refused', async () => {
    const t = await harness.start();
    // A counter of 0 every time, so the spent challenge alone refuses the replay.
    const { authenticator } = await customerWithPasskey(t, { keepsCounter: false });
    const { options, challenge } = await loginOptions(t);
    const assertion = authenticator.assert(options);
    assert.equal((await passkeyLogin(t, assertion, challenge)).status, 200);
    assertRefused(await passkeyLogin(t, assertion, challenge));
  });

  test('a challenge lives 5 minutes', async () => {
    const t = await harness.start();
    const { authenticator } = await customerWithPasskey(t);
    const fresh = await loginOptions(t);
    t.clock.advance(5 * 60 - 1);
    assert.equal((await passkeyLogin(t, authenticator.assert(fresh.options), fresh.challenge)).status, 200);
    const stale = await loginOptions(t);
    t.clock.advance(5 * 60 + 1);
    assertRefused(await passkeyLogin(t, authenticator.assert(stale.options), stale.challenge));
  });

  test('a challenge is bound to the browser that asked: another browser, no cookie or a forged one is refused', async () => {
    const t = await harness.start();
    const { authenticator } = await customerWithPasskey(t);
    const first = await loginOptions(t);
    const second = await loginOptions(t);
    const assertion = authenticator.assert(first.options);
    assertRefused(await passkeyLogin(t, assertion, second.challenge));
    assertRefused(await passkeyLogin(t, assertion, undefined));
    const [handle] = first.challenge.split('.');
    assertRefused(await passkeyLogin(t, assertion, `${handle}.forged`));
    assertRefused(await passkeyLogin(t, assertion, handle));
    // Its own browser, whose cookie was untouched by those attempts, still signs in.
    assert.equal((await passkeyLogin(t, assertion, first.challenge)).status, 200);
  });

  test('a signature counter that goes backwards is refused and written to the audit trail', async () => {
    const t = await harness.start();
    const { authenticator, passkeyId, id } = await customerWithPasskey(t);
    assert.equal((await signInWithPasskey(t, authenticator, { counter: 10 })).status, 200);
    assertRefused(await signInWithPasskey(t, authenticator, { counter: 7 }));
    assertRefused(await signInWithPasskey(t, authenticator, { counter: 10 }));
    const failed = await auditRows(t, 'login.failed');
    assert.deepEqual(
      failed.map((row) => [row.customer_id, row.details]),
      [
        [id, { method: 'passkey', reason: 'counter_regressed', passkey: passkeyId }],
        [id, { method: 'passkey', reason: 'counter_regressed', passkey: passkeyId }],
      ],
    );
    assert.equal((await signInWithPasskey(t, authenticator, { counter: 11 })).status, 200);
  });

  test('every sign-in failure is the same 401, in body and headers', async () => {
    const t = await harness.start();
    const { authenticator } = await customerWithPasskey(t);
    const stranger = new SoftAuthenticator();
    stranger.userHandle = authenticator.userHandle;
    const used = await loginOptions(t);
    const usedAssertion = authenticator.assert(used.options);
    assert.equal((await passkeyLogin(t, usedAssertion, used.challenge)).status, 200);
    const other = await loginOptions(t);
    const expired = await loginOptions(t);
    const expiredAssertion = authenticator.assert(expired.options);
    const otherAssertion = authenticator.assert((await loginOptions(t)).options);

    const failures = [
      await signInWithPasskey(t, stranger),
      await signInWithPasskey(t, authenticator, { origin: 'https://evil.example' }),
      await signInWithPasskey(t, authenticator, { rpId: 'evil.example' }),
      await signInWithPasskey(t, authenticator, { counter: 1 }),
      await passkeyLogin(t, usedAssertion, used.challenge),
      await passkeyLogin(t, otherAssertion, other.challenge),
      await passkeyLogin(t, usedAssertion, undefined),
    ];
    t.clock.advance(301);
    failures.push(await passkeyLogin(t, expiredAssertion, expired.challenge));
    const [first, ...rest] = failures;
    assertRefused(first!);
    for (const reply of rest) {
      assertRefused(reply);
      assert.deepEqual(withoutRequestId(reply.body), withoutRequestId(first!.body));
      assert.deepEqual(stableHeaders(reply), stableHeaders(first!));
    }
    assert.deepEqual(
      (await auditRows(t, 'login.failed')).map((row) => row.details['reason']),
      [
        'unknown_passkey',
        'verification',
        'verification',
        'counter_regressed',
        'challenge',
        'verification',
        'challenge',
        'challenge',
      ],
    );
  });

  test('two parallel sign-ins with one assertion and cookie open exactly one session', async () => {
    const t = await harness.start();
    // A counter of 0 every time, so only the challenge's single DELETE decides the race.
    const { authenticator, id } = await customerWithPasskey(t, { keepsCounter: false });
    const sessionsBefore = await count(t, 'sessions WHERE customer_id = $1', [id]);
    for (let round = 0; round < 5; round += 1) {
      // A new minute each round: the attempts stay within the login limit per address.
      t.clock.advance(60);
      const { options, challenge } = await loginOptions(t);
      const assertion = authenticator.assert(options);
      const replies = await Promise.all(Array.from({ length: 4 }, () => passkeyLogin(t, assertion, challenge)));
      assert.deepEqual(replies.map((reply) => reply.status).sort(), [200, 401, 401, 401]);
    }
    assert.equal(await count(t, 'sessions WHERE customer_id = $1', [id]), sessionsBefore + 5);
  });

  test('a sign-in meeting an account deletion locks the customer before the passkey, so the two cannot deadlock', async () => {
    const t = await harness.start();
    const { authenticator, id, passkeyId } = await customerWithPasskey(t);
    const { options, challenge } = await loginOptions(t);
    const assertion = authenticator.assert(options);
    // A deletion as the account area makes it: the customer row locked first, then the cascade.
    const deleter = new pg.Client({ connectionString: harness.databaseUrl });
    await deleter.connect();
    const watcher = new pg.Client({ connectionString: harness.databaseUrl });
    await watcher.connect();
    try {
      await deleter.query('BEGIN');
      await deleter.query('SELECT id FROM customers WHERE id = $1 FOR UPDATE', [id]);
      const signingIn = passkeyLogin(t, assertion, challenge);
      await until(async () => (await waitingOnLocks(watcher)) === 1, 'the sign-in waits on the customer');
      // The waiting sign-in holds nothing of the passkey: were it holding the row, the cascade
      // below would wait on it while the sign-in waits on the customer.
      await watcher.query('BEGIN');
      await watcher.query('SELECT 1 FROM passkeys WHERE public_id = $1 FOR UPDATE NOWAIT', [passkeyId]);
      await watcher.query('COMMIT');
      await deleter.query('DELETE FROM customers WHERE id = $1', [id]);
      await deleter.query('COMMIT');
      assertRefused(await signingIn);
    } finally {
      await deleter.end();
      await watcher.end();
    }
  });
});
