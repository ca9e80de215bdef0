import { Redis } from 'ioredis';
import pg from 'pg';
import type { Backend } from './backends.js';

/**
 * What the service asked of PostgreSQL and Redis, from the servers' own counters: the service's
 * database's row of pg_stat_database (read from another database, so the reading is not counted),
 * and Redis's INFO commandstats.
 */
export interface Operations {
  /** Committed and rolled-back transactions: each statement outside a transaction is one. */
  transactions: number;
  /** Rows inserted, updated and deleted. */
  rowsWritten: number;
  /** Redis commands and script calls; undefined when the counters live in the service's process. */
  redisCommands: number | undefined;
}

/**
 * A backend reports its counts to pg_stat_database at most once a second while busy, and once idle
 * only after 10 s (PGSTAT_IDLE_INTERVAL), so a reading is taken that long after the load.
 */
export const statisticsDelayMs = 11_000;

/** Redis commands that are the benchmark's own (its readings and flushes), not the service's. */
const benchCommands = new Set(['info', 'flushdb', 'select', 'config', 'dbsize', 'client', 'hello']);

export async function readOperations(backend: Backend): Promise<Operations> {
  const client = new pg.Client({ connectionString: backend.serverUrl('postgres') });
  await client.connect();
  let row: { transactions: string; rows_written: string };
  try {
    [row] = (
      await client.query<typeof row>(
        `SELECT xact_commit + xact_rollback AS transactions, tup_inserted + tup_updated + tup_deleted AS rows_written
           FROM pg_stat_database WHERE datname = $1`,
        [backend.serviceDatabase],
      )
    ).rows as [typeof row];
  } finally {
    await client.end();
  }
  return {
    transactions: Number(row.transactions),
    rowsWritten: Number(row.rows_written),
    redisCommands: backend.redisUrl === undefined ? undefined : await redisCommands(backend.redisUrl),
  };
}

/** Calls over all commands since the server started (the server's, not one database's). */
async function redisCommands(url: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const text = await redis.info('commandstats');
    let calls = 0;
    for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
      if (!benchCommands.has(match[1]!.split('|')[0]!)) calls += Number(match[2]);
    return calls;
  } finally {
    redis.disconnect();
  }
}

/** Per answer, between two readings. */
export function operationsPer(before: Operations, after: Operations, answers: number): Operations {
  const per = (from: number, to: number) => (to - from) / answers;
  return {
    transactions: per(before.transactions, after.transactions),
    rowsWritten: per(before.rowsWritten, after.rowsWritten),
    redisCommands:
      before.redisCommands === undefined || after.redisCommands === undefined
        ? undefined
        : per(before.redisCommands, after.redisCommands),
  };
}
