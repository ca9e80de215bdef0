import type { StoreQueryable } from '../../storage/database.js';

/** A customer's second step: the sealed TOTP secret, the last step accepted, the recovery codes' MACs. */
export interface SecondStepRow {
  sealed_secret: string;
  confirmed_at: Date | null;
  last_step: number;
  recovery_hashes: Buffer[];
}

/**
 * This module owns the `second_steps` table. Every change runs with the customer row locked
 * (lockCustomer), so a confirmation, a use and a removal of one customer's second step take turns.
 */

export async function findSecondStep(db: StoreQueryable, customerId: string): Promise<SecondStepRow | null> {
  const [row] = await db.query<SecondStepRow & { last_step: string }>(
    `SELECT sealed_secret, confirmed_at, last_step, recovery_hashes FROM second_steps
      WHERE store_id = $2 AND customer_id = $1`,
    [customerId, db.storeId],
  );
  return row === undefined ? null : { ...row, last_step: Number(row.last_step) };
}

/** A new, unconfirmed secret, replacing an unconfirmed one; a confirmed one is never replaced here. */
export async function putUnconfirmedSecret(
  tx: StoreQueryable,
  customerId: string,
  sealedSecret: string,
): Promise<void> {
  await tx.query(
    `INSERT INTO second_steps (store_id, customer_id, sealed_secret) VALUES ($3, $1, $2)
     ON CONFLICT (store_id, customer_id) DO UPDATE SET sealed_secret = EXCLUDED.sealed_secret, last_step = 0,
        recovery_hashes = '{}' WHERE second_steps.confirmed_at IS NULL`,
    [customerId, sealedSecret, tx.storeId],
  );
}

/** Confirms the secret with the step its first code used, and keeps the recovery codes' MACs. */
export async function confirmSecondStep(
  tx: StoreQueryable,
  customerId: string,
  step: number,
  recoveryHashes: Buffer[],
  now: Date,
): Promise<void> {
  await tx.query(
    `UPDATE second_steps SET confirmed_at = $2, last_step = $3, recovery_hashes = $4
      WHERE store_id = $5 AND customer_id = $1`,
    [customerId, now, step, recoveryHashes, tx.storeId],
  );
}

/**
 * Records a step as used; false when it is not later than the last one accepted (a replay, or a
 * code older than one already used).
 */
export async function useStep(tx: StoreQueryable, customerId: string, step: number): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE second_steps SET last_step = $2 WHERE store_id = $3 AND customer_id = $1 AND last_step < $2 RETURNING 1`,
    [customerId, step, tx.storeId],
  );
  return rows.length === 1;
}

/** Spends one recovery code by its MAC; the codes left, or null when none of them had it. */
export async function useRecoveryCode(
  tx: StoreQueryable,
  customerId: string,
  hashes: Buffer[],
): Promise<number | null> {
  const [row] = await tx.query<{ left: number }>(
    `UPDATE second_steps
        SET recovery_hashes = (SELECT coalesce(array_agg(h), '{}') FROM unnest(recovery_hashes) AS h WHERE h <> ALL ($2))
      WHERE store_id = $3 AND customer_id = $1 AND recovery_hashes && $2
      RETURNING cardinality(recovery_hashes) AS left`,
    [customerId, hashes, tx.storeId],
  );
  return row === undefined ? null : Number(row.left);
}

/** Replaces every recovery code. */
export async function replaceRecoveryCodes(tx: StoreQueryable, customerId: string, hashes: Buffer[]): Promise<void> {
  await tx.query('UPDATE second_steps SET recovery_hashes = $2 WHERE store_id = $3 AND customer_id = $1', [
    customerId,
    hashes,
    tx.storeId,
  ]);
}

export async function deleteSecondStep(tx: StoreQueryable, customerId: string): Promise<void> {
  await tx.query('DELETE FROM second_steps WHERE store_id = $2 AND customer_id = $1', [customerId, tx.storeId]);
}
