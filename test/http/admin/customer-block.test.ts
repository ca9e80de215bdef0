import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore } from '../../../src/store/store.js';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';
import { auditRows } from '../../helpers/audit.js';
import { count, loginFrom, signedIn, withSession, works } from '../../helpers/customers.js';
import { auth, registeredCustomer, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { find, scrape, total } from '../../helpers/metrics.js';
import { addPasskey, allowPasskeys, signedInCustomer, signInWithPasskey } from '../../helpers/passkeys.js';
import { perDescribe } from '../../helpers/per-describe.js';
import {
  addTestProvider,
  linkRows,
  login as providerLogin,
  provenAndSignedIn,
  signedInWith,
  signInWith,
  startProvider,
  withSession as providerSession,
} from '../../helpers/providers.js';
import { heldHasher } from '../../helpers/races.js';
import { refusalShape } from '../../helpers/stores.js';
import { SoftAuthenticator } from '../../helpers/webauthn.js';

/**
 * A block by the platform's staff, through the admin API: the customer's sessions end at once, and
 * while it holds no sign-in opens one, whatever the way in. A right credential answers `403
 * account_blocked`; a wrong one answers as any wrong one; codes are not sent.
 */

const adminToken = 'admin-token-EEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEE';
const customers = '/admin/v1/stores/default/customers';
const sessionCookieName = 'storefront_session';

async function start(harness: ReturnType<typeof useHarness>, options: { clockAt?: number } = {}) {
  const t = await harness.start({ env: { ADMIN_TOKENS: adminToken }, ...options });
  const call = adminCaller(await adminAppOf(t), adminToken);
  /** Blocks the customer, which must answer 200: the customer as staff see them. */
  const block = async (id: string, reason = 'chargeback fraud', until?: string) => {
    const reply = await call('POST', `${customers}/${id}/block`, { reason, ...(until === undefined ? {} : { until }) });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    return reply.body;
  };
  const unblock = async (id: string) => {
    const reply = await call('POST', `${customers}/${id}/unblock`);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    return reply.body;
  };
  return { t, call, block, unblock };
}

function assertProblem(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/);
  assert.equal(reply.body.code, code);
}

function assertNoSessionCookie(reply: Reply): void {
  assert.equal(
    reply.cookies.find((cookie) => cookie.name === sessionCookieName),
    undefined,
    'no session cookie is set',
  );
}

/** An hour after the test clock's now, as the admin API takes it. */
function inAnHour(t: TestApp): string {
  return new Date(t.clock.now().getTime() + 3_600_000).toISOString();
}

function login(t: TestApp, identity: string, password: string): Promise<Reply> {
  return t.post(`${auth}/login`, { identity, password });
}

async function allowCodes(t: TestApp): Promise<void> {
  const result = await updateStore(t.db, t.clock, { signInWithCode: true });
  assert.ok(result.ok);
  t.services.store.invalidate();
}

/** Messages to `identity` queued so far (sent ones keep their row). */
function messagesTo(t: TestApp, identity: string): Promise<number> {
  return count(t, 'outbox WHERE recipient = $1', [identity]);
}

describe("a block by the platform's staff", () => {
  const harness = useHarness();

  test('ends the live sessions at once, and the answer shows the block', async () => {
    const { t, block } = await start(harness);
    const customer = await signedIn(t);
    const other = await signedIn(t, { email: 'grace@example.com', name: 'Grace Hopper' });
    assert.equal(await works(t, customer.session), true);

    const blocked = await block(customer.id, 'chargeback fraud');
    assert.equal(blocked.id, customer.id);
    assert.equal(blocked.status, 'blocked');
    assert.deepEqual(blocked.block, {
      reason: 'chargeback fraud',
      blocked_at: t.clock.now().toISOString(),
      until: null,
    });
    assert.equal(blocked.session_count, 0);
    assertProblem(await t.get(`${auth}/session`, withSession(customer.session)), 401, 'unauthenticated');
    assert.equal(await count(t, 'sessions WHERE customer_id = $1', [customer.id]), 0);
    // Another customer's session is left alone.
    assert.equal(await works(t, other.session), true);

    const until = inAnHour(t);
    const again = await block(customer.id, 'second thoughts', until);
    assert.deepEqual(again.block, { reason: 'second thoughts', blocked_at: t.clock.now().toISOString(), until });
  });

  test('password: the right one answers 403 account_blocked, a wrong one 401 as for no such account; no session either way', async () => {
    const { t, block } = await start(harness);
    const customer = await registeredCustomer(t);
    await block(customer.id);

    const right = await login(t, customer.identity, customer.password);
    assertProblem(right, 403, 'account_blocked');
    assert.equal(right.body.until, undefined, 'a block without an end has no until');
    assertNoSessionCookie(right);

    const wrong = await login(t, customer.identity, 'not her password 1');
    const unknown = await login(t, 'nobody@example.com', 'not her password 1');
    assertProblem(wrong, 401, 'unauthenticated');
    assert.deepEqual(refusalShape(wrong), refusalShape(unknown));
    assertNoSessionCookie(wrong);
    assert.equal(await count(t, 'sessions'), 0);

    const until = inAnHour(t);
    await block(customer.id, 'until the chargeback is settled', until);
    const withEnd = await login(t, customer.identity, customer.password);
    assertProblem(withEnd, 403, 'account_blocked');
    assert.equal(withEnd.body.until, until);
    assertNoSessionCookie(withEnd);
    assert.equal(await count(t, 'sessions'), 0);

    const failed = await auditRows(t, 'login.failed');
    assert.deepEqual(
      failed.map((row) => [row.customer_id, row.details['reason'] ?? null]),
      [
        [customer.id, 'blocked'],
        [customer.id, null],
        [null, null],
        [customer.id, 'blocked'],
      ],
    );
    assert.equal((await auditRows(t, 'login.succeeded')).length, 0);
  });

  test('code: a code sent before the block answers 403; code requests and forgot answer 202 and send nothing', async () => {
    const { t, block } = await start(harness);
    await allowCodes(t);
    const customer = await registeredCustomer(t);
    const verification = await t.codeFor(customer.identity, 'verification');
    assert.equal((await t.post(`${auth}/verify`, { identity: customer.identity, code: verification })).status, 200);
    assert.equal((await t.post(`${auth}/code/request`, { identity: customer.identity })).status, 202);
    const code = await t.codeFor(customer.identity, 'sign_in');

    await block(customer.id);
    // A wrong code answers as any wrong code, and leaves the right one live.
    const wrongCode = code === '000000' ? '000001' : '000000';
    const wrong = await t.post(`${auth}/code/login`, { identity: customer.identity, code: wrongCode });
    assertProblem(wrong, 422, 'invalid_identity_challenge');
    assertNoSessionCookie(wrong);
    const right = await t.post(`${auth}/code/login`, { identity: customer.identity, code });
    assertProblem(right, 403, 'account_blocked');
    assertNoSessionCookie(right);
    assert.equal(await count(t, 'sessions'), 0);

    // A new minute, past the limit of one message a minute per identity.
    t.clock.advance(61);
    const queued = await messagesTo(t, customer.identity);
    const requested = await t.post(`${auth}/code/request`, { identity: customer.identity });
    assert.equal(requested.status, 202, JSON.stringify(requested.body));
    assert.equal(requested.body.status, 'accepted');
    assert.deepEqual(await t.deliver(), []);
    assert.equal(await messagesTo(t, customer.identity), queued, 'no sign-in code was queued');

    t.clock.advance(61);
    const forgot = await t.post(`${auth}/password/forgot`, { identity: customer.identity });
    assert.equal(forgot.status, 202, JSON.stringify(forgot.body));
    assert.deepEqual(await t.deliver(), []);
    assert.equal(await messagesTo(t, customer.identity), queued, 'no reset code was queued');

    const failed = await auditRows(t, 'login.failed');
    assert.deepEqual(
      failed.map((row) => [row.details['method'], row.details['reason'] ?? null]),
      [
        ['code', null],
        ['code', 'blocked'],
      ],
    );
  });

  test('resend: an unverified blocked account answers 202 and is sent nothing', async () => {
    const { t, block } = await start(harness);
    const customer = await registeredCustomer(t);
    await t.deliver();
    await block(customer.id);
    t.clock.advance(61);
    const queued = await messagesTo(t, customer.identity);
    const resent = await t.post(`${auth}/verification/resend`, { identity: customer.identity });
    assert.equal(resent.status, 202, JSON.stringify(resent.body));
    assert.deepEqual(await t.deliver(), []);
    assert.equal(await messagesTo(t, customer.identity), queued);
  });

  test('passkey: a verified assertion of a passkey added before the block answers 403, a bad one 401; no session', async () => {
    const { t, block } = await start(harness);
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    const authenticator = new SoftAuthenticator();
    const added = await addPasskey(t, customer, authenticator);
    assert.equal(added.status, 201, JSON.stringify(added.body));

    const until = inAnHour(t);
    await block(customer.id, 'account takeover', until);
    assert.equal(await works(t, customer.session), false);

    const bad = await signInWithPasskey(t, authenticator, { origin: 'https://evil.example' });
    assertProblem(bad, 401, 'unauthenticated');
    assertNoSessionCookie(bad);
    const right = await signInWithPasskey(t, authenticator);
    assertProblem(right, 403, 'account_blocked');
    assert.equal(right.body.until, until);
    assertNoSessionCookie(right);
    assert.equal(await count(t, 'sessions'), 0);

    const failed = await auditRows(t, 'login.failed');
    assert.deepEqual(
      failed
        .filter((row) => row.details['reason'] === 'blocked')
        .map((row) => [row.customer_id, row.details['method']]),
      [[customer.id, 'passkey']],
    );
  });

  test('unblock: the right password signs in again', async () => {
    const { t, block, unblock } = await start(harness);
    const customer = await registeredCustomer(t);
    await block(customer.id);
    assertProblem(await login(t, customer.identity, customer.password), 403, 'account_blocked');
    const unblocked = await unblock(customer.id);
    assert.equal(unblocked.status, 'unverified');
    assert.equal(unblocked.block, null);
    const reply = await login(t, customer.identity, customer.password);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const session = reply.cookies.find((cookie) => cookie.name === sessionCookieName)?.value;
    assert.ok(session);
    assert.equal(await works(t, session), true);
    // Unblocking one not blocked leaves them as they are.
    assert.equal((await unblock(customer.id)).status, 'unverified');
  });

  test('a block whose end has passed no longer blocks, without an unblock', async () => {
    const { t, call, block } = await start(harness);
    const customer = await registeredCustomer(t);
    const until = inAnHour(t);
    await block(customer.id, 'cooling off', until);
    t.clock.advance(30 * 60);
    const during = await login(t, customer.identity, customer.password);
    assertProblem(during, 403, 'account_blocked');
    assert.equal(during.body.until, until);

    t.clock.advance(30 * 60 + 1);
    const read = await call('GET', `${customers}/${customer.id}`);
    assert.equal(read.body.status, 'unverified');
    assert.equal(read.body.block, null);
    const after = await login(t, customer.identity, customer.password);
    assert.equal(after.status, 200, JSON.stringify(after.body));
    const session = after.cookies.find((cookie) => cookie.name === sessionCookieName)?.value;
    assert.ok(session);
    assert.equal(await works(t, session), true);
  });

  test('an end that is not in the future is refused, and nothing is blocked', async () => {
    const { t, call } = await start(harness);
    const customer = await registeredCustomer(t);
    const past = new Date(t.clock.now().getTime() - 1000).toISOString();
    const refused = await call('POST', `${customers}/${customer.id}/block`, { reason: 'x', until: past });
    assertProblem(refused, 422, 'validation_failed');
    assert.equal((await login(t, customer.identity, customer.password)).status, 200);
  });

  test('logins that checked the right password while the block ran keep no live session once it has answered', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken }, overrides: { hasher } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    const customer = await registeredCustomer(t);

    // Each login has read the account (not yet blocked) and waits in its password check.
    hasher.hold();
    const logins = Array.from({ length: 3 }, (_, i) =>
      loginFrom(t, `10.90.0.${i + 1}`, customer.identity, customer.password),
    );
    await hasher.arrived(3);
    const blocked = await call('POST', `${customers}/${customer.id}/block`, { reason: 'chargeback fraud' });
    assert.equal(blocked.status, 200, JSON.stringify(blocked.body));
    hasher.release();

    for (const reply of await Promise.all(logins)) {
      assert.notEqual(reply.status, 200, 'a login racing the block succeeded');
      if (reply.cookie !== undefined) assert.equal(await works(t, reply.cookie), false, 'a session outlived the block');
    }
    assert.equal(await count(t, 'sessions'), 0);
    assert.equal((await auditRows(t, 'login.succeeded')).length, 0);
  });

  test('a blocked sign-in is counted as outcome="blocked" in storefront_login_attempts_total', async () => {
    const { t, block } = await start(harness);
    const customer = await registeredCustomer(t);
    await block(customer.id);
    assertProblem(await login(t, customer.identity, customer.password), 403, 'account_blocked');
    assertProblem(await login(t, customer.identity, 'not her password 1'), 401, 'unauthenticated');
    const samples = await scrape(t);
    assert.equal(total(samples, 'storefront_login_attempts_total', { outcome: 'blocked' }), 1);
    assert.equal(total(samples, 'storefront_login_attempts_total', { outcome: 'failure' }), 1);
    assert.deepEqual(
      find(samples, 'storefront_login_attempts_total', { outcome: 'success' }).map((s) => s.value),
      [],
    );
  });
});

describe("a block by the platform's staff and a provider's sign-in", () => {
  const harness = useHarness();
  const op = perDescribe(
    () => startProvider(),
    (provider) => provider.close(),
    'the provider',
  );

  test('a blocked account is sent back with ?error=account_blocked, no session, and nothing new linked', async () => {
    // The provider signs with real time, so the service's clock starts there.
    const { t, block } = await start(harness, { clockAt: Date.now() });
    await addTestProvider(t, op());
    const linked = await signedInWith(t, 'google', 'ada');
    const proven = await provenAndSignedIn(t, 'grace@example.com');
    assert.deepEqual(
      (await linkRows(t)).map((link) => [link.customer_id, link.subject]),
      [[linked.customer.id, 'ada']],
    );

    await block(linked.customer.id);
    await block(proven.id);
    assert.equal((await t.get(`${auth}/session`, providerSession(linked.session))).status, 401);
    assert.equal((await t.get(`${auth}/session`, providerSession(proven.session))).status, 401);

    // The linked account, and a proven one whose verified email would otherwise be linked now.
    for (const account of ['ada', 'grace']) {
      const walk = await signInWith(t, 'google', account, { returnTo: '/account' });
      assert.equal(walk.reply.status, 303, JSON.stringify(walk.reply.body));
      assert.equal(walk.location, '/account?error=account_blocked', account);
      assert.equal(walk.session, undefined, account);
    }
    assert.deepEqual(
      (await linkRows(t)).map((link) => [link.customer_id, link.subject]),
      [[linked.customer.id, 'ada']],
    );
    assert.equal(await count(t, 'sessions'), 0);
    assert.equal(await count(t, 'customers'), 2);
    assertProblem(await providerLogin(t, proven.identity, proven.password), 403, 'account_blocked');

    const failed = await auditRows(t, 'login.failed');
    assert.deepEqual(
      failed.map((row) => [row.customer_id, row.details['method'], row.details['reason']]),
      [
        [linked.customer.id, 'provider', 'blocked'],
        [proven.id, 'provider', 'blocked'],
        [proven.id, 'password', 'blocked'],
      ],
    );
    const samples = await scrape(t);
    assert.equal(total(samples, 'storefront_login_attempts_total', { outcome: 'blocked' }), 3);
  });
});
