import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { SignInMethod } from '../../hooks/webhook-catalogue.js';
import { deleteInBatch, type Queryable, type StoreQueryable } from '../../storage/database.js';

/** A sign-in waits this long for its second step, and the cookie that names it no longer. */
export const pendingSignInLifetimeSeconds = 5 * 60;

/** Wrong second steps a pending sign-in takes; the last one ends it. */
export const pendingSignInTries = 5;

export type PendingMethod = Exclude<SignInMethod, 'passkey'>;

export interface PendingSignIn {
  customerId: string;
  credentialVersion: number;
  method: PendingMethod;
  /** Wrong tries so far, this one included when counted by countTry. */
  failures: number;
}

function hashHandle(handle: string): string {
  return createHash('sha256').update(handle).digest('base64url');
}

/**
 * This module owns the `pending_sign_ins` table. A pending sign-in is named by a random handle
 * that goes only into the browser's cookie; the table holds its SHA-256.
 */
export async function holdSignIn(
  db: StoreQueryable,
  clock: Clock,
  pending: Omit<PendingSignIn, 'failures'>,
): Promise<string> {
  const handle = randomBytes(32).toString('base64url');
  const expiresAt = new Date(clock.now().getTime() + pendingSignInLifetimeSeconds * 1000);
  await db.query(
    `INSERT INTO pending_sign_ins (store_id, handle_hash, customer_id, credential_version, method, expires_at)
     VALUES ($6, $1, $2, $3, $4, $5)`,
    [hashHandle(handle), pending.customerId, pending.credentialVersion, pending.method, expiresAt, db.storeId],
  );
  return handle;
}

type PendingRow = { customer_id: string; credential_version: number; method: PendingMethod; failures: number };
const toPending = (row: PendingRow): PendingSignIn => ({
  customerId: row.customer_id,
  credentialVersion: row.credential_version,
  method: row.method,
  failures: row.failures,
});

/**
 * The live pending sign-in of a handle, without counting anything, with its customer's identity
 * (what the failed-login limit counts by); null when none (or expired).
 */
export async function findPendingSignIn(
  db: StoreQueryable,
  clock: Clock,
  handle: string,
): Promise<(PendingSignIn & { identityValue: string }) | null> {
  const [row] = await db.query<PendingRow & { identity_value: string }>(
    `SELECT p.customer_id::text AS customer_id, p.credential_version, p.method, p.failures, c.identity_value
       FROM pending_sign_ins p JOIN customers c ON c.store_id = p.store_id AND c.id = p.customer_id
      WHERE p.store_id = $3 AND p.handle_hash = $1 AND p.expires_at > $2`,
    [hashHandle(handle), clock.now(), db.storeId],
  );
  return row === undefined ? null : { ...toPending(row), identityValue: row.identity_value };
}

/**
 * Counts a try before it is checked, and locks the row until the transaction ends, so tries of one
 * pending sign-in take turns and never exceed the limit together. Null when there is none live.
 */
export async function countTry(tx: StoreQueryable, clock: Clock, handle: string): Promise<PendingSignIn | null> {
  const [row] = await tx.query<PendingRow>(
    `UPDATE pending_sign_ins SET failures = failures + 1
      WHERE store_id = $3 AND handle_hash = $1 AND expires_at > $2
      RETURNING customer_id::text AS customer_id, credential_version, method, failures`,
    [hashHandle(handle), clock.now(), tx.storeId],
  );
  return row === undefined ? null : toPending(row);
}

/** Ends one pending sign-in: it finished, or took its last wrong try. */
export async function endPendingSignIn(tx: StoreQueryable, handle: string): Promise<void> {
  await tx.query('DELETE FROM pending_sign_ins WHERE store_id = $2 AND handle_hash = $1', [
    hashHandle(handle),
    tx.storeId,
  ]);
}

/** Ends every pending sign-in of a customer: their second step or their credentials changed. */
export async function endCustomerPendingSignIns(tx: StoreQueryable, customerId: string): Promise<void> {
  await tx.query('DELETE FROM pending_sign_ins WHERE store_id = $2 AND customer_id = $1', [customerId, tx.storeId]);
}

/** Deletes up to `limit` expired pending sign-ins; returns how many. */
export async function deleteExpiredPendingSignIns(db: Queryable, clock: Clock, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'pending_sign_ins', key: ['store_id', 'handle_hash'], where: 'expires_at <= $1' },
    [clock.now()],
    limit,
  );
}
