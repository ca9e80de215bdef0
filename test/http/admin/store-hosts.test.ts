import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';
import { auth, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { challengeCookieName, cookieOf, cookies } from '../../helpers/passkeys.js';
import { registerIn, signedInIn, storeSide, verifyIn, type StoreSide } from '../../helpers/stores.js';
import { SoftAuthenticator } from '../../helpers/webauthn.js';

/**
 * What a store's hosts decide beyond where it answers: the relying party its passkeys are bound
 * to, which hosts never move, and the parent domain its cookies are set for, which never reaches
 * another store's host.
 */

const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const stores = '/admin/v1/stores';
// The deployment's own session cookie, host-only outside production.
const sessionCookie = 'storefront_session';

async function startAdmin(harness: ReturnType<typeof useHarness>) {
  const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
  return { t, call: adminCaller(await adminAppOf(t), adminToken) };
}

type Call = Awaited<ReturnType<typeof startAdmin>>['call'];

/** A store made through the admin API with passkeys on, and a side on its first host. */
async function passkeyStore(t: TestApp, call: Call, slug: string, hosts: string[], more: Record<string, unknown> = {}) {
  const made = await call('POST', stores, { slug, name: slug, hosts, settings: { 'auth.passkeys': true }, ...more });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  return { store: made.body, side: storeSide(t, made.body.id, slug, hosts[0]!) };
}

/** A proven customer of the side's store with a passkey made by the authenticator. */
async function customerWithPasskey(side: StoreSide, authenticator: SoftAuthenticator) {
  const customer = await registerIn(side);
  await verifyIn(side, customer.identity);
  const { session } = await signedInIn(side, customer.identity, customer.password);
  const options = await side.post(
    `${auth}/passkeys/register/options`,
    undefined,
    cookies({ [sessionCookie]: session }),
  );
  assert.equal(options.status, 200, JSON.stringify(options.body));
  const added = await side.post(
    `${auth}/passkeys/register`,
    { credential: authenticator.register(options.body), current_password: customer.password },
    cookies({ [sessionCookie]: session, [challengeCookieName]: cookieOf(options, challengeCookieName) }),
  );
  assert.equal(added.status, 201, JSON.stringify(added.body));
  return customer;
}

async function passkeySignIn(side: StoreSide, authenticator: SoftAuthenticator): Promise<Reply> {
  const options = await side.post(`${auth}/passkeys/login/options`);
  assert.equal(options.status, 200, JSON.stringify(options.body));
  return side.post(
    `${auth}/passkeys/login`,
    { credential: authenticator.assert(options.body) },
    cookies({ [challengeCookieName]: cookieOf(options, challengeCookieName) }),
  );
}

describe("a store's relying party", () => {
  const harness = useHarness();

  test('adding a host that sorts before the first keeps the relying party, and its passkeys sign in', async () => {
    const { t, call } = await startAdmin(harness);
    const { store, side } = await passkeyStore(t, call, 'acme', ['www.acme.com']);
    assert.equal(store.webauthn_rp_id, 'www.acme.com');
    const authenticator = new SoftAuthenticator('www.acme.com', 'https://www.acme.com');
    await customerWithPasskey(side, authenticator);

    const added = await call('POST', `${stores}/acme/hosts`, { host: 'acme.shops.example' });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.deepEqual(added.body.hosts, ['acme.shops.example', 'www.acme.com']);
    assert.equal(added.body.webauthn_rp_id, 'www.acme.com');
    t.services.store.invalidate();
    const signedIn = await passkeySignIn(side, authenticator);
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
  });

  test('removing the last host on the relying party is 409 while passkeys depend on it, and forced it goes', async () => {
    const { t, call } = await startAdmin(harness);
    const { side } = await passkeyStore(t, call, 'acme', ['www.acme.com', 'acme.shops.example']);
    const authenticator = new SoftAuthenticator('www.acme.com', 'https://www.acme.com');
    await customerWithPasskey(side, authenticator);

    const refused = await call('DELETE', `${stores}/acme/hosts/www.acme.com`);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'relying_party_in_use');
    t.services.store.invalidate();
    assert.equal((await passkeySignIn(side, authenticator)).status, 200, 'nothing changed');

    const forced = await call('DELETE', `${stores}/acme/hosts/www.acme.com?force=true`);
    assert.equal(forced.status, 200, JSON.stringify(forced.body));
    assert.deepEqual(forced.body.hosts, ['acme.shops.example']);
    assert.equal(forced.body.webauthn_rp_id, 'www.acme.com', 'an explicit change alone moves it');
  });

  test('without passkeys, the relying party follows to the first host left when its own goes', async () => {
    const { call } = await startAdmin(harness);
    const made = await call('POST', stores, { slug: 'books', name: 'Books', hosts: ['b.books.test', 'a.books.test'] });
    assert.equal(made.body.webauthn_rp_id, 'b.books.test', 'the first host given, not the first by name');
    const removed = await call('DELETE', `${stores}/books/hosts/b.books.test`);
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.equal(removed.body.webauthn_rp_id, 'a.books.test');
    // Another host on the relying party keeps it where it is.
    await call('PATCH', `${stores}/books`, { webauthn_rp_id: 'books.test' });
    await call('POST', `${stores}/books/hosts`, { host: 'c.books.test' });
    const kept = await call('DELETE', `${stores}/books/hosts/a.books.test`);
    assert.equal(kept.body.webauthn_rp_id, 'books.test');
  });

  test('naming another relying party warns how many passkeys stop signing in, and they do', async () => {
    const { t, call } = await startAdmin(harness);
    const { side } = await passkeyStore(t, call, 'acme', ['www.acme.com', 'acme.shops.example']);
    const authenticator = new SoftAuthenticator('www.acme.com', 'https://www.acme.com');
    await customerWithPasskey(side, authenticator);

    const moved = await call('PATCH', `${stores}/acme`, { webauthn_rp_id: 'acme.shops.example' });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.equal(moved.body.webauthn_rp_id, 'acme.shops.example');
    assert.equal(moved.body.warnings.length, 1);
    assert.match(moved.body.warnings[0], /^1 passkey was made for the relying party ID www\.acme\.com/);
    t.services.store.invalidate();
    assert.equal((await passkeySignIn(side, authenticator)).status, 401);
    // A change that leaves it where it is warns of nothing.
    const same = await call('PATCH', `${stores}/acme`, { webauthn_rp_id: 'acme.shops.example' });
    assert.equal(same.body.warnings, undefined);
  });
});

describe("a store's cookie domain", () => {
  const harness = useHarness();

  test('is set on the session and XSRF-TOKEN cookies of its hosts; a store without one keeps host-only cookies', async () => {
    const { t, call } = await startAdmin(harness);
    const made = await call('POST', stores, {
      slug: 'acme',
      name: 'Acme',
      hosts: ['auth.acme.test'],
      cookie_domain: 'acme.test',
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.cookie_domain, 'acme.test');
    await call('POST', stores, { slug: 'books', name: 'Books', hosts: ['auth.books.test'] });
    const acme = storeSide(t, made.body.id, 'acme', 'auth.acme.test');
    const books = storeSide(t, (await call('GET', `${stores}/books`)).body.id, 'books', 'auth.books.test');

    for (const [side, domain] of [
      [acme, 'acme.test'],
      [books, undefined],
    ] as const) {
      const customer = await registerIn(side);
      await verifyIn(side, customer.identity);
      const login = await side.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      for (const name of [sessionCookie, 'XSRF-TOKEN']) {
        const set = login.cookies.filter((cookie) => cookie.name === name && cookie.value !== '');
        assert.equal(set.length, 1, `${side.slug}: one ${name}`);
        assert.equal(set[0]!.domain, domain, `${side.slug}: ${name}'s domain`);
      }
      // The session it set is the one the next call reads.
      const session = cookieOf(login, sessionCookie)!;
      const me = await side.get(`${auth}/session`, cookies({ [sessionCookie]: session }));
      assert.equal(me.status, 200, JSON.stringify(me.body));
    }
  });

  test("is refused when it covers none of the store's hosts, or a host of another store, either way round", async () => {
    const { call } = await startAdmin(harness);
    await call('POST', stores, { slug: 'acme', name: 'Acme', hosts: ['acme.shops.example'] });
    await call('POST', stores, { slug: 'books', name: 'Books', hosts: ['books.shops.example'] });

    const offHosts = await call('PATCH', `${stores}/acme`, { cookie_domain: 'acme.example' });
    assert.equal(offHosts.status, 422, JSON.stringify(offHosts.body));
    assert.deepEqual(Object.keys(offHosts.body.errors), ['cookie_domain']);
    const singleLabel = await call('PATCH', `${stores}/acme`, { cookie_domain: 'localhost' });
    assert.equal(singleLabel.status, 422);
    assert.match(singleLabel.body.errors.cookie_domain[0], /at least two labels/);

    // The platform's shared parent would carry acme's session to books' host.
    const shared = await call('PATCH', `${stores}/acme`, { cookie_domain: 'shops.example' });
    assert.equal(shared.status, 409, JSON.stringify(shared.body));
    assert.equal(shared.body.code, 'cookie_domain_shared');
    assert.match(shared.body.detail, /books\.shops\.example/);
    const sharedAtCreate = await call('POST', stores, {
      slug: 'shoes',
      name: 'Shoes',
      hosts: ['shoes.shops.example'],
      cookie_domain: 'shops.example',
    });
    assert.equal(sharedAtCreate.status, 409, JSON.stringify(sharedAtCreate.body));
    assert.equal((await call('GET', `${stores}/shoes`)).status, 404, 'nothing was made');

    // Once acme's cookies are for acme.shops.example, no other store may take a host under it.
    const own = await call('PATCH', `${stores}/acme`, { cookie_domain: 'acme.shops.example' });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    const under = await call('POST', `${stores}/books/hosts`, { host: 'www.acme.shops.example' });
    assert.equal(under.status, 409, JSON.stringify(under.body));
    assert.equal(under.body.code, 'cookie_domain_shared');
    const underAtCreate = await call('POST', stores, { slug: 'shoes', name: 'Shoes', hosts: ['x.acme.shops.example'] });
    assert.equal(underAtCreate.status, 409);
    assert.equal(underAtCreate.body.code, 'cookie_domain_shared');
    // The store itself may: its own cookies reaching its own host is the point.
    const ownHost = await call('POST', `${stores}/acme/hosts`, { host: 'www.acme.shops.example' });
    assert.equal(ownHost.status, 201, JSON.stringify(ownHost.body));
    // Cleared, the store's cookies are host-only again.
    const cleared = await call('PATCH', `${stores}/acme`, { cookie_domain: null });
    assert.equal(cleared.body.cookie_domain, null);
  });
});
