import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { updateStore } from '../../src/store/store.js';
import type { Database } from '../../src/storage/database.js';
import { auth, createHarness, registeredCustomer, type TestApp } from '../helpers/harness.js';
import { testBackends } from '../helpers/database.js';
import { recording, type Recorded } from '../helpers/recording-db.js';

/** Rows seeded into each growing table, so a sequential scan would cost the planner more than an index. */
const seededRows = 10_000;
const growingTables = ['customers', 'sessions', 'challenges', 'outbox', 'audit_events', 'known_devices'];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function seqScans(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] !== undefined ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap(seqScans)];
}

/**
 * Seeds every growing table with `seededRows` rows (plain SQL, not through the API), leaving the
 * planner's statistics current, as autovacuum would on a real deployment. Finished codes and sent
 * messages are two days old.
 */
async function seed(db: Database, passwordHash: string, at: Date): Promise<void> {
  // The service's clock, not the server's: the rows must be as old as the service will think.
  const now = `'${at.toISOString()}'::timestamptz`;
  await db.exec(`
    INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, verified_at, created_at, updated_at)
      SELECT 'default', gen_random_uuid(), 'Seeded ' || n, 'email', 'seeded-' || n || '@example.com', '${passwordHash}', ${now}, ${now}, ${now}
        FROM generate_series(1, ${seededRows}) AS n;
    INSERT INTO sessions (store_id, id_hash, customer_id, created_at, last_seen_at, expires_at)
      SELECT store_id, md5(id::text), id, ${now}, ${now}, ${now} + interval '1 day' FROM customers WHERE name LIKE 'Seeded %';
    INSERT INTO challenges (store_id, id, customer_id, purpose, code_mac, created_at, expires_at, consumed_at)
      SELECT store_id, gen_random_uuid(), id, 'verification', md5(id::text), ${now} - interval '2 days', ${now} - interval '1 day', ${now} - interval '2 days'
        FROM customers WHERE name LIKE 'Seeded %';
    INSERT INTO outbox (store_id, channel, purpose, recipient, status, next_attempt_at, window_started_at, created_at, updated_at, sent_at)
      SELECT store_id, 'email', 'verification', identity_value, 'sent', ${now} - interval '2 days', ${now} - interval '2 days',
             ${now} - interval '2 days', ${now} - interval '2 days', ${now} - interval '2 days'
        FROM customers WHERE name LIKE 'Seeded %';
    INSERT INTO audit_events (store_id, occurred_at, event, customer_id)
      SELECT store_id, ${now} - interval '2 days', 'login_succeeded', id FROM customers WHERE name LIKE 'Seeded %';
    INSERT INTO known_devices (store_id, customer_id, family, masked_address, last_seen_at)
      SELECT store_id, id, 'Firefox on Linux', '192.0.2.0/24', ${now} - interval '2 days' FROM customers WHERE name LIKE 'Seeded %';
    ANALYZE;
  `);
}

/**
 * The statements behind the hot paths (login's lookup by identity and its session insert, the
 * session read by id hash, logout, the code flows' challenge lookups, the outbox claim and the
 * requests that answer 202) must each reach their rows through an index once the tables hold
 * thousands of rows: the planner's own choice, with sequential scans allowed.
 */
describe(`query plans of the hot paths (${testBackends.database})`, () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  let t: TestApp;
  const log: Recorded[] = [];

  before(async () => {
    harness = await createHarness();
    t = await harness.start({ overrides: { db: recording(harness.db, log) } });
    await seed(harness.db, await t.services.hasher.hash('seeded password 1234'), t.clock.now());
    assert.ok((await updateStore(t.db, t.clock, { signInWithCode: true })).ok);
    t.services.store.invalidate();
    log.length = 0; // the start's migrations and the seeding are not hot paths

    // The hot paths, through the HTTP API, with the statements they send recorded.
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    assert.equal((await t.post(`${auth}/verify`, { identity: customer.identity, code })).status, 200);
    const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    assert.equal(login.status, 200);
    const cookie = login.cookies.find((c) => c.name === 'storefront_session');
    assert.ok(cookie);
    const session = `storefront_session=${cookie.value}`;
    assert.equal((await t.get(`${auth}/session`, { cookie: session })).status, 200);
    assert.equal((await t.post(`${auth}/login`, { identity: 'seeded-7@example.com', password: 'wrong' })).status, 401);
    assert.equal((await t.post(`${auth}/verification/resend`, { identity: 'seeded-8@example.com' })).status, 202);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
    assert.equal((await t.post(`${auth}/code/request`, { identity: customer.identity })).status, 202);
    const signInCode = await t.codeFor(customer.identity, 'sign_in');
    const codeLogin = await t.post(`${auth}/code/login`, { identity: customer.identity, code: signInCode });
    assert.equal(codeLogin.status, 200);
    await t.deliver();
  });
  after(async () => harness.close());

  test('no hot statement scans a whole growing table', async () => {
    const statements = new Map<string, Recorded>();
    for (const entry of log) {
      if (/^\s*(BEGIN|COMMIT|ROLLBACK|SET|SAVEPOINT|RELEASE|SELECT pg_advisory)/i.test(entry.sql)) continue;
      if (!statements.has(entry.sql)) statements.set(entry.sql, entry);
    }
    const touched = [...statements.keys()].join('\n');
    // The flows above really ran the statements this test is about.
    for (const needle of [
      'WHERE store_id = $1 AND identity_type = $2 AND identity_value = $3',
      'INSERT INTO sessions',
      'WHERE s.store_id = $4 AND s.id_hash = $1',
      'FROM challenges',
      'UPDATE outbox SET locked_until',
    ])
      assert.ok(touched.includes(needle), `no recorded statement contains ${needle}`);

    const scanning: string[] = [];
    for (const { sql, params } of statements.values()) {
      const [row] = await harness.db
        .query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${sql}`, params)
        .catch((error: unknown) => assert.fail(`EXPLAIN ${sql}: ${String(error)}`));
      const scanned = seqScans(row!['QUERY PLAN'][0]!.Plan).filter((table) => growingTables.includes(table));
      if (scanned.length > 0) scanning.push(`${scanned.join(', ')}: ${sql.replace(/\s+/g, ' ').slice(0, 200)}`);
    }
    assert.ok(statements.size >= 10, `only ${statements.size} statements were recorded`);
    assert.deepEqual(scanning, []);
  });

  test('the check sees a sequential scan when a statement has no index to use', async () => {
    const [row] = await harness.db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) SELECT id FROM customers WHERE name = $1`,
      ['Seeded 7'],
    );
    assert.deepEqual(seqScans(row!['QUERY PLAN'][0]!.Plan), ['customers']);
  });
});
