import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { deleteInBatch, type Queryable, type StoreQueryable } from '../../storage/database.js';

/** A ceremony's challenge lives this long, and the cookie that names it no longer. */
export const passkeyChallengeLifetimeSeconds = 5 * 60;

export type PasskeyCeremony = 'register' | 'login';

function hashHandle(handle: string): string {
  return createHash('sha256').update(handle).digest('base64url');
}

/**
 * Keeps a ceremony's challenge under a new random handle and returns the handle, which goes only
 * into the asking browser's cookie. The table holds the handle's SHA-256, so reading it gives no
 * browser's handle. A registration challenge also names the customer it was made for.
 */
export async function storePasskeyChallenge(
  db: StoreQueryable,
  clock: Clock,
  ceremony: PasskeyCeremony,
  challenge: string,
  customerId: string | null,
): Promise<string> {
  const handle = randomBytes(32).toString('base64url');
  const expiresAt = new Date(clock.now().getTime() + passkeyChallengeLifetimeSeconds * 1000);
  await db.query(
    `INSERT INTO passkey_challenges (store_id, handle_hash, purpose, customer_id, challenge, expires_at)
     VALUES ($6, $1, $2, $3, $4, $5)`,
    [hashHandle(handle), ceremony, customerId, challenge, expiresAt, db.storeId],
  );
  return handle;
}

/**
 * Spends the challenge the handle names: one DELETE ... RETURNING, so of any number of requests
 * carrying the same handle exactly one gets it, expired or not. Null when there is none for this
 * ceremony, or it has expired.
 */
export async function takePasskeyChallenge(
  db: StoreQueryable,
  clock: Clock,
  ceremony: PasskeyCeremony,
  handle: string,
): Promise<{ challenge: string; customerId: string | null } | null> {
  const rows = await db.query<{ challenge: string; customer_id: string | null; live: boolean }>(
    `DELETE FROM passkey_challenges WHERE store_id = $4 AND handle_hash = $1 AND purpose = $2
     RETURNING challenge, customer_id::text AS customer_id, expires_at > $3 AS live`,
    [hashHandle(handle), ceremony, clock.now(), db.storeId],
  );
  const row = rows[0];
  return row === undefined || !row.live ? null : { challenge: row.challenge, customerId: row.customer_id };
}

/** Deletes up to `limit` expired challenges (never asked back for); returns how many. */
export async function deleteExpiredPasskeyChallenges(db: Queryable, clock: Clock, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'passkey_challenges', key: ['store_id', 'handle_hash'], where: 'expires_at <= $1' },
    [clock.now()],
    limit,
  );
}

/** Deletes up to `limit` challenges of a deleted store; returns how many. */
export async function deleteStorePasskeyChallenges(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'passkey_challenges', key: ['store_id', 'handle_hash'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}
