import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countCustomers } from '../../../src/auth/tables/customers.js';
import { StoreDirectory } from '../../../src/store/directory.js';
import { firstStoreId, loadStore, updateStore, type StoreStatus } from '../../../src/store/store.js';
import {
  api,
  auth,
  registeredCustomer,
  registration,
  type Reply,
  type TestApp,
  useHarness,
} from '../../helpers/harness.js';

/** The store context (docs/reference/store-context.md): the store-wide gate answers before anything else, so a shut store leaks nothing. */
function assertStoreUnavailable(reply: Reply, where: string): void {
  assert.equal(reply.status, 503, `${where}: got ${reply.status} ${JSON.stringify(reply.body)}`);
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/, where);
  assert.equal(reply.body.code, 'store_unavailable', where);
  assert.equal(reply.body.request_id, reply.headers['x-request-id'], where);
}

/** Every customer-facing call, each with a body that would otherwise succeed or reach its handler. */
function customerCalls(t: TestApp, headers: Record<string, string> = {}): Array<[string, () => Promise<Reply>]> {
  const post = (path: string, body?: unknown) =>
    [path, () => t.post(`${auth}${path}`, body, headers)] as [string, () => Promise<Reply>];
  return [
    post('/register', registration({ email: 'grace@example.com' })),
    post('/verify', { identity: 'ada@example.com', code: '123456' }),
    post('/verification/resend', { identity: 'ada@example.com' }),
    post('/login', { identity: 'ada@example.com', password: 'analytical engine 1843' }),
    post('/password/forgot', { identity: 'ada@example.com' }),
    post('/password/reset', {
      identity: 'ada@example.com',
      code: '123456',
      password: 'difference engine 1822',
      password_confirmation: 'difference engine 1822',
    }),
    post('/logout'),
    [`${api}/csrf-cookie`, () => t.get(`${api}/csrf-cookie`, headers)],
    ['/sanctum/csrf-cookie', () => t.get('/sanctum/csrf-cookie', headers)],
  ];
}

async function shut(t: TestApp, status: StoreStatus): Promise<void> {
  const result = await updateStore(t.db, t.clock, { status });
  assert.equal(result.ok, true);
  t.services.store.invalidate();
}

describe('the store gate', () => {
  const harness = useHarness();

  for (const status of ['paused', 'closed'] as const) {
    test(`a ${status} store answers 503 store_unavailable on every customer call`, async () => {
      const t = await harness.start();
      await registeredCustomer(t);
      await t.deliver();
      await shut(t, status);
      for (const [where, call] of customerCalls(t)) {
        const reply = await call();
        assertStoreUnavailable(reply, where);
        assert.match(String(reply.headers['cache-control']), /\bno-store\b/, where);
      }
      const csrf = await t.get(`${api}/csrf-cookie`);
      assert.equal(
        csrf.cookies.find((c) => c.name === 'XSRF-TOKEN'),
        undefined,
        'no token is issued by a shut store',
      );
      assert.deepEqual(await t.deliver(), [], 'nothing was queued behind the 503s');
    });
  }

  test('the gate runs first: cross-site headers and invalid, oversized or non-JSON bodies still get 503 store_unavailable', async () => {
    const t = await harness.start();
    await shut(t, 'paused');
    const hostile = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    for (const [where, call] of customerCalls(t, hostile)) assertStoreUnavailable(await call(), `cross-site ${where}`);
    for (const path of [
      '/register',
      '/verify',
      '/verification/resend',
      '/login',
      '/password/forgot',
      '/password/reset',
      '/logout',
    ]) {
      assertStoreUnavailable(await t.post(`${auth}${path}`, '{not json'), `invalid JSON ${path}`);
      assertStoreUnavailable(await t.post(`${auth}${path}`, '[]'), `array ${path}`);
      assertStoreUnavailable(await t.post(`${auth}${path}`, {}), `empty object ${path}`);
      assertStoreUnavailable(
        await t.post(`${auth}${path}`, 'a=b', { 'content-type': 'text/plain' }),
        `text/plain ${path}`,
      );
      assertStoreUnavailable(
        await t.post(`${auth}${path}`, JSON.stringify({ x: 'y'.repeat(20_000) })),
        `oversized ${path}`,
      );
      assertStoreUnavailable(
        await t.post(`${auth}${path}`, {}, { 'sec-fetch-site': 'same-origin' }),
        `no token ${path}`,
      );
    }
  });

  test('platform endpoints keep working while the store is shut, and readiness reports its status', async () => {
    const t = await harness.start();
    await shut(t, 'paused');
    const platform = await t.get(`${api}/platform`);
    assert.equal(platform.status, 200);
    assert.equal(platform.body.api_version, 'v1');
    const live = await t.get(`${api}/health/live`);
    assert.equal(live.status, 200);
    assert.deepEqual(live.body, { status: 'ok' });
    const ready = await t.get(`${api}/health/ready`);
    assert.equal(ready.status, 200, 'a paused shop is still a deployment that can serve');
    assert.equal(ready.body.checks.store, true);
    assert.equal(ready.body.details.store_status, 'paused');
    assert.equal(ready.body.details.store_id, (await loadStore(t.db, { id: firstStoreId }))?.id);
  });

  test('reopening the store lets customer calls through again', async () => {
    const t = await harness.start();
    await shut(t, 'closed');
    assertStoreUnavailable(await t.post(`${auth}/register`, registration()), 'closed');
    await shut(t, 'active');
    const reply = await t.post(`${auth}/register`, registration());
    assert.equal(reply.status, 201);
    assert.equal((await t.get(`${api}/csrf-cookie`)).status, 204);
  });

  test('a StoreDirectory sees a change made elsewhere after one read of the change feed, without being told', async () => {
    const t = await harness.start();
    const cache = new StoreDirectory(t.db);
    await cache.refresh(); // the feed's first read, as the service makes it on start
    assert.equal((await cache.get()).status, 'active');
    await updateStore(t.db, t.clock, { status: 'paused' });
    await cache.refresh();
    assert.equal((await cache.get()).status, 'paused');
    await updateStore(t.db, t.clock, { status: 'closed', verificationRequired: true });
    await cache.refresh();
    const seen = await cache.get();
    assert.equal(seen.status, 'closed');
    assert.equal(seen.verificationRequired, true);
  });

  test('a request sees a store change made without invalidation once the change feed has been read', async () => {
    const t = await harness.start();
    await t.services.store.refresh(); // the feed's first read, as the service makes it on start
    assert.equal(
      (await t.post(`${auth}/register`, registration())).status,
      201,
      'the store is open and its context cached',
    );

    await updateStore(t.db, t.clock, { status: 'paused' });
    await t.services.store.refresh();
    assertStoreUnavailable(
      await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' }),
      'login after the window',
    );
    assertStoreUnavailable(await t.get(`${api}/csrf-cookie`), 'csrf-cookie after the window');

    await updateStore(t.db, t.clock, { status: 'active' });
    await t.services.store.refresh();
    assert.equal(
      (await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' })).status,
      200,
    );
  });

  test('updateStore refuses to change the identity mode while customers exist unless forced', async () => {
    const t = await harness.start();
    await registeredCustomer(t);

    const refused = await updateStore(t.db, t.clock, { identityMode: 'phone' }, { countCustomers });
    assert.deepEqual(refused, { ok: false, reason: 'identity_mode_in_use', customers: 1 });
    assert.equal((await loadStore(t.db, { id: firstStoreId }))?.identityMode, 'email', 'nothing changed');

    const refusedWithOthers = await updateStore(
      t.db,
      t.clock,
      { identityMode: 'phone', status: 'paused', name: 'Renamed' },
      { countCustomers },
    );
    assert.equal(refusedWithOthers.ok, false);
    const unchanged = await loadStore(t.db, { id: firstStoreId });
    assert.equal(unchanged?.status, 'active', 'a refused change applies none of its parts');
    assert.equal(unchanged?.name, 'My Store');

    const same = await updateStore(t.db, t.clock, { identityMode: 'email' });
    assert.equal(same.ok, true, 'keeping the current mode is not a change');

    const forced = await updateStore(t.db, t.clock, { identityMode: 'phone' }, { force: true });
    assert.equal(forced.ok, true);
    assert.equal(forced.ok && forced.store.identityMode, 'phone');
    assert.equal((await loadStore(t.db, { id: firstStoreId }))?.identityMode, 'phone');
  });

  test('updateStore will not switch the identity mode with neither a customer count nor force', async () => {
    const t = await harness.start();
    await assert.rejects(updateStore(t.db, t.clock, { identityMode: 'phone' }), /needs countCustomers or force/);
    assert.equal((await loadStore(t.db, { id: firstStoreId }))?.identityMode, 'email');
  });

  test('updateStore changes the identity mode of a store without customers without force', async () => {
    const t = await harness.start();
    const result = await updateStore(t.db, t.clock, { identityMode: 'phone' }, { countCustomers });
    assert.equal(result.ok, true);
    t.services.store.invalidate();
    const reply = await t.post(`${auth}/register`, { ...registration({ email: undefined }), phone: '+1 650 253 0000' });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    assert.deepEqual(reply.body.identity, { type: 'phone', value: '+16502530000', verified_at: null });
  });
});
