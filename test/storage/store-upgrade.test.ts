import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../../src/app.js';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { hashSessionId } from '../../src/auth/tables/sessions.js';
import { loadConfig } from '../../src/config.js';
import { openServices } from '../../src/services.js';
import { migrate, migrations } from '../../src/storage/migrations.js';
import { testArgon2 } from '../helpers/argon2.js';
import { FakeClock } from '../helpers/clock.js';
import { openTestCounterStore, openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { auth, RecordingTransport, requester, testSecret } from '../helpers/harness.js';
import { capturingLogger } from '../helpers/logs.js';

/**
 * A deployment made and filled by the releases before many stores, then started by this one: its
 * one store becomes the first of many, and everything its customers had keeps working.
 */
describe('the many-stores migration, on a deployment made by the releases before it', () => {
  let database: TestDatabase;
  const clock = new FakeClock();
  const customerId = randomUUID();
  const email = 'upgraded@example.com';
  const password = 'an old password 1';
  const sessionId = 'a-session-cookie-value-made-before-the-upgrade-0123456789';
  let t: Awaited<ReturnType<typeof startService>>;

  async function startService() {
    const outbox = new RecordingTransport();
    const config = loadConfig({ APP_SECRET: testSecret, DATA_DIR: '/nonexistent' });
    const services = await openServices(config, capturingLogger().logger, {
      db: database.db,
      secret: testSecret,
      clock,
      hasher: createArgon2Hasher(testArgon2),
      counters: await openTestCounterStore(),
      transports: { email: outbox, sms: outbox },
      manualDispatch: true,
      manualJanitor: true,
    });
    const app = await buildApp(services);
    await app.ready();
    return { app, services, ...requester(app, services, outbox) };
  }

  before(async () => {
    database = await openTestDatabase();
    const { db } = database;
    await db.transaction(async (tx) => {
      await tx.query(`CREATE TABLE schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      for (const migration of migrations.filter((m) => m.version < 13)) {
        await tx.exec(migration.sql);
        await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
    });
    const now = clock.now();
    const hash = await createArgon2Hasher(testArgon2).hash(password);
    await db.query(
      `INSERT INTO store (id, name, status, identity_mode, settings, created_at, updated_at)
       VALUES ('default', 'Old Shop', 'active', 'email', '{"auth.passkeys": true}', $1, $1)`,
      [now],
    );
    await db.query(
      `INSERT INTO customers (id, name, identity_type, identity_value, password_hash, verified_at, created_at, updated_at)
       VALUES ($1, 'Ada', 'email', $2, $3, $4, $4, $4)`,
      [customerId, email, hash, now],
    );
    await db.query(
      `INSERT INTO sessions (id_hash, customer_id, created_at, last_seen_at, expires_at)
       VALUES ($1, $2, $3, $3, $3::timestamptz + interval '1 day')`,
      [hashSessionId(sessionId), customerId, now],
    );
    await db.query(
      `INSERT INTO passkeys (customer_id, credential_id, public_key, counter, name, created_at)
       VALUES ($1, 'credential-1', '\\x00', 0, 'Phone', $2)`,
      [customerId, now],
    );
    await db.query(`INSERT INTO audit_events (occurred_at, event, customer_id) VALUES ($1, 'login.succeeded', $2)`, [
      now,
      customerId,
    ]);
    t = await startService();
  });
  after(async () => {
    await t?.app.close();
    await t?.services.close();
    await database.drop();
  });

  test('applies the migration at start, and the store keeps its id, name and settings', async () => {
    const [applied] = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM schema_migrations WHERE version = 13',
    );
    assert.equal(applied?.n, 1);
    assert.deepEqual(await migrate(database.db), []);
    const store = await t.services.store.get();
    assert.equal(store.id, 'default');
    assert.equal(store.slug, 'default');
    assert.equal(store.name, 'Old Shop');
    assert.equal(store.passkeys, true);
  });

  test('a session made before the upgrade is still signed in', async () => {
    const response = await t.get(`${auth}/session`, { cookie: `storefront_session=${sessionId}` });
    assert.equal(response.status, 200);
    assert.equal((response.body as { customer: { id: string } }).customer.id, customerId);
  });

  test('the passkey added before the upgrade is still the customer’s', async () => {
    const response = await t.get(`${auth}/passkeys`, { cookie: `storefront_session=${sessionId}` });
    assert.equal(response.status, 200);
    assert.deepEqual(
      (response.body as { passkeys: Array<{ name: string }> }).passkeys.map((passkey) => passkey.name),
      ['Phone'],
    );
  });

  test('the password set before the upgrade signs in', async () => {
    const response = await t.post(`${auth}/login`, { identity: email, password });
    assert.equal(response.status, 200);
  });

  test('every row the store held before belongs to it now', async () => {
    for (const table of ['customers', 'sessions', 'passkeys', 'audit_events']) {
      const rows = await database.db.query<{ store_id: string }>(`SELECT DISTINCT store_id FROM ${table}`);
      assert.deepEqual(
        rows.map((row) => row.store_id),
        ['default'],
        table,
      );
    }
  });
});
