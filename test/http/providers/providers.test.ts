import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auditRows } from '../../helpers/audit.js';
import { count, verifiedAt } from '../../helpers/customers.js';
import { auth, registeredCustomer, type TestApp } from '../../helpers/harness.js';
import {
  addTestProvider,
  comeBack,
  cookieHeader,
  customerRow,
  linkRows,
  login,
  provenAndSignedIn,
  sessionCookieName,
  shopHost,
  signedInWith,
  signInWith,
  startAt,
  startCookieName,
  useProviderSuite,
  withSession,
} from '../../helpers/providers.js';
import { hostA, hostB, twoStores } from '../../helpers/stores.js';
import { consentAt } from '../../helpers/openid-provider.js';
import { removeProvider } from '../../../src/providers/configured.js';
import { forStore } from '../../../src/storage/database.js';

/**
 * Signing in with a store's OpenID providers against a real provider (oidc-provider): the five
 * matching cases, the account area's links, two stores sharing one provider client, and the audit trail.
 */

/** A CSRF token genuine for another customer's session, as that customer's page would read it. */
async function otherSessionToken(t: TestApp): Promise<string> {
  const other = await provenAndSignedIn(t, 'eve@example.com');
  const reply = await t.get('/api/v1/csrf-cookie', withSession(other.session));
  return String(reply.headers['x-xsrf-token']);
}

describe('signing in with a provider: the five matching cases', () => {
  const suite = useProviderSuite(async (t, op) => {
    await addTestProvider(t, op);
    await addTestProvider(t, op, { id: 'apple', preset: 'apple', name: 'Sign in with Apple' });
  });
  const begin = async () => (await suite.begin()).t;

  test('the store lists its providers by id and display name, for the buttons', async () => {
    const t = await begin();
    const reply = await t.get(`${auth}/providers`, { host: shopHost });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, {
      providers: [
        { id: 'apple', name: 'Sign in with Apple' },
        { id: 'google', name: 'Google' },
      ],
    });
    await t.close();
  });

  test('2: a verified email no account holds makes a new account, verified now, with no password and the provider’s name', async () => {
    const t = await begin();
    const walk = await signedInWith(t, 'google', 'ada', { returnTo: '/account?tab=1' });
    assert.equal(walk.location, '/account?tab=1');
    const row = await customerRow(t, walk.customer.id);
    assert.equal(row.identity_value, 'ada@example.com');
    assert.equal(row.name, 'Ada Provider');
    assert.equal(row.password_hash, null);
    assert.deepEqual(await verifiedAt(t, walk.customer.id), t.clock.now());
    assert.equal((await login(t, 'ada@example.com', 'analytical engine 1843')).status, 401);
    assert.deepEqual(
      (await linkRows(t)).map((link) => [link.customer_id, link.provider_id, link.subject, link.email]),
      [[walk.customer.id, 'google', 'ada', 'ada@example.com']],
    );
    const registered = await auditRows(t, 'customer.registered');
    assert.deepEqual(
      registered.map((row) => [row.customer_id, row.details]),
      [[walk.customer.id, { method: 'provider', provider: 'google' }]],
    );
    const succeeded = await auditRows(t, 'login.succeeded');
    assert.deepEqual(
      succeeded.map((row) => [row.customer_id, row.details]),
      [[walk.customer.id, { method: 'provider', provider: 'google', match: 'created' }]],
    );
    await t.close();
  });

  test('1: a linked customer signs in again to the same account, by issuer and subject', async () => {
    const t = await begin();
    const first = await signedInWith(t, 'google', 'ada');
    const second = await signedInWith(t, 'google', 'ada');
    assert.equal(second.customer.id, first.customer.id);
    assert.notEqual(second.session, first.session);
    assert.equal(await count(t, 'customers'), 1);
    assert.equal((await linkRows(t)).length, 1);
    const matches = (await auditRows(t, 'login.succeeded')).map((row) => row.details['match']);
    assert.deepEqual(matches, ['created', 'linked']);
    await t.close();
  });

  test('3: a verified email of a proven account links to it, signs in, keeps its sessions and password, and notifies the identity', async () => {
    const t = await begin();
    const customer = await provenAndSignedIn(t, 'ada@example.com');
    await t.deliver();
    const sentBefore = t.outbox.sent.length;
    const walk = await signedInWith(t, 'google', 'ada');
    assert.equal(walk.customer.id, customer.id);
    assert.equal((await t.get(`${auth}/session`, withSession(customer.session))).status, 200);
    assert.equal((await login(t, customer.identity, customer.password)).status, 200);
    assert.deepEqual(
      (await linkRows(t)).map((link) => link.customer_id),
      [customer.id],
    );
    const sent = (await t.deliver(), t.outbox.sent.slice(sentBefore));
    assert.deepEqual(
      sent.filter((message) => message.purpose === 'provider_linked').map((message) => message.to),
      ['ada@example.com'],
    );
    const [succeeded] = await auditRows(t, 'login.succeeded').then((rows) =>
      rows.filter((row) => row.details['method'] === 'provider'),
    );
    assert.deepEqual(succeeded?.details, { method: 'provider', provider: 'google', match: 'linked_proven' });
    assert.deepEqual(
      (await auditRows(t, 'provider.linked')).map((row) => row.details['match']),
      ['linked_proven'],
    );
    await t.close();
  });

  test('4: a verified email of an unproven account is its first proof of control: earlier sessions and the password end, then it links and signs in', async () => {
    const t = await begin();
    const claimant = await registeredCustomer(t, { email: 'ada@example.com' });
    const before = await login(t, claimant.identity, claimant.password);
    assert.equal(before.status, 200, JSON.stringify(before.body));
    const claimantSession = before.cookies.find((cookie) => cookie.name === sessionCookieName)!.value;
    assert.equal(await verifiedAt(t, claimant.id), null);

    const walk = await signedInWith(t, 'google', 'ada');
    assert.equal(walk.customer.id, claimant.id);
    assert.equal((await t.get(`${auth}/session`, withSession(claimantSession))).status, 401);
    assert.equal((await login(t, claimant.identity, claimant.password)).status, 401);
    assert.equal((await customerRow(t, claimant.id)).password_hash, null);
    assert.notEqual(await verifiedAt(t, claimant.id), null);
    assert.equal(await count(t, 'sessions'), 1);
    assert.deepEqual(
      (await linkRows(t)).map((link) => link.customer_id),
      [claimant.id],
    );
    const matches = (await auditRows(t, 'login.succeeded')).map((row) => row.details['match']);
    assert.deepEqual(
      matches.filter((match) => match !== undefined),
      ['first_proof'],
    );
    await t.close();
  });

  test('5: an email the provider asserts unverified, or does not assert, creates and links nothing: ?error=email_unverified', async () => {
    const t = await begin();
    const claimant = await registeredCustomer(t, { email: 'ada@example.com' });
    for (const account of ['mallory', 'silent']) {
      const walk = await signInWith(t, 'google', account, { returnTo: '/account' });
      assert.equal(walk.reply.status, 303);
      assert.equal(walk.location, '/account?error=email_unverified');
      assert.equal(walk.session, undefined);
    }
    assert.equal(await count(t, 'customers'), 1);
    assert.equal(await count(t, 'provider_links'), 0);
    assert.equal(await count(t, 'sessions'), 0);
    assert.equal(await verifiedAt(t, claimant.id), null);
    assert.equal((await login(t, claimant.identity, claimant.password)).status, 200);
    const failed = await auditRows(t, 'login.failed');
    assert.deepEqual(
      failed.map((row) => row.details),
      [1, 2].map(() => ({ method: 'provider', provider: 'google', reason: 'email_unverified' })),
    );
    await t.close();
  });

  test('an email that is not plain ASCII matches no account, though case folding would make one of it (U+212A)', async () => {
    const t = await begin();
    const kim = await provenAndSignedIn(t, 'kim@example.com');
    for (const account of ['kelvin', 'spaced']) {
      const walk = await signInWith(t, 'google', account, { returnTo: '/account' });
      assert.equal(walk.location, '/account?error=email_unverified', account);
      assert.equal(walk.session, undefined);
    }
    assert.deepEqual(await linkRows(t), []);
    assert.equal(await count(t, 'customers'), 1);
    assert.equal((await login(t, kim.identity, kim.password)).status, 200);
    await t.close();
  });

  test('Apple’s form post signs in like any answer, the name taken from its one-time user field', async () => {
    const t = await begin();
    const start = await startAt(t, 'apple', { returnTo: '/welcome' });
    const answer = await consentAt(start.location, 'grace');
    assert.equal(answer.kind, 'form_post');
    answer.fields['user'] = JSON.stringify({ name: { firstName: 'Grace', lastName: 'B. Hopper' } });
    const reply = await comeBack(t, answer, { [startCookieName]: start.cookie });
    assert.equal(reply.status, 303, JSON.stringify(reply.body));
    assert.equal(reply.headers.location, '/welcome');
    assert.ok(reply.cookies.some((cookie) => cookie.name === sessionCookieName));
    const [link] = await linkRows(t);
    assert.deepEqual([link?.provider_id, link?.email], ['apple', 'grace@example.com']);
    assert.equal((await customerRow(t, link!.customer_id)).name, 'Grace B. Hopper');
    await t.close();
  });

  test('signing in ends the session the browser had before (session rotation)', async () => {
    const t = await begin();
    const other = await provenAndSignedIn(t, 'bob@example.com');
    const walk = await signedInWith(t, 'google', 'ada', { session: other.session });
    assert.notEqual(walk.customer.id, other.id);
    assert.equal((await t.get(`${auth}/session`, withSession(other.session))).status, 401);
    await t.close();
  });
});

describe('linked providers in the account area', () => {
  const suite = useProviderSuite((t, op) => addTestProvider(t, op));
  const { op } = suite;
  const begin = async () => (await suite.begin()).t;

  test('a signed-in customer links a provider: 303 back, the link is listed and the identity gets a provider_linked notice', async () => {
    const t = await begin();
    const customer = await provenAndSignedIn(t, 'bob@example.com');
    await t.deliver();
    const walk = await signInWith(t, 'google', 'ada', { link: true, session: customer.session, returnTo: '/account' });
    assert.equal(walk.reply.status, 303);
    assert.equal(walk.location, '/account');
    const listed = await t.get(`${auth}/providers/linked`, withSession(customer.session));
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.links.map((link: Record<string, string>) => [link['provider'], link['name'], link['email']]),
      [['google', 'Google', 'ada@example.com']],
    );
    assert.equal(new Date(listed.body.links[0].linked_at).getTime(), t.clock.now().getTime());
    const notices = (await t.deliver()).filter((message) => message.purpose === 'provider_linked');
    assert.deepEqual(
      notices.map((message) => message.to),
      ['bob@example.com'],
    );
    assert.deepEqual(
      (await auditRows(t, 'provider.linked')).map((row) => [row.customer_id, row.details['match']]),
      [[customer.id, 'signed_in']],
    );
    // The link signs in to bob, though the provider's email is ada's.
    assert.equal((await signedInWith(t, 'google', 'ada')).customer.id, customer.id);
    assert.equal(await count(t, 'customers'), 1);
    await t.close();
  });

  test('a link needs a session and a proven account: the browser goes straight back with ?error=', async () => {
    const t = await begin();
    const anonymous = await startAt(t, 'google', { link: true, returnTo: '/account' });
    assert.equal(anonymous.reply.status, 302);
    assert.equal(anonymous.location, '/account?error=unauthenticated');
    assert.equal(anonymous.cookie, undefined);
    const unproven = await registeredCustomer(t, { email: 'bob@example.com' });
    const reply = await login(t, unproven.identity, unproven.password);
    const session = reply.cookies.find((cookie) => cookie.name === sessionCookieName)!.value;
    const refused = await startAt(t, 'google', { link: true, session, returnTo: '/account' });
    assert.equal(refused.location, '/account?error=identity_unverified');
    assert.equal(refused.cookie, undefined);
    await t.close();
  });

  test('a link needs the session’s CSRF token: a start another site navigates the browser to links nothing', async () => {
    const t = await begin();
    const customer = await provenAndSignedIn(t, 'bob@example.com');
    for (const xsrf of [null, 'forged-token', await otherSessionToken(t)]) {
      const start = await startAt(t, 'google', { link: true, session: customer.session, returnTo: '/account', xsrf });
      assert.equal(start.location, '/account?error=csrf_token_mismatch', String(xsrf));
      assert.equal(start.cookie, undefined);
    }
    await t.close();
  });

  test('a link needs a sign-in of the last 15 minutes: a session alone, older, cannot plant a lasting way in', async () => {
    const t = await begin();
    const customer = await provenAndSignedIn(t, 'bob@example.com');
    t.clock.advance(15 * 60 + 1);
    const stale = await startAt(t, 'google', { link: true, session: customer.session, returnTo: '/account' });
    assert.equal(stale.location, '/account?error=reauthentication_required');
    assert.equal(stale.cookie, undefined);
    // Signing in again opens the window again.
    const again = await login(t, 'bob@example.com', customer.password);
    const session = again.cookies.find((cookie) => cookie.name === sessionCookieName)!.value;
    const fresh = await startAt(t, 'google', { link: true, session, returnTo: '/account' });
    assert.equal(fresh.reply.status, 302);
    assert.notEqual(fresh.cookie, undefined);
    await t.close();
  });

  test('a link whose browser is no longer signed in to the same customer is refused and links nothing', async () => {
    const t = await begin();
    const customer = await provenAndSignedIn(t, 'bob@example.com');
    const start = await startAt(t, 'google', { link: true, session: customer.session, returnTo: '/account' });
    const answer = await consentAt(start.location, 'ada');
    const reply = await comeBack(t, answer, { [startCookieName]: start.cookie });
    assert.equal(reply.headers.location, '/account?error=provider_error');
    assert.equal(await count(t, 'provider_links'), 0);
    assert.deepEqual(
      (await auditRows(t, 'login.failed')).map((row) => row.details['reason']),
      ['session_changed'],
    );
    await t.close();
  });

  test('a provider account linked to another customer stays theirs: ?error=provider_in_use', async () => {
    const t = await begin();
    const owner = await signedInWith(t, 'google', 'ada');
    const other = await provenAndSignedIn(t, 'bob@example.com');
    const walk = await signInWith(t, 'google', 'ada', { link: true, session: other.session, returnTo: '/account' });
    assert.equal(walk.location, '/account?error=provider_in_use');
    assert.deepEqual(
      (await linkRows(t)).map((link) => link.customer_id),
      [owner.customer.id],
    );
    const failed = await auditRows(t, 'login.failed');
    assert.deepEqual(
      failed.map((row) => [row.customer_id, row.details['reason']]),
      [[other.id, 'linked_elsewhere']],
    );
    await t.close();
  });

  test('unlinking answers {status: unlinked} and records provider.unlinked; the provider then no longer opens that account', async () => {
    const t = await begin();
    const customer = await provenAndSignedIn(t, 'bob@example.com');
    await signInWith(t, 'google', 'ada', { link: true, session: customer.session });
    const reply = await t.post(`${auth}/providers/google/unlink`, undefined, withSession(customer.session));
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.deepEqual(reply.body, { status: 'unlinked' });
    assert.deepEqual((await t.get(`${auth}/providers/linked`, withSession(customer.session))).body, { links: [] });
    assert.deepEqual(
      (await auditRows(t, 'provider.unlinked')).map((row) => [row.customer_id, row.details]),
      [[customer.id, { provider: 'google' }]],
    );
    const again = await t.post(`${auth}/providers/google/unlink`, undefined, withSession(customer.session));
    assert.equal(again.status, 404);
    // ada's verified email now makes an account of its own.
    assert.notEqual((await signedInWith(t, 'google', 'ada')).customer.id, customer.id);
    await t.close();
  });

  test('unlinking the last way in (an account the provider made, without a password) is 409 last_sign_in_method', async () => {
    const t = await begin();
    const walk = await signedInWith(t, 'google', 'ada');
    const reply = await t.post(`${auth}/providers/google/unlink`, undefined, withSession(walk.session));
    assert.equal(reply.status, 409, JSON.stringify(reply.body));
    assert.equal(reply.body.code, 'last_sign_in_method');
    assert.equal(await count(t, 'provider_links'), 1);
    assert.equal(await auditRows(t, 'provider.unlinked').then((rows) => rows.length), 0);
    await t.close();
  });

  test('a link to a provider the store no longer offers is no way in: unlinking the last working one is still 409', async () => {
    const t = await begin();
    await addTestProvider(t, op(), { id: 'apple', preset: 'apple' });
    const walk = await signedInWith(t, 'google', 'ada');
    await signInWith(t, 'apple', 'grace', { link: true, session: walk.session });
    assert.equal(await count(t, 'provider_links'), 2);
    assert.equal((await t.post(`${auth}/providers/apple/unlink`, undefined, withSession(walk.session))).status, 200);
    await signInWith(t, 'apple', 'grace', { link: true, session: walk.session });
    assert.equal(await count(t, 'provider_links'), 2);
    await removeProvider(forStore(t.db, 'default'), 'apple');
    const reply = await t.post(`${auth}/providers/google/unlink`, undefined, withSession(walk.session));
    assert.equal(reply.status, 409, JSON.stringify(reply.body));
    assert.equal(reply.body.code, 'last_sign_in_method');
    const listed = await t.get(`${auth}/providers/linked`, withSession(walk.session));
    assert.deepEqual(
      listed.body.links.map((link: { provider: string; name: string | null }) => [link.provider, link.name]),
      // Linked in the same instant of the test's clock: then by provider id.
      [
        ['apple', null],
        ['google', 'Google'],
      ],
    );
    await t.close();
  });

  test('the export lists the links, and deleting the account removes them', async () => {
    const t = await begin();
    const customer = await provenAndSignedIn(t, 'bob@example.com');
    await signInWith(t, 'google', 'ada', { link: true, session: customer.session });
    const exported = await t.get(`${auth}/account/export`, withSession(customer.session));
    assert.equal(exported.status, 200, JSON.stringify(exported.body));
    assert.deepEqual(
      exported.body.provider_links.map((link: Record<string, string>) => [link['provider'], link['email']]),
      [['google', 'ada@example.com']],
    );
    const deleted = await t.post(
      `${auth}/account/delete`,
      { current_password: customer.password },
      withSession(customer.session),
    );
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.equal(await count(t, 'provider_links'), 0);
    await t.close();
  });
});

describe('two stores with the same provider client', () => {
  const { begin } = useProviderSuite(
    async (t, op) => {
      const stores = await twoStores(t);
      await addTestProvider(t, op, {}, stores.a.id);
      await addTestProvider(t, op, {}, stores.b.id);
      return stores;
    },
    { ids: ['google'], hosts: [hostA, hostB] },
  );

  test('a link in store A does not sign in on store B, which makes an account of its own', async () => {
    const { t, a, b } = await begin();
    const inA = await signedInWith(t, 'google', 'ada', { host: hostA });
    const inB = await signedInWith(t, 'google', 'ada', { host: hostB });
    assert.notEqual(inB.customer.id, inA.customer.id);
    const links = await linkRows(t);
    assert.deepEqual(
      links.map((link) => [link.store_id, link.customer_id]).sort(),
      [
        [a.id, inA.customer.id],
        [b.id, inB.customer.id],
      ].sort(),
    );
    assert.equal(
      (await t.get(`${auth}/session`, { host: hostB, ...cookieHeader({ [sessionCookieName]: inA.session }) })).status,
      401,
    );
    await t.close();
  });

  test('store A’s start cookie is refused on store B’s callback, and spends nothing of store A’s', async () => {
    const { t } = await begin();
    const start = await startAt(t, 'google', { host: hostA, returnTo: '/a' });
    const answer = await consentAt(start.location, 'ada');
    const onB = await comeBack(t, answer, { [startCookieName]: start.cookie }, hostB);
    assert.equal(onB.status, 303);
    assert.equal(onB.headers.location, '/?error=provider_error');
    assert.equal(
      onB.cookies.find((cookie) => cookie.name === sessionCookieName),
      undefined,
    );
    assert.equal(await count(t, 'customers'), 0);
    const onA = await comeBack(t, answer, { [startCookieName]: start.cookie }, hostA);
    assert.equal(onA.headers.location, '/a');
    assert.equal(await count(t, 'customers'), 1);
    await t.close();
  });
});
