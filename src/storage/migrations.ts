import type { Database, Queryable } from './database.js';
import type { Migration } from './schema/migration.js';
import { versions1To12 } from './schema/versions-01-12.js';
import { versions13To18 } from './schema/versions-13-18.js';
import { versions19On } from './schema/versions-19-on.js';

// Append only: a migration that has run anywhere is never edited. The newest go in the last file of
// schema/, until it grows past a few hundred lines and a new one starts.
export const migrations: Migration[] = [...versions1To12, ...versions13To18, ...versions19On];

// Any constant works; it only has to be the same for every instance of the service.
export const migrationLockKey = 727_274_001;

/**
 * Applies every migration not yet applied, all in one transaction. The advisory lock makes
 * concurrent starts of several instances take turns instead of racing on the same DDL. It is the
 * transaction-scoped kind, released by COMMIT or ROLLBACK: behind a pooler in transaction mode a
 * session-level lock would stay with whichever server connection ran it, held for nobody.
 */
export async function migrate(db: Database): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey]);
    return applyMigrations(tx);
  });
}

/**
 * Applies, in the caller's transaction (which holds the migration lock), every migration not yet
 * applied up to `upTo`: a restore builds the schema its rows were saved from, then runs the rest.
 */
export async function applyMigrations(tx: Queryable, upTo = Infinity): Promise<number[]> {
  await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  const rows = await tx.query<{ version: number }>('SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((row) => row.version));
  const ran: number[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.version) || migration.version > upTo) continue;
    await tx.exec(migration.sql);
    await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
      migration.version,
      migration.name,
    ]);
    ran.push(migration.version);
  }
  return ran;
}
