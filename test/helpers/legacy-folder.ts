import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { hashSessionId } from '../../src/auth/tables/sessions.js';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { testArgon2 } from './argon2.js';
import { migrations } from '../../src/storage/migrations.js';

/**
 * Data folders of the PGlite-based embedded mode of earlier versions, made with PGlite itself. Its
 * schema is this project's migrations up to the last one that version had (2): migrations are
 * append-only, so those are the statements it ran, in the schema_migrations table it kept.
 */

export const legacyMigrationVersion = 2;

export const legacyCustomers = {
  ada: { id: '0195f3c4-0000-7000-8000-00000000a0a0', email: 'ada@example.com', password: 'analytical engine 1843' },
  grace: { id: '0195f3c4-0000-7000-8000-00000000b0b0', email: 'grace@example.com', password: 'compiler cobol 1959' },
};

/** The cookie value of Ada's session; the folder stores only its hash, as every version did. */
export const legacySessionId = 'legacy-session-of-ada-0123456789abcdef';
export const legacyChallengeId = '0195f3c4-0000-7000-8000-0000000c0de0';
export const legacyStoreName = 'Corner Shop';

export interface LegacyFolders {
  /** A PGlite folder with no tables: what PGlite makes in an empty folder. */
  empty: string;
  /** The earlier version's tables with a store, two customers, a code, a session, messages, events. */
  seeded: string;
}

/**
 * Makes both folders under `parent`, with every timestamp relative to `now`. PGlite keeps its
 * WebAssembly memory for the life of the process, so a test file makes them once and copies them.
 */
export async function makeLegacyFolders(parent: string, now: Date): Promise<LegacyFolders> {
  const empty = path.join(parent, 'empty-pgdata');
  const seeded = path.join(parent, 'seeded-pgdata');
  const pg = await PGlite.create({ dataDir: empty });
  await pg.close();
  fs.cpSync(empty, seeded, { recursive: true });

  const db = await PGlite.create({ dataDir: seeded });
  try {
    await db.exec(`CREATE TABLE schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const migration of migrations.filter((m) => m.version <= legacyMigrationVersion)) {
      await db.exec(migration.sql);
      await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
    }
    const at = (seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString();
    const hasher = createArgon2Hasher(testArgon2);
    await db.query(
      `INSERT INTO store (id, name, status, identity_mode, settings, created_at, updated_at)
       VALUES ('default', $1, 'active', 'email', '{"auth.customer_verification_required": true}', $2, $2)`,
      [legacyStoreName, at(-86_400 * 100)],
    );
    const { ada, grace } = legacyCustomers;
    await db.query(
      `INSERT INTO customers (id, name, identity_type, identity_value, password_hash, verified_at, created_at, updated_at)
       VALUES ($1, 'Ada Lovelace', 'email', $2, $3, $4, $4, $4), ($5, 'Grace Hopper', 'email', $6, $7, NULL, $8, $8)`,
      [
        ada.id,
        ada.email,
        await hasher.hash(ada.password),
        at(-86_400 * 50),
        grace.id,
        grace.email,
        await hasher.hash(grace.password),
        at(-600),
      ],
    );
    await db.query(
      `INSERT INTO challenges (id, customer_id, purpose, code_mac, attempts, created_at, expires_at)
       VALUES ($1, $2, 'verification', 'mac-of-a-code', 1, $3, $4)`,
      [legacyChallengeId, grace.id, at(-600), at(-600 + 600)],
    );
    await db.query(
      `INSERT INTO sessions (id_hash, customer_id, created_at, last_seen_at, expires_at)
       VALUES ($1, $2, $3, $3, $4)`,
      [hashSessionId(legacySessionId), ada.id, at(-3_600), at(-3_600 + 30 * 86_400)],
    );
    // Three messages, the middle one deleted: the ids left are 1 and 3.
    for (const [recipient, purpose, challenge] of [
      [grace.email, 'verification', legacyChallengeId],
      [ada.email, 'password_changed', null],
      [ada.email, 'password_changed', null],
    ] as const) {
      await db.query(
        `INSERT INTO outbox (channel, purpose, recipient, sealed_body, challenge_id, status, attempts,
                             next_attempt_at, window_started_at, created_at, updated_at, sent_at)
         VALUES ('email', $1, $2, NULL, $3, 'sent', 1, $4, $4, $4, $4, $4)`,
        [purpose, recipient, challenge, at(-600)],
      );
    }
    await db.query('DELETE FROM outbox WHERE id = 2');
    for (const [event, customer] of [
      ['customer.registered', ada.id],
      ['login.succeeded', ada.id],
      ['customer.registered', grace.id],
    ] as const) {
      await db.query(
        `INSERT INTO audit_events (occurred_at, event, customer_id, client_address, request_id, details)
         VALUES ($1, $2, $3, '203.0.113.7', 'req-1', '{"method": "password"}')`,
        [at(-3_600), event, customer],
      );
    }
  } finally {
    await db.close();
  }
  return { empty, seeded };
}
