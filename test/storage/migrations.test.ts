import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { migrate, migrations } from '../../src/storage/migrations.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';

/** Migrations met by a database that earlier releases made and filled. */

describe('the proof-of-control migration, on a database made by the migrations before it', () => {
  let database: TestDatabase;
  const proven = randomUUID();
  const unproven = randomUUID();

  before(async () => {
    database = await openTestDatabase();
    const { db } = database;
    await db.transaction(async (tx) => {
      await tx.query(`CREATE TABLE schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      for (const migration of migrations.filter((m) => m.version < 12)) {
        await tx.exec(migration.sql);
        await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
    });
    for (const [id, verifiedAt] of [
      [proven, new Date('2026-01-01T00:00:00Z')],
      [unproven, null],
    ] as const) {
      await db.query(
        `INSERT INTO customers (id, name, identity_type, identity_value, password_hash, verified_at, created_at, updated_at)
         VALUES ($1, 'A', 'email', $2, '$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA', $3, now(), now())`,
        [id, `${id}@example.com`, verifiedAt],
      );
      await db.query(
        `INSERT INTO passkeys (customer_id, credential_id, public_key, counter, name, created_at)
         VALUES ($1, $2, '\\x00', 0, 'Phone', now())`,
        [id, `credential-${id}`],
      );
    }
    assert.deepEqual(await migrate(db), [12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26]);
  });
  after(async () => database.drop());

  test('removes the passkeys of accounts whose identity is unproven and keeps the others', async () => {
    const rows = await database.db.query<{ customer_id: string }>(
      'SELECT customer_id::text AS customer_id FROM passkeys',
    );
    assert.deepEqual(
      rows.map((row) => row.customer_id),
      [proven],
    );
  });

  test('keeps every customer and password, and lets a password be retired', async () => {
    const { db } = database;
    const rows = await db.query<{ id: string; password_hash: string | null }>(
      'SELECT id::text AS id, password_hash FROM customers ORDER BY id',
    );
    assert.equal(rows.length, 2);
    assert.ok(rows.every((row) => row.password_hash !== null));
    await db.query('UPDATE customers SET password_hash = NULL WHERE id = $1', [unproven]);
  });
});

describe('the outbox_customer migration, on a database made by the migrations before it', () => {
  let database: TestDatabase;
  const ada = randomUUID();
  const grace = randomUUID();
  const code = randomUUID();

  before(async () => {
    database = await openTestDatabase();
    const { db } = database;
    await db.transaction(async (tx) => {
      await tx.query(`CREATE TABLE schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      for (const migration of migrations.filter((m) => m.version < 10)) {
        await tx.exec(migration.sql);
        await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
    });
    for (const [id, email] of [
      [ada, 'ada@example.com'],
      [grace, 'grace@example.com'],
    ] as const) {
      await db.query(
        `INSERT INTO customers (id, name, identity_type, identity_value, password_hash, created_at, updated_at)
         VALUES ($1, 'A', 'email', $2, '$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA', now(), now())`,
        [id, email],
      );
    }
    await db.query(
      `INSERT INTO challenges (id, customer_id, purpose, code_mac, created_at, expires_at)
       VALUES ($1, $2, 'identity_change', 'mac', now(), now() + interval '10 minutes')`,
      [code, ada],
    );
    // In order: a code's message to an address that is no one's yet, a notice to Grace's address,
    // and a notice to an address no customer has any more.
    for (const [purpose, recipient, challenge] of [
      ['identity_change', 'ada.new@example.org', code],
      ['password_changed', 'grace@example.com', null],
      ['identity_changed', 'ada.old@example.com', null],
    ] as const) {
      await db.query(
        `INSERT INTO outbox (channel, purpose, recipient, challenge_id, status, next_attempt_at, window_started_at,
                             created_at, updated_at)
         VALUES ('email', $1, $2, $3, 'pending', now(), now(), now(), now())`,
        [purpose, recipient, challenge],
      );
    }
    assert.deepEqual(
      await migrate(db),
      migrations.filter((m) => m.version >= 10).map((m) => m.version),
    );
  });
  after(async () => database.drop());

  test("gives each message its customer, from its code or else its address, and the first store's id", async () => {
    const rows = await database.db.query<{ purpose: string; customer_id: string | null; store_id: string }>(
      'SELECT purpose, customer_id::text AS customer_id, store_id FROM outbox ORDER BY id',
    );
    assert.deepEqual(rows, [
      { purpose: 'identity_change', customer_id: ada, store_id: 'default' },
      { purpose: 'password_changed', customer_id: grace, store_id: 'default' },
      { purpose: 'identity_changed', customer_id: null, store_id: 'default' },
    ]);
  });
});
