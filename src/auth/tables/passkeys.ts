import type { Clock } from '../../clock.js';
import { isUuid, type StoreQueryable } from '../../storage/database.js';

/** A passkey as the account area shows it: never its credential id or public key. */
export interface PasskeyView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

/** What verifying an assertion needs of a stored passkey. */
export interface StoredPasskey {
  publicId: string;
  customerId: string;
  credentialId: string;
  publicKey: Uint8Array<ArrayBuffer>;
  counter: number;
  transports: string[];
}

export interface NewPasskey {
  customerId: string;
  credentialId: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  name: string;
}

interface PasskeyRow {
  public_id: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

const viewColumns = 'public_id::text AS public_id, name, created_at, last_used_at';

function toView(row: PasskeyRow): PasskeyView {
  return {
    id: row.public_id,
    name: row.name,
    created_at: new Date(row.created_at).toISOString(),
    last_used_at: row.last_used_at === null ? null : new Date(row.last_used_at).toISOString(),
  };
}

/** Stores a verified credential; null when that credential is already registered (to anyone). */
export async function insertPasskey(
  db: StoreQueryable,
  clock: Clock,
  passkey: NewPasskey,
): Promise<PasskeyView | null> {
  const rows = await db.query<PasskeyRow>(
    `INSERT INTO passkeys (store_id, customer_id, credential_id, public_key, counter, transports, name, created_at)
     VALUES ($8, $1, $2, $3, $4, $5, $6, $7) ON CONFLICT (store_id, credential_id) DO NOTHING
     RETURNING ${viewColumns}`,
    [
      passkey.customerId,
      passkey.credentialId,
      Buffer.from(passkey.publicKey),
      passkey.counter,
      passkey.transports,
      passkey.name,
      clock.now(),
      db.storeId,
    ],
  );
  return rows[0] === undefined ? null : toView(rows[0]);
}

/** The customer's passkeys, newest first. */
export async function listPasskeys(db: StoreQueryable, customerId: string): Promise<PasskeyView[]> {
  const rows = await db.query<PasskeyRow>(
    `SELECT ${viewColumns} FROM passkeys WHERE store_id = $2 AND customer_id = $1
      ORDER BY created_at DESC, public_id DESC`,
    [customerId, db.storeId],
  );
  return rows.map(toView);
}

/** The customer's credential ids and transports, so an authenticator is not registered twice. */
export async function listCredentialDescriptors(
  db: StoreQueryable,
  customerId: string,
): Promise<Array<{ id: string; transports: string[] }>> {
  const rows = await db.query<{ credential_id: string; transports: string[] }>(
    'SELECT credential_id, transports FROM passkeys WHERE store_id = $2 AND customer_id = $1',
    [customerId, db.storeId],
  );
  return rows.map((row) => ({ id: row.credential_id, transports: row.transports }));
}

export async function findPasskeyByCredentialId(
  db: StoreQueryable,
  credentialId: string,
): Promise<StoredPasskey | null> {
  const rows = await db.query<{
    public_id: string;
    customer_id: string;
    credential_id: string;
    public_key: Buffer;
    counter: string;
    transports: string[];
  }>(
    `SELECT public_id::text AS public_id, customer_id::text AS customer_id, credential_id, public_key, counter::text AS counter, transports
       FROM passkeys WHERE store_id = $2 AND credential_id = $1`,
    [credentialId, db.storeId],
  );
  const row = rows[0];
  if (row === undefined) return null;
  return {
    publicId: row.public_id,
    customerId: row.customer_id,
    credentialId: row.credential_id,
    publicKey: new Uint8Array(row.public_key),
    counter: Number(row.counter),
    transports: row.transports,
  };
}

/**
 * Whether `newCounter` may follow `storedCounter`. Authenticators that keep no counter (synced
 * passkeys) always report 0; one that does must report more than last time, or the credential
 * may have been cloned.
 */
export function counterAdvances(storedCounter: number, newCounter: number): boolean {
  return (storedCounter === 0 && newCounter === 0) || newCounter > storedCounter;
}

/**
 * Records a sign-in with the passkey: the new counter and the time. Conditional on the counter
 * still advancing, so of two assertions racing with one counter value only one is recorded.
 */
export async function recordPasskeyUse(
  tx: StoreQueryable,
  clock: Clock,
  publicId: string,
  newCounter: number,
): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE passkeys SET counter = $2, last_used_at = $3
      WHERE store_id = $4 AND public_id = $1 AND ((counter = 0 AND $2::bigint = 0) OR counter < $2::bigint)
      RETURNING 1`,
    [publicId, newCounter, clock.now(), tx.storeId],
  );
  return rows.length === 1;
}

/**
 * Deletes one of the customer's passkeys by its public handle. False when the customer has no such
 * passkey, whether the handle is malformed, unknown or another customer's: the caller answers alike.
 */
export async function removePasskey(db: StoreQueryable, customerId: string, publicId: string): Promise<boolean> {
  if (!isUuid(publicId)) return false;
  const rows = await db.query(
    'DELETE FROM passkeys WHERE store_id = $3 AND customer_id = $1 AND public_id = $2 RETURNING 1',
    [customerId, publicId, db.storeId],
  );
  return rows.length === 1;
}

/** Deletes every passkey of the customer (the first proof of control ends those added before it). */
export async function deleteCustomerPasskeys(tx: StoreQueryable, customerId: string): Promise<number> {
  const rows = await tx.query('DELETE FROM passkeys WHERE store_id = $2 AND customer_id = $1 RETURNING 1', [
    customerId,
    tx.storeId,
  ]);
  return rows.length;
}

/** How many passkeys the store's customers hold: what a move of its relying party would orphan. */
export async function countStorePasskeys(db: StoreQueryable): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM passkeys WHERE store_id = $1', [
    db.storeId,
  ]);
  return row?.n ?? 0;
}
