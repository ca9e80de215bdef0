import type { IdentityMode } from '../../config.js';
import { deleteInBatch, isUuid, prepared, type Queryable, type StoreQueryable } from '../../storage/database.js';
import { displayIdentity, type ParsedIdentity } from '../rules/identity.js';

export interface CustomerRow {
  id: string;
  name: string;
  identity_type: IdentityMode;
  identity_value: string;
  /** Null once retired: a proof of control that set no password ended the one set before it. */
  password_hash: string | null;
  verified_at: Date | null;
  /** Raised by every change of password; sessions are only opened against the current one. */
  credential_version: number;
  /** The language the customer chose or their browser asked for at registration; null: the store's default. */
  locale: string | null;
  /** Set by the platform's staff: no session opens while the block holds (see isBlocked). */
  blocked_at: Date | null;
  /** When a block ends by itself; null: it holds until lifted. */
  blocked_until: Date | null;
  /** A confirmed second step (TOTP): a sign-in by password, code or provider waits for it. */
  two_factor: boolean;
}

/** The Customer resource as the API shows it. */
export interface Customer {
  id: string;
  name: string;
  identity: { type: IdentityMode; value: string; verified_at: string | null };
  /** False for an account made by a provider or whose password a proof of control retired. */
  has_password: boolean;
}

export function toCustomer(row: CustomerRow): Customer {
  return {
    id: row.id,
    name: row.name,
    identity: {
      type: row.identity_type,
      // Shown as the customer reads it (an internationalized domain in Unicode), stored in ASCII.
      value: displayIdentity(row.identity_type, row.identity_value),
      verified_at: row.verified_at === null ? null : new Date(row.verified_at).toISOString(),
    },
    has_password: row.password_hash !== null,
  };
}

/**
 * This module owns the `customers` table: every statement that reads or writes it outside a join
 * lives here. A change to the table's columns touches this file and the migrations only.
 */
const columnNames = [
  'id',
  'name',
  'identity_type',
  'identity_value',
  'password_hash',
  'verified_at',
  'credential_version',
  'locale',
  'blocked_at',
  'blocked_until',
  'two_factor',
];
export const customerColumns = columnNames.join(', ');

/** The customer columns named through a table alias, for a join (`c.id, c.name, …`). */
export function customerColumnsOf(alias: string): string {
  return columnNames.map((column) => `${alias}.${column}`).join(', ');
}

/** Whether an account already holds the identity (a read outside any transaction). */
export async function identityTaken(db: StoreQueryable, type: IdentityMode, value: string): Promise<boolean> {
  const rows = await db.query(
    'SELECT 1 FROM customers WHERE store_id = $3 AND identity_type = $1 AND identity_value = $2',
    [type, value, db.storeId],
  );
  return rows.length > 0;
}

/**
 * Adds a customer; null when the identity is taken. The unique index decides between concurrent
 * registrations of one identity: one row wins. A registration's customer is unverified and has a
 * password; a provider's has proven its identity (a verified email) and has none.
 */
export async function insertCustomer(
  tx: StoreQueryable,
  customer: {
    id: string;
    name: string;
    type: IdentityMode;
    value: string;
    passwordHash: string | null;
    now: Date;
    verified?: boolean;
    /** The language recorded for its messages; null: the store's default. */
    locale?: string | null;
  },
): Promise<CustomerRow | null> {
  const [row] = await tx.query<CustomerRow>(
    `INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, verified_at, created_at,
                            updated_at, locale)
     VALUES ($7, $1, $2, $3, $4, $5, CASE WHEN $8 THEN $6::timestamptz END, $6, $6, $9)
     ON CONFLICT (store_id, identity_type, identity_value) DO NOTHING RETURNING ${customerColumns}`,
    [
      customer.id,
      customer.name,
      customer.type,
      customer.value,
      customer.passwordHash,
      customer.now,
      tx.storeId,
      customer.verified === true,
      customer.locale ?? null,
    ],
  );
  return row ?? null;
}

/** Holds off new customers until the caller's transaction ends; reading stays open. */
export async function lockCustomers(tx: StoreQueryable): Promise<void> {
  await tx.query('LOCK TABLE customers IN SHARE ROW EXCLUSIVE MODE');
}

/** How many customers the store has (it may change its identity mode only while there are none). */
export async function countCustomers(db: StoreQueryable): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers WHERE store_id = $1', [
    db.storeId,
  ]);
  return row?.n ?? 0;
}

/**
 * Stores the same password under new hashing parameters (or, `from` null, the password the store's
 * old system vouched for). The credential version stays, and so do sessions; nothing changes when
 * the password was replaced since it was read.
 */
export async function upgradePasswordHash(
  db: StoreQueryable,
  id: string,
  from: string | null,
  to: string,
): Promise<void> {
  await db.query(
    'UPDATE customers SET password_hash = $2 WHERE store_id = $4 AND id = $1 AND password_hash IS NOT DISTINCT FROM $3',
    [id, to, from, db.storeId],
  );
}

/** A customer named by id, or by an identity as the edge parsed it (none when it did not parse). */
export type CustomerKey = { id: string } | Pick<ParsedIdentity, 'mode' | 'value'>;

// Built once per key kind, as every read of one customer is; a login's lookup is a named statement.
const byId = prepared(`SELECT ${customerColumns} FROM customers WHERE store_id = $1 AND id = $2`);
const byIdentity = prepared(`SELECT ${customerColumns} FROM customers
  WHERE store_id = $1 AND identity_type = $2 AND identity_value = $3`);

/** An id that is not a UUID names no customer: it is answered as one that does not exist, never sent to the server. */
async function selectCustomer(db: StoreQueryable, key: CustomerKey, locking: string): Promise<CustomerRow | null> {
  if ('id' in key) {
    if (!isUuid(key.id)) return null;
    return (await db.query<CustomerRow>(byId + locking, [db.storeId, key.id]))[0] ?? null;
  }
  if (key.value === null) return null;
  return (await db.query<CustomerRow>(byIdentity + locking, [db.storeId, key.mode, key.value]))[0] ?? null;
}

/** The customer holding the identity; null when none does, or the identity did not parse. */
export async function findCustomerByIdentity(
  db: StoreQueryable,
  identity: Pick<ParsedIdentity, 'mode' | 'value'>,
): Promise<CustomerRow | null> {
  return selectCustomer(db, identity, '');
}

/** The customer with this id; null when none has it, or it is not an id at all. */
export async function findCustomerById(db: StoreQueryable, id: string): Promise<CustomerRow | null> {
  return selectCustomer(db, { id }, '');
}

/** When the account was made: part of the customer's data export, not of the Customer resource. */
export async function customerCreatedAt(db: StoreQueryable, id: string): Promise<string | null> {
  const rows = await db.query<{ created_at: Date }>(
    'SELECT created_at FROM customers WHERE store_id = $2 AND id = $1',
    [id, db.storeId],
  );
  return rows[0] === undefined ? null : new Date(rows[0].created_at).toISOString();
}

/** Deletes the customer row; whatever still references it by foreign key goes with it. */
export async function deleteCustomer(tx: StoreQueryable, id: string): Promise<boolean> {
  const rows = await tx.query('DELETE FROM customers WHERE store_id = $2 AND id = $1 RETURNING 1', [id, tx.storeId]);
  return rows.length === 1;
}

/**
 * Records the first proof of control of the identity (verified_at, while it is still null) and
 * returns the row. With `retirePassword` the password set before the proof ends with it: no hash,
 * and a new credential version, so no login that checked the old one opens a session. A second
 * step the claimant set up ends too (proveControl removes its secret).
 */
export async function markProven(
  tx: StoreQueryable,
  id: string,
  now: Date,
  { retirePassword }: { retirePassword: boolean },
): Promise<CustomerRow> {
  const [row] = await tx.query<CustomerRow>(
    `UPDATE customers
        SET verified_at = $2, updated_at = $2,
            password_hash = CASE WHEN $3 THEN NULL ELSE password_hash END,
            credential_version = credential_version + CASE WHEN $3 THEN 1 ELSE 0 END,
            two_factor = false
      WHERE store_id = $4 AND id = $1 AND verified_at IS NULL RETURNING ${customerColumns}`,
    [id, now, retirePassword, tx.storeId],
  );
  return row ?? (await findCustomerById(tx, id))!;
}

/**
 * The customer's row, locked until the transaction ends: changes of credentials queue behind it.
 * The one way any flow locks a customer, by id or by identity.
 */
export async function lockCustomer(tx: StoreQueryable, key: CustomerKey): Promise<CustomerRow | null> {
  return selectCustomer(tx, key, ' FOR UPDATE');
}

/** Turns the customer's second step on or off, with the caller's change of their second_steps row. */
export async function setTwoFactor(tx: StoreQueryable, id: string, on: boolean, now: Date): Promise<void> {
  await tx.query('UPDATE customers SET two_factor = $2, updated_at = $3 WHERE store_id = $4 AND id = $1', [
    id,
    on,
    now,
    tx.storeId,
  ]);
}

/**
 * Replaces the password and raises the credential version, so no session can be opened against
 * the old one any more (see createSession). Returns the new version.
 */
export async function replacePassword(
  tx: StoreQueryable,
  id: string,
  passwordHash: string,
  now: Date,
): Promise<number> {
  const [row] = await tx.query<{ credential_version: number }>(
    `UPDATE customers SET password_hash = $2, credential_version = credential_version + 1, updated_at = $3
      WHERE store_id = $4 AND id = $1 RETURNING credential_version`,
    [id, passwordHash, now, tx.storeId],
  );
  return row!.credential_version;
}

/**
 * Sets the display name and the locale, each when given (a null locale: the store's default);
 * null when the customer is gone.
 */
export async function updateCustomerProfile(
  db: StoreQueryable,
  id: string,
  change: { name?: string | undefined; locale?: string | null | undefined },
  now: Date,
): Promise<CustomerRow | null> {
  const rows = await db.query<CustomerRow>(
    `UPDATE customers SET name = COALESCE($2, name), locale = CASE WHEN $5 THEN $6 ELSE locale END, updated_at = $3
      WHERE store_id = $4 AND id = $1 RETURNING ${customerColumns}`,
    [id, change.name ?? null, now, db.storeId, change.locale !== undefined, change.locale ?? null],
  );
  return rows[0] ?? null;
}

/**
 * Moves the customer to another identity, verified at `verifiedAt` (by default `now`: the change
 * was proven with a code; staff may say it is not); null when an account already has it.
 * The unique index decides against a concurrent switch or registration: its violation is undone
 * to a savepoint, so the caller's transaction (and the code it spent) still commits.
 */
export async function switchIdentity(
  tx: StoreQueryable,
  id: string,
  type: IdentityMode,
  value: string,
  now: Date,
  verifiedAt: Date | null = now,
): Promise<CustomerRow | null> {
  await tx.query('SAVEPOINT switch_identity');
  try {
    const [row] = await tx.query<CustomerRow>(
      `UPDATE customers SET identity_type = $2, identity_value = $3, verified_at = $6, updated_at = $4
        WHERE store_id = $5 AND id = $1 RETURNING ${customerColumns}`,
      [id, type, value, now, tx.storeId, verifiedAt],
    );
    await tx.query('RELEASE SAVEPOINT switch_identity');
    return row ?? null;
  } catch (error) {
    if ((error as { code?: unknown }).code !== '23505') throw error;
    await tx.query('ROLLBACK TO SAVEPOINT switch_identity');
    return null;
  }
}

/**
 * Deletes up to `limit` customers of a deleted store, and with them (their foreign keys cascade)
 * their codes, sessions, passkeys and known devices; returns how many customers went.
 */
export async function deleteStoreCustomers(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(db, { table: 'customers', key: ['store_id', 'id'], where: 'store_id = $1' }, [storeId], limit);
}
