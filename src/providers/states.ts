import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { deleteInBatch, type Queryable, type StoreQueryable } from '../storage/database.js';

/**
 * The `provider_states` table: the states of provider sign-ins that have come back. A start writes
 * nothing (its state, nonce and PKCE verifier travel in the browser's sealed cookie), so a flood
 * of starts costs no rows; the callback spends its state here before anything else, and a replay
 * of the same cookie and state finds it spent.
 */

/**
 * Spends a state: true the first time, false for every later call with it. One INSERT decides,
 * so of two requests racing with the same state exactly one goes on. Kept until `expiresAt`,
 * when its cookie would be refused anyway.
 */
export async function spendProviderState(db: StoreQueryable, state: string, expiresAt: Date): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO provider_states (store_id, state_hash, expires_at) VALUES ($1, $2, $3)
     ON CONFLICT (store_id, state_hash) DO NOTHING RETURNING 1`,
    [db.storeId, createHash('sha256').update(state).digest('base64url'), expiresAt],
  );
  return rows.length > 0;
}

/** Deletes up to `limit` spent states past their cookie's life; returns how many. */
export async function deleteExpiredProviderStates(db: Queryable, clock: Clock, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'provider_states', key: ['store_id', 'state_hash'], where: 'expires_at <= $1' },
    [clock.now()],
    limit,
  );
}

/** Deletes up to `limit` states of a deleted store; returns how many. */
export async function deleteStoreProviderStates(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'provider_states', key: ['store_id', 'state_hash'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}
