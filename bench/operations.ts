import { Redis } from 'ioredis';
import pg from 'pg';
import type { Backend } from './backends.js';

/**
 * What the service asked of PostgreSQL and Redis, from the servers' own counters: its database's
 * row of pg_stat_database (read from another database, so the reading is not counted), and Redis's
 * INFO commandstats (the whole server's).
 */
export interface Operations {
  /** Committed and rolled-back transactions: each statement outside a transaction is one. */
  transactions: number;
  /** Rows inserted, updated and deleted. */
  rowsWritten: number;
  /** Redis commands and script calls; undefined when the counters live in the service's process. */
  redisCommands: number | undefined;
}

/** An idle backend reports its counts only after 10 s (PGSTAT_IDLE_INTERVAL), so a reading waits that long after the load. */
export const statisticsDelayMs = 11_000;

/** Redis commands that are the benchmark's own (its readings and flushes), not the service's. */
const benchCommands = new Set(['info', 'flushdb', 'select', 'config', 'dbsize', 'client', 'hello']);

export async function readOperations(backend: Backend): Promise<Operations> {
  const client = new pg.Client({ connectionString: backend.serverUrl('postgres') });
  await client.connect();
  try {
    const { rows } = await client.query<{ transactions: string; rows_written: string }>(
      `SELECT xact_commit + xact_rollback AS transactions, tup_inserted + tup_updated + tup_deleted AS rows_written
         FROM pg_stat_database WHERE datname = $1`,
      [backend.serviceDatabase],
    );
    return {
      transactions: Number(rows[0]!.transactions),
      rowsWritten: Number(rows[0]!.rows_written),
      redisCommands: backend.redisUrl === undefined ? undefined : await redisCommands(backend.redisUrl),
    };
  } finally {
    await client.end();
  }
}

/** Calls over all commands since the server started (the server's, not one database's). */
async function redisCommands(url: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const calls = [...(await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)];
    return calls
      .filter((match) => !benchCommands.has(match[1]!.split('|')[0]!))
      .reduce((sum, match) => sum + Number(match[2]), 0);
  } finally {
    redis.disconnect();
  }
}

/** Per answer, between two readings. */
export function operationsPer(before: Operations, after: Operations, answers: number): Operations {
  const per = (from: number | undefined, to: number | undefined) =>
    from === undefined || to === undefined ? undefined : (to - from) / answers;
  return {
    transactions: per(before.transactions, after.transactions)!,
    rowsWritten: per(before.rowsWritten, after.rowsWritten)!,
    redisCommands: per(before.redisCommands, after.redisCommands),
  };
}
