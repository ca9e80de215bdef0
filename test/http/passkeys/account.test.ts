import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runAdminCommand, type AdminCommand } from '../../../src/cli/commands.js';
import { parseCommand } from '../../../src/cli/arguments.js';
import { prune } from '../../../src/janitor.js';
import { defaultRetention, loadConfig } from '../../../src/config.js';
import { updateStore } from '../../../src/store/store.js';
import { auth, createHarness, type TestApp } from '../../helpers/harness.js';
import {
  addPasskey,
  allowPasskeys,
  auditRows,
  cookies,
  count,
  loginOptions,
  passkeyLogin,
  sessionCookieName,
  signedInCustomer,
  signInWithPasskey,
} from '../../helpers/passkeys.js';
import { SoftAuthenticator } from '../../helpers/webauthn.js';

/** Passkeys in the account area and around it: the store setting, removal, deletion, resets, limits, the command line. */

async function customerWithPasskey(t: TestApp, overrides: Record<string, unknown> = {}) {
  await allowPasskeys(t);
  const customer = await signedInCustomer(t, overrides);
  const authenticator = new SoftAuthenticator();
  const added = await addPasskey(t, customer, authenticator);
  assert.equal(added.status, 201, JSON.stringify(added.body));
  return { ...customer, authenticator, passkeyId: added.body.id as string };
}

const session = (value: string) => cookies({ [sessionCookieName]: value });

describe('passkeys in the account', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  before(async () => {
    harness = await createHarness();
  });
  after(async () => harness.close());

  test('with the store setting off (the default) every passkey call answers 404 not_found, signed in or not', async () => {
    const t = await harness.start();
    const customer = await customerWithPasskey(t);
    await allowPasskeys(t, false);
    assert.equal((await t.services.store.get()).passkeys, false);
    const missing = await t.post(`${auth}/no/such/path`);
    const calls = [
      await t.post(`${auth}/passkeys/register/options`, undefined, session(customer.session)),
      await t.post(`${auth}/passkeys/register`, { credential: {} }, session(customer.session)),
      await t.get(`${auth}/passkeys`, session(customer.session)),
      await t.post(`${auth}/passkeys/${customer.passkeyId}/delete`, undefined, session(customer.session)),
      await t.post(`${auth}/passkeys/login/options`),
      await t.post(`${auth}/passkeys/login`, { credential: 'nope' }),
      await t.get(`${auth}/passkeys`),
    ];
    for (const reply of calls) {
      assert.equal(reply.status, 404, JSON.stringify(reply.body));
      assert.equal(reply.body.code, 'not_found');
      assert.equal(reply.body.detail, missing.body.detail);
    }
    assert.equal(await count(t, 'passkeys'), 1);
  });

  test('the account-area calls need a session', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    for (const reply of [
      await t.post(`${auth}/passkeys/register/options`),
      await t.post(`${auth}/passkeys/register`, {
        credential: new SoftAuthenticator().register({
          challenge: 'x',
          user: { id: 'eA', name: 'x', displayName: 'x' },
        } as never),
      }),
      await t.get(`${auth}/passkeys`),
      await t.post(`${auth}/passkeys/00000000-0000-4000-8000-000000000000/delete`),
    ]) {
      assert.equal(reply.status, 401, JSON.stringify(reply.body));
    }
  });

  test('adding a passkey tells the identity at once, without the names the customer chose and with no link', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const ada = await signedInCustomer(t);
    await t.deliver();
    const added = await addPasskey(t, ada, new SoftAuthenticator(), {}, 'Work laptop');
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const notices = (await t.deliver()).filter((m) => m.purpose === 'passkey_added');
    assert.equal(notices.length, 1, 'one notice');
    const [notice] = notices;
    assert.equal(notice!.to, ada.identity);
    assert.match(notice!.content.text, /A passkey was just added to your My Store account/);
    for (const part of [notice!.content.subject, notice!.content.text, notice!.content.html]) {
      assert.doesNotMatch(part, /Work laptop|Ada|Lovelace/, 'neither the passkey nor the customer is named');
    }
    assert.match(notice!.content.text, /remove it in your account area and reset your password/);
    assert.doesNotMatch(notice!.content.text + notice!.content.html, /https?:\/\//);
    const refused = await addPasskey(t, ada, new SoftAuthenticator(), { origin: 'https://evil.example' });
    assert.equal(refused.status, 422, 'a wrong origin is refused');
    assert.equal(
      (await t.deliver()).filter((m) => m.purpose === 'passkey_added').length,
      0,
      'a refused passkey is not announced',
    );
  });

  test("a removed passkey no longer signs in; an id not among the caller's passkeys is 404", async () => {
    const t = await harness.start();
    const ada = await customerWithPasskey(t);
    const bob = await customerWithPasskey(t, { email: 'bob@example.com' });
    for (const id of [bob.passkeyId, 'not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      const reply = await t.post(`${auth}/passkeys/${id}/delete`, undefined, session(ada.session));
      assert.equal(reply.status, 404, id);
    }
    const removed = await t.post(`${auth}/passkeys/${ada.passkeyId}/delete`, undefined, session(ada.session));
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, { status: 'deleted' });
    assert.equal(
      (await t.post(`${auth}/passkeys/${ada.passkeyId}/delete`, undefined, session(ada.session))).status,
      404,
    );
    assert.equal((await signInWithPasskey(t, ada.authenticator)).status, 401);
    assert.equal((await signInWithPasskey(t, bob.authenticator)).status, 200);
    assert.deepEqual((await t.get(`${auth}/passkeys`, session(ada.session))).body, { passkeys: [] });
    assert.deepEqual(
      (await auditRows(t, 'passkey.removed')).map((row) => [row.customer_id, row.details]),
      [[ada.id, { passkey: ada.passkeyId, by: 'customer' }]],
    );
  });

  test('the export lists the passkeys, and deleting the account removes them', async () => {
    const t = await harness.start();
    const customer = await customerWithPasskey(t);
    const exported = await t.get(`${auth}/account/export`, session(customer.session));
    assert.equal(exported.status, 200);
    assert.deepEqual(
      exported.body.passkeys.map((p: Record<string, unknown>) => Object.keys(p).sort()),
      [['created_at', 'id', 'last_used_at', 'name']],
    );
    assert.equal(exported.body.passkeys[0].id, customer.passkeyId);
    await loginOptions(t);
    const deleted = await t.post(
      `${auth}/account/delete`,
      { current_password: customer.password },
      session(customer.session),
    );
    assert.equal(deleted.status, 200);
    assert.equal(await count(t, 'passkeys'), 0);
    assert.equal(await count(t, 'passkey_challenges WHERE customer_id IS NOT NULL'), 0);
    assert.equal((await signInWithPasskey(t, customer.authenticator)).status, 401);
  });

  test('a password reset and a password change keep the passkeys', async () => {
    const t = await harness.start();
    const customer = await customerWithPasskey(t);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
    const code = await t.codeFor(customer.identity, 'password_reset');
    const reset = await t.post(`${auth}/password/reset`, {
      identity: customer.identity,
      code,
      password: 'difference engine 1822',
      password_confirmation: 'difference engine 1822',
    });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    const signedIn = await signInWithPasskey(t, customer.authenticator);
    assert.equal(signedIn.status, 200);
    const current = signedIn.cookies.find((c) => c.name === sessionCookieName)!.value;
    const changed = await t.post(
      `${auth}/password/change`,
      {
        current_password: 'difference engine 1822',
        password: 'jacquard loom 1804',
        password_confirmation: 'jacquard loom 1804',
      },
      session(current),
    );
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal((await signInWithPasskey(t, customer.authenticator)).status, 200);
    assert.equal(await count(t, 'passkeys'), 1);
  });

  test('sign-in attempts count against the login limit per address', async () => {
    const t = await harness.start();
    const customer = await customerWithPasskey(t);
    // The password login that made the session was the first of this minute's 20.
    for (let attempt = 0; attempt < 19; attempt += 1) {
      const stale = customer.authenticator.assert({ challenge: 'AAAA' });
      assert.equal((await passkeyLogin(t, stale, undefined)).status, 401);
    }
    const limited = await signInWithPasskey(t, customer.authenticator);
    assert.equal(limited.status, 429, JSON.stringify(limited.body));
    assert.equal(limited.body.code, 'rate_limited');
    t.clock.advance(61);
    assert.equal((await signInWithPasskey(t, customer.authenticator)).status, 200);
  });

  test('the CSRF rules apply: a foreign origin is 403, a browser without the token 419', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const foreign = await t.post(`${auth}/passkeys/login/options`, undefined, { origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.code, 'untrusted_origin');
    const tokenless = await t.post(`${auth}/passkeys/login/options`, undefined, { 'sec-fetch-site': 'same-origin' });
    assert.equal(tokenless.status, 419);
    const csrf = await t.get('/api/v1/csrf-cookie');
    const token = csrf.cookies.find((c) => c.name === 'XSRF-TOKEN')!.value;
    const browser = await t.post(`${auth}/passkeys/login/options`, undefined, {
      'sec-fetch-site': 'same-origin',
      'x-xsrf-token': token,
      cookie: `XSRF-TOKEN=${token}`,
    });
    assert.equal(browser.status, 200);
  });

  test('a paused store answers 503 store_unavailable on every passkey call, before anything else', async () => {
    const t = await harness.start();
    const customer = await customerWithPasskey(t);
    assert.ok((await updateStore(t.db, t.clock, { status: 'paused' })).ok);
    t.services.store.invalidate();
    for (const reply of [
      await t.post(`${auth}/passkeys/login/options`),
      await t.post(`${auth}/passkeys/login`, { credential: {} }),
      await t.get(`${auth}/passkeys`, session(customer.session)),
      await t.post(`${auth}/passkeys/register/options`, undefined, session(customer.session)),
    ]) {
      assert.equal(reply.status, 503, JSON.stringify(reply.body));
      assert.equal(reply.body.code, 'store_unavailable');
    }
    assert.equal(await count(t, 'passkey_challenges'), 0);
  });

  test('the janitor deletes expired challenges and keeps live ones', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    await loginOptions(t);
    t.clock.advance(301);
    const live = await loginOptions(t);
    const removed = await prune({ db: t.db, clock: t.clock, retention: defaultRetention });
    assert.equal(removed.passkey_challenges, 1);
    assert.equal(await count(t, 'passkey_challenges'), 1);
    assert.ok(live.challenge);
  });

  test("the command line turns passkeys on, lists a customer's passkeys and removes one (audited)", async () => {
    const t = await harness.start();
    const customer = await customerWithPasskey(t);
    const deps = { db: t.db, clock: t.clock, config: loadConfig({ DATA_DIR: '/nonexistent' }) };
    const set = parseCommand(['store', 'set', '--passkeys', 'false']);
    assert.notEqual(set, 'serve');
    const off = await runAdminCommand(deps, set as AdminCommand);
    assert.equal((off.output as { settings: Record<string, boolean> }).settings['auth.passkeys'], false);
    const list = parseCommand(['customer', 'passkeys', customer.identity]);
    const listed = await runAdminCommand(deps, list as AdminCommand);
    assert.deepEqual(
      (listed.output as Array<{ id: string }>).map((p) => p.id),
      [customer.passkeyId],
    );
    const remove = parseCommand(['customer', 'remove-passkey', customer.identity, customer.passkeyId]);
    const removed = await runAdminCommand(deps, remove as AdminCommand);
    assert.deepEqual(removed, { ok: true, output: { id: customer.passkeyId, status: 'deleted' } });
    assert.equal((await runAdminCommand(deps, remove as AdminCommand)).ok, false);
    assert.equal(await count(t, 'passkeys'), 0);
    assert.deepEqual(
      (await auditRows(t, 'passkey.removed')).map((row) => row.details['by']),
      ['operator'],
    );
    assert.throws(() => parseCommand(['customer', 'remove-passkey', customer.identity]));
    assert.throws(() => parseCommand(['customer', 'passkeys', customer.identity, 'extra']));
  });
});
