import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';
import { withSession } from '../../helpers/customers.js';
import { auth, toReply, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { registerIn, signedInIn, twoStores, verifyIn, type StoreSide } from '../../helpers/stores.js';
import { tokenIdOf } from '../../../src/http/admin/tokens.js';
import { searchCustomers } from '../../../src/auth/tables/staff-customers.js';
import { forStore } from '../../../src/storage/database.js';
import { firstStoreId } from '../../../src/store/store.js';
import { find, scrape } from '../../helpers/metrics.js';
import { planNodes } from '../../helpers/query-plans.js';
import { recording, type Recorded } from '../../helpers/recording-db.js';

/** The platform's staff and a store's customers: find, read, create, change, require a reset, delete. */

const adminToken = 'admin-token-CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC';

function assertProblem(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(reply.body.code, code);
}

async function start(harness: ReturnType<typeof useHarness>) {
  const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
  const admin = await adminAppOf(t);
  const call = adminCaller(admin, adminToken);
  const { a, b } = await twoStores(t);
  const customers = (side: StoreSide) => `/admin/v1/stores/${side.id}/customers`;
  return { t, admin, call, a, b, customers };
}

async function registered(side: StoreSide, email: string, name = 'Ada Lovelace', verified = true) {
  const customer = await registerIn(side, { email, name });
  if (verified) await verifyIn(side, customer.identity);
  return customer;
}

async function auditOf(t: TestApp, storeId: string) {
  await t.services.background.drain();
  return t.db.query<{ event: string; customer_id: string | null; details: Record<string, string> }>(
    "SELECT event, customer_id, details FROM audit_events WHERE store_id = $1 AND details->>'by' = 'admin' ORDER BY id",
    [storeId],
  );
}

describe("the platform's staff and a store's customers", () => {
  const harness = useHarness();

  test('search by the start of identity or name, identity matches first, in pages that miss none and repeat none, in this store only', async () => {
    const { call, a, b, customers } = await start(harness);
    const emails = [
      'anna@example.com',
      'annabel@example.com',
      'bob@example.com',
      'carl@example.com',
      'zed@example.com',
    ];
    const names = ['Zoe Anders', 'Annabel Lee', 'Bob Annan', 'Carl Anna', 'Anne Zed'];
    for (const [index, email] of emails.entries()) await registered(a, email, names[index], index !== 2);
    await registered(b, 'anna@example.com', 'Anna in B');

    const page = await call('GET', `${customers(a)}?query=ANN`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.deepEqual(
      page.body.customers.map((c: { identity: { value: string } }) => c.identity.value),
      // By identity first (byte order), then by name: Anne Zed (zed@), never a customer of store B.
      ['anna@example.com', 'annabel@example.com', 'zed@example.com'],
    );
    assert.equal(page.body.next_cursor, null);

    const walked: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const next: Reply = await call(
        'GET',
        `${customers(a)}?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      assert.equal(next.status, 200, JSON.stringify(next.body));
      walked.push(...next.body.customers.map((c: { identity: { value: string } }) => c.identity.value));
      cursor = next.body.next_cursor;
      pages += 1;
    } while (cursor !== null);
    assert.deepEqual(walked, [...emails].sort());
    assert.equal(pages, 3);

    const byName = await call('GET', `${customers(a)}?query=carl%20a&limit=1`);
    assert.deepEqual(
      byName.body.customers.map((c: { name: string }) => c.name),
      ['Carl Anna'],
    );
    const unverified = await call('GET', `${customers(a)}?status=unverified`);
    assert.deepEqual(
      unverified.body.customers.map((c: { identity: { value: string }; status: string }) => [
        c.identity.value,
        c.status,
      ]),
      [['bob@example.com', 'unverified']],
    );
    const escaped = await call('GET', `${customers(a)}?query=${encodeURIComponent('%')}`);
    assert.deepEqual(escaped.body.customers, [], 'a % in the query is a character, not a wildcard');
    assertProblem(await call('GET', `${customers(a)}?cursor=not-a-cursor`), 422, 'validation_failed');
    assertProblem(await call('GET', `${customers(a)}?limit=0`), 422, 'validation_failed');
    assertProblem(await call('GET', `${customers(a)}?status=gone`), 422, 'validation_failed');
  });

  test('read one: where the account stands and what support asks about; another store has no such customer', async () => {
    const { t, call, a, b, customers } = await start(harness);
    const customer = await registered(a, 'ada@example.com');
    await signedInIn(a, customer.identity, customer.password);
    const read = await call('GET', `${customers(a)}/${customer.id}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.deepEqual(
      { ...read.body, last_sign_in_at: typeof read.body.last_sign_in_at },
      {
        id: customer.id,
        name: 'Ada Lovelace',
        identity: { type: 'email', value: 'ada@example.com', verified_at: t.clock.now().toISOString() },
        has_password: true,
        status: 'active',
        locale: null,
        external_id: null,
        created_at: t.clock.now().toISOString(),
        block: null,
        last_sign_in_at: 'string',
        session_count: 1,
        passkey_count: 0,
        two_factor: false,
        providers: [],
      },
    );
    assertProblem(await call('GET', `${customers(b)}/${customer.id}`), 404, 'not_found');
    assertProblem(await call('GET', `${customers(a)}/not-an-id`), 404, 'not_found');
    // An id that is not one names no customer, whatever the call: never a 500.
    const notAnId = `${customers(a)}/not-an-id`;
    assertProblem(await call('POST', `${notAnId}/block`, { reason: 'x' }), 404, 'not_found');
    assertProblem(await call('POST', `${notAnId}/unblock`), 404, 'not_found');
    assertProblem(await call('POST', `${notAnId}/require-password-reset`), 404, 'not_found');
    assertProblem(await call('PATCH', notAnId, { name: 'X' }), 404, 'not_found');
    assertProblem(await call('DELETE', notAnId), 404, 'not_found');
  });

  test('create: as an import line, verified by the staff’s word, once per Idempotency-Key, and a taken identity refused', async () => {
    const { t, admin, a, customers } = await start(harness);
    const body = { identity: 'New@Example.com', name: 'New Customer', verified: true, external_id: 'crm-7' };
    const post = async (payload: unknown, key?: string) =>
      toReply(
        await admin.inject({
          method: 'POST',
          url: customers(a),
          headers: {
            authorization: `Bearer ${adminToken}`,
            'content-type': 'application/json',
            ...(key === undefined ? {} : { 'idempotency-key': key }),
          },
          payload: JSON.stringify(payload),
        }),
      );
    const made = await post(body, 'make-new-1');
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.identity.value, 'new@example.com');
    assert.equal(made.body.status, 'active');
    assert.equal(made.body.external_id, 'crm-7');
    assert.equal(made.body.has_password, false);
    const again = await post(body, 'make-new-1');
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotency-replayed'], 'true');
    assert.equal(again.body.id, made.body.id);
    assertProblem(await post({ ...body, name: 'Other' }, 'make-new-1'), 422, 'idempotency_key_reused');
    assertProblem(await post(body), 422, 'identity_unavailable');
    const refused = await post({ identity: 'not an email', name: 'X', password_hash: 'plain' });
    assertProblem(refused, 422, 'validation_failed');
    assert.deepEqual(Object.keys(refused.body.errors).sort(), ['identity', 'password_hash']);

    const invited = await post({ identity: 'invited@example.com', name: 'Invited', invite: true });
    assert.equal(invited.status, 201, JSON.stringify(invited.body));
    const sent = await t.deliver();
    assert.deepEqual(
      sent.map((message) => [message.to, message.purpose]),
      [['invited@example.com', 'invitation']],
    );
    const audit = await auditOf(t, a.id);
    assert.deepEqual(
      audit.map((row) => [row.event, row.customer_id, row.details['token']]),
      [
        ['customer.created', made.body.id, tokenIdOf(adminToken)],
        ['customer.created', invited.body.id, tokenIdOf(adminToken)],
      ],
    );
  });

  test('change: a new email ends the sessions, goes unproven unless verified says so, and the old address gets the notice', async () => {
    const { t, call, a, customers } = await start(harness);
    const customer = await registered(a, 'typo@exmaple.com');
    const { session } = await signedInIn(a, customer.identity, customer.password);
    await t.deliver();
    const changed = await call('PATCH', `${customers(a)}/${customer.id}`, {
      email: 'Typo@Example.com',
      name: ' Ada L. ',
      external_id: 'crm-1',
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal(changed.body.identity.value, 'typo@example.com');
    assert.equal(changed.body.identity.verified_at, null);
    assert.equal(changed.body.status, 'unverified');
    assert.equal(changed.body.name, 'Ada L.');
    assert.equal(changed.body.external_id, 'crm-1');
    assert.equal(changed.body.session_count, 0);
    assertProblem(await a.get(`${auth}/session`, withSession(session)), 401, 'unauthenticated');
    const sent = await t.deliver();
    assert.deepEqual(
      sent.map((message) => [message.to, message.purpose]),
      [['typo@exmaple.com', 'identity_changed']],
    );

    const proven = await call('PATCH', `${customers(a)}/${customer.id}`, { verified: true });
    assert.equal(proven.body.status, 'active');
    const other = await registered(a, 'other@example.com');
    assertProblem(
      await call('PATCH', `${customers(a)}/${other.id}`, { email: 'typo@example.com' }),
      422,
      'identity_unavailable',
    );
    const refused = await call('PATCH', `${customers(a)}/${customer.id}`, { name: '', locale: 'xx', phone: '+1' });
    assertProblem(refused, 422, 'validation_failed');
    assert.deepEqual(Object.keys(refused.body.errors).sort(), ['locale', 'name', 'phone']);
  });

  test('require a reset: the password stops signing in, sessions end, and the reset code sets a new one', async () => {
    const { t, call, a, customers } = await start(harness);
    const customer = await registered(a, 'reset@example.com');
    const { session } = await signedInIn(a, customer.identity, customer.password);
    await t.deliver();
    const required = await call('POST', `${customers(a)}/${customer.id}/require-password-reset`);
    assert.equal(required.status, 200, JSON.stringify(required.body));
    assert.equal(required.body.has_password, false);
    assertProblem(await a.get(`${auth}/session`, withSession(session)), 401, 'unauthenticated');
    const login = await a.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    assertProblem(login, 401, 'unauthenticated');
    const code = await a.codeFor(customer.identity, 'password_reset');
    const reset = await a.post(`${auth}/password/reset`, {
      identity: customer.identity,
      code,
      password: 'a brand new passphrase 9',
      password_confirmation: 'a brand new passphrase 9',
    });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    await signedInIn(a, customer.identity, 'a brand new passphrase 9');
  });

  test('delete: 202, the customer is erased and the identity is free at once', async () => {
    const { t, call, a, customers } = await start(harness);
    const customer = await registered(a, 'gone@example.com');
    const deleted = await call('DELETE', `${customers(a)}/${customer.id}`);
    assert.equal(deleted.status, 202, JSON.stringify(deleted.body));
    assert.deepEqual(deleted.body, { id: customer.id, status: 'deleted' });
    assertProblem(await call('GET', `${customers(a)}/${customer.id}`), 404, 'not_found');
    assertProblem(await call('DELETE', `${customers(a)}/${customer.id}`), 404, 'not_found');
    const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers WHERE store_id = $1', [
      a.id,
    ]);
    assert.equal(row!.n, 0);
    await registered(a, 'gone@example.com');
  });

  test("the admin API guide's walk: find a customer by the start of their address, block them, and see the store's refused sign-ins in /metrics", async () => {
    const { t, call, b, customers } = await start(harness);
    const ada = await registered(b, 'ada@example.com', 'Ada');
    const found = await call('GET', `${customers(b)}?query=ada`);
    assert.deepEqual(
      found.body.customers.map((customer: { id: string; status: string }) => [customer.id, customer.status]),
      [[ada.id, 'active']],
    );
    const blocked = await call('POST', `${customers(b)}/${ada.id}/block`, { reason: 'chargeback fraud' });
    assert.equal(blocked.status, 200, JSON.stringify(blocked.body));
    assert.equal(blocked.body.status, 'blocked');
    assertProblem(
      await b.post(`${auth}/login`, { identity: ada.identity, password: ada.password }),
      403,
      'account_blocked',
    );
    assertProblem(
      await b.post(`${auth}/login`, { identity: ada.identity, password: 'not her password 1' }),
      401,
      'unauthenticated',
    );
    const samples = await scrape(t);
    const outcomes = (outcome: string) =>
      find(samples, 'storefront_login_attempts_total', { outcome, store: b.slug }).map((sample) => sample.value);
    assert.deepEqual(outcomes('blocked'), [1]);
    assert.deepEqual(outcomes('failure'), [1]);
  });

  test('each part of a search reads a range of its index in order: no sort, no scan of the store', async () => {
    const { t } = await start(harness);
    // Many customers with current statistics, as a real store.
    await t.db.exec(`
      INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, created_at, updated_at)
        SELECT 'default', gen_random_uuid(), 'Name ' || n, 'email', 'customer-' || n || '@example.com', NULL, now(), now()
          FROM generate_series(1, 20000) AS n;
      ANALYZE customers;
    `);
    const log: Recorded[] = [];
    const search = {
      identityPrefix: 'customer-12',
      namePrefix: 'customer-12',
      status: undefined,
      after: { by: 'identity' as const, key: 'customer-12', id: '00000000-0000-0000-0000-000000000000' },
      limit: 50,
      now: t.clock.now(),
    };
    const page = await searchCustomers(forStore(recording(t.db, log), firstStoreId), search);
    assert.equal(page.rows.length, 50);
    await searchCustomers(forStore(recording(t.db, log), firstStoreId), {
      ...search,
      after: { ...search.after, by: 'name' },
    });
    assert.equal(log.length, 2);
    for (const [index, { sql, params }] of log.entries()) {
      const nodes = await planNodes(t.db, sql, params);
      const expected = index === 0 ? 'customers_identity_order' : 'customers_name_order';
      assert.ok(
        nodes.some((node) => node['Index Name'] === expected),
        JSON.stringify(nodes.map((node) => [node['Node Type'], node['Index Name']])),
      );
      assert.deepEqual(
        nodes.filter((node) => /Sort|Seq Scan|Bitmap/.test(node['Node Type'])).map((node) => node['Node Type']),
        [],
      );
    }
  });
});
