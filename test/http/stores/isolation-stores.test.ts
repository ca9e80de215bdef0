import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { markStoreDeleted } from '../../../src/store/store.js';
import { limits } from '../../../src/http/core/rate-limit.js';
import { api, auth, registration, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { withSession } from '../../helpers/customers.js';
import { cookieOf } from '../../helpers/passkeys.js';
import { loginIn, registerIn, signedInIn, twoStores, verifyIn, type StoreSide } from '../../helpers/stores.js';

/**
 * Isolation: what one store's state does (paused, deleted, its limits used up) never
 * reaches another's customers, a host no store has is answered as such, and each store's audit
 * trail and outbox hold its own rows. (What a customer holds: isolation.test.ts.)
 */

const email = 'ada@example.com';
const password = 'analytical engine 1843';
/** A client address of the tests' own, so the per-address limits count this test's calls only. */
const address = '203.0.113.7';

function assertProblem(reply: Reply, status: number, code: string, where = ''): void {
  assert.equal(reply.status, status, `${where} ${JSON.stringify(reply.body)}`);
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/, where);
  assert.equal(reply.body.code, code, where);
  assert.equal(reply.body.request_id, reply.headers['x-request-id'], where);
}

function assertSignedIn(reply: Reply, customerId: string, where = ''): void {
  assert.equal(reply.status, 200, `${where} ${JSON.stringify(reply.body)}`);
  assert.equal(reply.body.customer.id, customerId, where);
}

/** Every customer row of a store, as the database holds it. */
function customersOf(t: TestApp, side: StoreSide) {
  return t.db.query('SELECT * FROM customers WHERE store_id = $1 ORDER BY id', [side.id]);
}

describe('isolation between stores: the gate, the limits and the trail', () => {
  const harness = useHarness();

  test('store A paused answers 503 store_unavailable while store B serves logins', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    await registerIn(a);
    const inB = await registerIn(b);
    await a.configure({ status: 'paused' });

    assertProblem(await loginIn(a, email, password), 503, 'store_unavailable', 'A login');
    assertProblem(await a.get(`${api}/csrf-cookie`), 503, 'store_unavailable', 'A csrf-cookie');
    assertSignedIn(await loginIn(b, email, password), inB.id, 'B login');
    assert.equal((await b.get(`${api}/csrf-cookie`)).status, 204);
  });

  test('store A’s login limit used up from one address leaves store B’s logins from that address untouched', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    const inA = await registerIn(a);
    const inB = await registerIn(b);
    const attempt = (side: StoreSide, identity: string) =>
      side.postFrom(address, `${auth}/login`, { identity, password });

    // Unknown identities, so the address's limit runs out and no identity's does.
    for (let i = 0; i < limits.loginAttempts.limit; i += 1) {
      assert.equal((await attempt(a, `nobody${i}@example.com`)).status, 401);
    }
    assertProblem(await attempt(a, email), 429, 'rate_limited', 'A, the right password after the limit');

    // B counts its own from zero: the whole limit, the right password within it, then its own refusal.
    for (let i = 0; i < limits.loginAttempts.limit - 1; i += 1) {
      assert.equal((await attempt(b, `nobody${i}@example.com`)).status, 401, `B attempt ${i + 1}`);
    }
    assertSignedIn(await attempt(b, email), inB.id, 'B, the right password');
    assertProblem(await attempt(b, email), 429, 'rate_limited', 'B past its own limit');
    // Another address still signs in on A: it is the address that was limited, in A alone.
    assertSignedIn(await a.postFrom('203.0.113.8', `${auth}/login`, { identity: email, password }), inA.id);

    await t.services.background.drain();
    const refusals = await t.db.query<{ store_id: string; client_address: string; limit: string }>(
      `SELECT store_id, client_address, details->>'limit' AS limit FROM audit_events
        WHERE event = 'rate_limited' ORDER BY id`,
    );
    assert.deepEqual(
      refusals.map((row) => [row.store_id, row.limit]),
      [
        [a.id, limits.loginAttempts.name],
        [b.id, limits.loginAttempts.name],
      ],
    );
  });

  test('store A’s register limit used up does not limit registrations in store B', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    const register = (side: StoreSide, n: number) =>
      side.postFrom(address, `${auth}/register`, registration({ email: `shopper${n}@example.com` }));
    for (let i = 0; i < limits.registrations.limit; i += 1) {
      assert.equal((await register(a, i)).status, 201, `A registration ${i + 1}`);
    }
    assertProblem(await register(a, limits.registrations.limit), 429, 'rate_limited', 'A past its limit');

    const inB = await register(b, 0);
    assert.equal(inB.status, 201, JSON.stringify(inB.body));
    const counts = await t.db.query<{ store_id: string; n: number }>(
      'SELECT store_id, count(*)::int AS n FROM customers GROUP BY store_id',
    );
    assert.deepEqual(
      new Map(counts.map((row) => [row.store_id, row.n])),
      new Map([
        [a.id, limits.registrations.limit],
        [b.id, 1],
      ]),
    );
  });

  test('store A deleted answers 404 store_not_found on its old host while store B serves, B’s customers untouched', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    await registerIn(a);
    const inB = await registerIn(b);
    await verifyIn(b, email);
    const { session } = await signedInIn(b, email, password);
    const before = await customersOf(t, b);

    assert.equal(await markStoreDeleted(t.db, t.clock, a.id), true);
    t.services.store.invalidate();

    assertProblem(await loginIn(a, email, password), 404, 'store_not_found', 'A login');
    const csrf = await a.get(`${api}/csrf-cookie`);
    assertProblem(csrf, 404, 'store_not_found', 'A csrf-cookie');
    assert.equal(cookieOf(csrf, 'XSRF-TOKEN'), undefined);

    assert.deepEqual(await customersOf(t, b), before);
    const stillB = await b.get(`${auth}/session`, withSession(session));
    assertSignedIn(stillB, inB.id, 'B’s session from before');
    assertSignedIn(await loginIn(b, email, password), inB.id, 'B login');
  });

  test('an unknown host on a two-store deployment answers 404 store_not_found with a problem document', async () => {
    const t = await harness.start();
    await twoStores(t);
    for (const host of ['c.shop.test', 'localhost', 'shop.test']) {
      const reply = await t.post(`${auth}/login`, { identity: email, password }, { host });
      assertProblem(reply, 404, 'store_not_found', host);
      assert.deepEqual(
        { ...reply.body, request_id: undefined },
        {
          type: 'about:blank',
          title: 'Store not found',
          status: 404,
          code: 'store_not_found',
          detail: 'No store of this deployment answers on this host.',
          request_id: undefined,
        },
      );
      assert.equal(reply.headers['set-cookie'], undefined);
      const csrf = await t.get(`${api}/csrf-cookie`, { host });
      assertProblem(csrf, 404, 'store_not_found', `${host} csrf-cookie`);
      assert.equal(cookieOf(csrf, 'XSRF-TOKEN'), undefined);
    }
  });

  test('a one-store deployment without hosts answers on any host', async () => {
    const t = await harness.start();
    for (const host of ['localhost', 'anything.example', 'a.shop.test:8443']) {
      assert.equal((await t.get(`${api}/csrf-cookie`, { host })).status, 204, host);
    }
    const registered = await t.post(`${auth}/register`, registration(), { host: 'one.example' });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const login = await t.post(`${auth}/login`, { identity: email, password }, { host: 'another.example' });
    assertSignedIn(login, registered.body.id);
    const [row] = await t.db.query<{ store_id: string }>('SELECT store_id FROM customers');
    assert.equal(row?.store_id, (await t.services.store.get()).id);
  });

  test('the audit trail, the outbox and the sessions of each store’s flows carry that store’s id', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    const ids = new Map<string, string>();
    for (const side of [a, b]) {
      const customer = await registerIn(side);
      ids.set(side.id, customer.id);
      await verifyIn(side, email);
      await signedInIn(side, email, password);
      assert.equal((await loginIn(side, email, 'not the password 1')).status, 401);
      assert.equal((await side.post(`${auth}/password/forgot`, { identity: email })).status, 202);
    }
    await t.deliver();
    await t.services.background.drain();

    // Every row that names a customer names one of its own store.
    for (const table of ['audit_events', 'outbox', 'sessions']) {
      const strays = await t.db.query(
        `SELECT r.store_id, r.customer_id FROM ${table} r
          WHERE r.customer_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.store_id = r.store_id AND c.id = r.customer_id)`,
      );
      assert.deepEqual(strays, [], `${table} rows pointing at another store's customer`);
    }
    for (const side of [a, b]) {
      const customerId = ids.get(side.id);
      const audit = await t.db.query<{ event: string; customer_id: string | null }>(
        'SELECT event, customer_id::text AS customer_id FROM audit_events WHERE store_id = $1 ORDER BY id',
        [side.id],
      );
      assert.deepEqual(
        audit.map((row) => row.event),
        ['customer.registered', 'customer.verified', 'login.succeeded', 'login.failed'],
        side.slug,
      );
      for (const row of audit) assert.equal(row.customer_id, customerId, `${side.slug} ${row.event}`);
      const outbox = await t.db.query<{ purpose: string; customer_id: string | null; status: string }>(
        'SELECT purpose, customer_id::text AS customer_id, status FROM outbox WHERE store_id = $1 ORDER BY id',
        [side.id],
      );
      assert.deepEqual(
        outbox.map((row) => [row.purpose, row.customer_id, row.status]),
        [
          ['verification', customerId, 'sent'],
          ['password_reset', customerId, 'sent'],
        ],
        side.slug,
      );
      assert.deepEqual(
        t.outbox.sent.filter((message) => message.from.storeId === side.id).map((message) => message.purpose),
        ['verification', 'password_reset'],
        `${side.slug}: the messages sent as the store's`,
      );
    }
    const names = new Map(t.outbox.sent.map((message) => [message.from.storeId, message.from.storeName]));
    assert.equal(names.get(b.id), 'Shop B');
    assert.notEqual(names.get(a.id), 'Shop B');
    const sessions = await t.db.query<{ store_id: string; customer_id: string }>(
      'SELECT store_id, customer_id::text AS customer_id FROM sessions',
    );
    assert.deepEqual(new Map(sessions.map((row) => [row.store_id, row.customer_id])), ids);
  });
});
