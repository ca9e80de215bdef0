import type { Clock } from '../../clock.js';
import { deleteInBatch, isUuid, type Queryable, type StoreQueryable } from '../../storage/database.js';
import type { ImportRefusal } from '../rules/import-line.js';

/**
 * This module owns the `customer_imports` table: each import's report, written as it runs (every
 * batch) and kept after it ends, so its caller can follow it and read what was refused.
 */

export interface ImportCounts {
  lines: number;
  created: number;
  updated: number;
  unchanged: number;
  refused: number;
  /** Invitations queued (lines with `invite: true` whose account has no password nor a live code). */
  invited: number;
  /** The first refusals, in line order (at most `keptRefusals`). */
  refusals: ImportRefusal[];
}

export const noImportCounts = (): ImportCounts => ({
  lines: 0,
  created: 0,
  updated: 0,
  unchanged: 0,
  refused: 0,
  invited: 0,
  refusals: [],
});

export type ImportStatus = 'running' | 'done' | 'failed';

export interface ImportReport extends ImportCounts {
  id: string;
  status: ImportStatus;
  dry_run: boolean;
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

/** Refusals kept in a report: enough to fix a file's mistakes, never the whole file. */
export const keptRefusals = 100;
/**
 * A running import writes its report after every batch, a few seconds apart at most. One that has
 * not moved for this long lost its process (a crash, a restart): it is reported failed, and since
 * an import is idempotent, running it again finishes it.
 */
const stalledAfterMs = 2 * 60_000;
const interrupted =
  'interrupted before it finished (the service stopped); run it again: lines already imported are unchanged';

/**
 * Opens an import's report; false while another import of the store runs (the partial unique index
 * decides between two that start at once). A report that stalled is closed first, as failed.
 */
export async function startImport(db: StoreQueryable, clock: Clock, id: string, dryRun: boolean): Promise<boolean> {
  const now = clock.now();
  await db.query(
    `UPDATE customer_imports SET status = 'failed', error = $3, finished_at = updated_at
      WHERE store_id = $1 AND status = 'running' AND updated_at < $2`,
    [db.storeId, new Date(now.getTime() - stalledAfterMs), interrupted],
  );
  const rows = await db.query(
    `INSERT INTO customer_imports (store_id, id, status, dry_run, started_at, updated_at)
     VALUES ($1, $2, 'running', $3, $4, $4) ON CONFLICT (store_id) WHERE status = 'running' DO NOTHING RETURNING 1`,
    [db.storeId, id, dryRun, now],
  );
  return rows.length > 0;
}

/** The counts so far, and the import's end when `finished` names one. */
export async function recordImport(
  db: StoreQueryable,
  clock: Clock,
  id: string,
  counts: ImportCounts,
  finished?: { status: 'done' | 'failed'; error?: string },
): Promise<void> {
  const now = clock.now();
  await db.query(
    `UPDATE customer_imports
        SET lines = $3, created = $4, updated = $5, unchanged = $6, refused = $7, refusals = $8::jsonb,
            updated_at = $9, status = COALESCE($10, status), error = $11, invited = $12,
            finished_at = CASE WHEN $10::text IS NULL THEN NULL ELSE $9::timestamptz END
      WHERE store_id = $1 AND id = $2`,
    [
      db.storeId,
      id,
      counts.lines,
      counts.created,
      counts.updated,
      counts.unchanged,
      counts.refused,
      JSON.stringify(counts.refusals),
      now,
      finished?.status ?? null,
      finished?.error ?? null,
      counts.invited,
    ],
  );
}

interface ImportRow extends Omit<ImportReport, 'started_at' | 'finished_at'> {
  started_at: Date;
  finished_at: Date | null;
  updated_at: Date;
}

function toReport(row: ImportRow, now: Date): ImportReport {
  const stalled = row.status === 'running' && now.getTime() - new Date(row.updated_at).getTime() > stalledAfterMs;
  return {
    id: row.id,
    status: stalled ? 'failed' : row.status,
    dry_run: row.dry_run,
    lines: row.lines,
    created: row.created,
    updated: row.updated,
    unchanged: row.unchanged,
    refused: row.refused,
    invited: row.invited,
    refusals: row.refusals,
    error: stalled ? interrupted : row.error,
    started_at: new Date(row.started_at).toISOString(),
    finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
  };
}

const reportColumns =
  'id::text AS id, status, dry_run, lines, created, updated, unchanged, refused, invited, refusals, error, started_at, finished_at, updated_at';

export async function findImport(db: StoreQueryable, clock: Clock, id: string): Promise<ImportReport | null> {
  if (!isUuid(id)) return null;
  const [row] = await db.query<ImportRow>(
    `SELECT ${reportColumns} FROM customer_imports WHERE store_id = $1 AND id = $2`,
    [db.storeId, id],
  );
  return row === undefined ? null : toReport(row, clock.now());
}

/** Removes up to `limit` reports of a deleted store. */
export async function deleteStoreImports(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'customer_imports', key: ['store_id', 'id'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}
