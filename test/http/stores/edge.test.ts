import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildAdminApp } from '../../../src/http/admin/app.js';
import { auth, injector, registration, useHarness, type TestApp } from '../../helpers/harness.js';
import { twoStores } from '../../helpers/stores.js';

const token = 'introspection-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBB';

/** Registers and signs in on `host`; returns the session cookie's value. */
async function signedInOn(t: TestApp, host: string, email: string): Promise<string> {
  const body = registration({ email });
  assert.equal((await t.post(`${auth}/register`, body, { host })).status, 201);
  const login = await t.post(`${auth}/login`, { identity: email, password: body.password }, { host });
  assert.equal(login.status, 200);
  return login.cookies.find((cookie) => cookie.name === 'storefront_session')!.value;
}

describe('the edge of a deployment with several stores', () => {
  const harness = useHarness();

  test('readiness names the store of the host it is asked on, and none on a host of no store', async () => {
    const t = await harness.start();
    const { b } = await twoStores(t);
    const onB = await t.get('/api/v1/health/ready', { host: 'b.shop.test' });
    assert.equal(onB.status, 200);
    assert.deepEqual(onB.body.details, { store_id: b.id, store_status: 'active' });
    const byAddress = await t.get('/api/v1/health/ready', { host: '10.0.0.7:3000' });
    assert.equal(byAddress.status, 200);
    assert.equal(byAddress.body.checks.store, true);
    assert.equal(byAddress.body.details, undefined);
  });

  test('the page names the store of its host, and a host of no store gets a plain 404 page', async () => {
    const t = await harness.start();
    await twoStores(t);
    const page = await t.get('/', { host: 'b.shop.test' });
    assert.equal(page.status, 200);
    assert.match(String(page.body), /Shop B/);
    const none = await t.get('/', { host: 'nowhere.shop.test' });
    assert.equal(none.status, 404);
    assert.match(String(none.headers['content-type']), /^text\/plain/);
    assert.doesNotMatch(String(none.body), /Shop B|My Store/);
  });

  test('a customer call on a host of no store answers 404 store_not_found', async () => {
    const t = await harness.start();
    await twoStores(t);
    const answer = await t.post(
      `${auth}/login`,
      { identity: 'a@example.com', password: 'x' },
      { host: 'nowhere.test' },
    );
    assert.equal(answer.status, 404);
    assert.equal(answer.body.code, 'store_not_found');
  });

  test('introspection looks for a session only in the store named by id, slug or host', async () => {
    const t = await harness.start({ env: { INTROSPECTION_TOKENS: token } });
    const { b } = await twoStores(t);
    const admin = await buildAdminApp(t.services);
    await admin.ready();
    try {
      const introspect = (body: unknown) =>
        injector(admin)('POST', '/admin/v1/sessions/introspect', body, { authorization: `Bearer ${token}` });
      const session = await signedInOn(t, 'b.shop.test', 'ada@example.com');
      for (const named of [{ store: b.id }, { store: 'shop-b' }, { host: 'B.Shop.Test' }]) {
        const answer = await introspect({ session, ...named });
        assert.equal(answer.status, 200, JSON.stringify(named));
        assert.equal(answer.body.active, true);
        assert.deepEqual(answer.body.store, { id: b.id, status: 'active' });
      }
      assert.deepEqual((await introspect({ session, store: 'default' })).body, { active: false });
      const unnamed = await introspect({ session });
      assert.equal(unnamed.status, 422);
      assert.deepEqual(Object.keys(unnamed.body.errors), ['store']);
      assert.equal((await introspect({ session, store: 'no-such-store' })).status, 404);
      assert.equal((await introspect({ session, store: 'shop-b', host: 'b.shop.test' })).status, 422);
    } finally {
      await admin.close();
    }
  });

  test('a storefront of one store is allowed by CORS there and not by another store', async () => {
    const t = await harness.start();
    await twoStores(t);
    const preflight = (host: string) =>
      t.app.inject({
        method: 'OPTIONS',
        url: `${auth}/login`,
        headers: { host, origin: 'https://b.shop.test', 'access-control-request-method': 'POST' },
      });
    assert.equal((await preflight('b.shop.test')).headers['access-control-allow-origin'], 'https://b.shop.test');
    assert.equal((await preflight('a.shop.test')).headers['access-control-allow-origin'], undefined);
  });
});
