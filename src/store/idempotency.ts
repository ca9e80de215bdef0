import { createHash } from 'node:crypto';
import { secondsBefore, type Clock } from '../clock.js';
import { deleteInBatch, type Database, type Queryable } from '../storage/database.js';

/** How long the first answer to a key is kept: a retry within it gets that answer again. */
export const idempotencyKeySeconds = 24 * 60 * 60;

/** An answer as it is kept and given again: its status and body. */
export interface KeptAnswer {
  status: number;
  body: unknown;
}

export type IdempotentResult =
  | (KeptAnswer & { replayed: boolean })
  /** The key was used within 24 hours for another request: nothing was done. */
  | { mismatch: true };

/** The same JSON for the same values whatever the order of their keys. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** What a key is bound to: the call and its body, so that the same key with another body is told apart. */
export function requestHash(call: string, body: unknown): string {
  return createHash('sha256')
    .update(`${call}\n${canonical(body)}`)
    .digest('hex');
}

/**
 * Runs `work` at most once for a key within 24 hours and keeps its answer. The key's row is written
 * first, in the same transaction as the work: a second call with the key waits on that row until
 * the first commits, then gets its answer (or, when the first rolled back, does the work itself).
 * A refusal is thrown by `work`: it rolls the key back with the work, so a retry is tried afresh
 * (the host it wanted may be free by then).
 */
export async function runOnce(
  db: Database,
  clock: Clock,
  key: string,
  hash: string,
  work: (tx: Queryable) => Promise<KeptAnswer>,
): Promise<IdempotentResult> {
  return db.transaction(async (tx) => {
    const now = clock.now();
    await tx.query('DELETE FROM idempotency_keys WHERE key = $1 AND created_at <= $2', [
      key,
      secondsBefore(now, idempotencyKeySeconds),
    ]);
    const claimed = await tx.query(
      `INSERT INTO idempotency_keys (key, request_hash, status, answer, created_at)
       VALUES ($1, $2, 0, 'null', $3) ON CONFLICT (key) DO NOTHING RETURNING 1`,
      [key, hash, now],
    );
    if (claimed.length === 0) {
      const [kept] = await tx.query<{ request_hash: string; status: number; answer: unknown }>(
        'SELECT request_hash, status, answer FROM idempotency_keys WHERE key = $1',
        [key],
      );
      // Gone between the two statements (expired and pruned): rare enough to ask for a retry.
      if (kept === undefined) throw new Error('the idempotency key was removed while it was read');
      if (kept.request_hash !== hash) return { mismatch: true as const };
      return { status: kept.status, body: kept.answer, replayed: true };
    }
    const answer = await work(tx);
    await tx.query('UPDATE idempotency_keys SET status = $2, answer = $3::text::jsonb WHERE key = $1', [
      key,
      answer.status,
      JSON.stringify(answer.body),
    ]);
    return { ...answer, replayed: false };
  });
}

/** The janitor's part: keys older than 24 hours, a batch at a time. */
export async function deleteExpiredIdempotencyKeys(db: Queryable, clock: Clock, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'idempotency_keys', key: ['key'], where: 'created_at <= $1' },
    [secondsBefore(clock.now(), idempotencyKeySeconds)],
    limit,
  );
}
