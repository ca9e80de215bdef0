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
const customerColumns = columnNames.join(', ');

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

/** A customer row with what an import compares and an export writes besides the usual columns. */
export interface ImportedCustomerRow extends CustomerRow {
  /** The customer's id in the system a store moved here from, when an import gave one. */
  external_id: string | null;
  created_at: Date;
}

const importedColumns = `${customerColumns}, external_id, created_at`;

/**
 * Whether an import made the account, and its id in the old system: read only at the sign-in of an
 * account without a password (the store's old system may vouch for one), not with every customer row.
 */
export async function importedFacts(
  db: StoreQueryable,
  id: string,
): Promise<{ imported: boolean; external_id: string | null }> {
  const [row] = await db.query<{ imported: boolean; external_id: string | null }>(
    'SELECT imported_at IS NOT NULL AS imported, external_id FROM customers WHERE store_id = $1 AND id = $2',
    [db.storeId, id],
  );
  return row ?? { imported: false, external_id: null };
}

/** The customers holding these identities, locked until the import's batch commits. */
export async function lockCustomersByIdentity(
  tx: StoreQueryable,
  type: IdentityMode,
  values: readonly string[],
): Promise<ImportedCustomerRow[]> {
  // One unique-index lookup per identity, whatever the statistics say. As `identity_value =
  // ANY($3)`, a table that grew since it was last analyzed (an import's own rows, minutes old) is
  // planned as a scan of every row of the store, and a batch takes seconds where this takes a few
  // milliseconds.
  return tx.query<ImportedCustomerRow>(
    `SELECT found.* FROM unnest($3::text[]) AS wanted (value) CROSS JOIN LATERAL (
       SELECT ${importedColumns} FROM customers
        WHERE store_id = $1 AND identity_type = $2 AND identity_value = wanted.value FOR UPDATE) found`,
    [tx.storeId, type, values],
  );
}

export interface NewImportedCustomer {
  id: string;
  name: string;
  value: string;
  passwordHash: string | null;
  verifiedAt: Date | null;
  createdAt: Date;
  locale: string | null;
  externalId: string | null;
}

/**
 * Adds an import batch's new customers in one statement. Returns the identities it added: one
 * missing was registered by someone else since the batch looked (the unique index decides).
 */
export async function insertImportedCustomers(
  tx: StoreQueryable,
  type: IdentityMode,
  customers: readonly NewImportedCustomer[],
  now: Date,
): Promise<Set<string>> {
  const column = <K extends keyof NewImportedCustomer>(key: K) => customers.map((customer) => customer[key]);
  const rows = await tx.query<{ identity_value: string }>(
    `INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, verified_at, created_at,
                            updated_at, locale, external_id, imported_at)
     SELECT $1, u.id::uuid, u.name, $2, u.value, u.hash, u.verified_at, u.created_at, $3, u.locale, u.external_id, $3
       FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[], $10::text[],
                   $11::text[]) AS u(id, name, value, hash, verified_at, created_at, locale, external_id)
     ON CONFLICT (store_id, identity_type, identity_value) DO NOTHING RETURNING identity_value`,
    [
      tx.storeId,
      type,
      now,
      column('id'),
      column('name'),
      column('value'),
      column('passwordHash'),
      column('verifiedAt'),
      column('createdAt'),
      column('locale'),
      column('externalId'),
    ],
  );
  return new Set(rows.map((row) => row.identity_value));
}

/** Sets the name, locale and external id an import line gives (each when given). */
export async function updateImportedFields(
  tx: StoreQueryable,
  id: string,
  change: { name?: string | undefined; locale?: string | undefined; externalId?: string | undefined },
  now: Date,
): Promise<void> {
  await tx.query(
    `UPDATE customers SET name = COALESCE($2, name), locale = COALESCE($3, locale),
            external_id = COALESCE($4, external_id), updated_at = $5
      WHERE store_id = $6 AND id = $1`,
    [id, change.name ?? null, change.locale ?? null, change.externalId ?? null, now, tx.storeId],
  );
}

/** A page of the store's customers in id order, after `afterId` (the export reads them all this way). */
export async function pageOfCustomers(
  db: StoreQueryable,
  afterId: string | null,
  limit: number,
): Promise<ImportedCustomerRow[]> {
  return db.query<ImportedCustomerRow>(
    `SELECT ${importedColumns} FROM customers
      WHERE store_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid) ORDER BY id LIMIT $3`,
    [db.storeId, afterId, limit],
  );
}

/** A customer as the platform's staff see them: the usual columns and what support asks about. */
export interface StaffCustomerRow extends CustomerRow {
  external_id: string | null;
  created_at: Date;
  blocked_reason: string | null;
}

const staffColumns = `${customerColumns}, external_id, created_at, blocked_reason`;

/** What staff filter by: a block that holds, else whether the identity is proven. */
export type CustomerStatus = 'active' | 'unverified' | 'blocked';

/** Where a page of a search ended: the identity matches come first in identity order, then the name matches. */
export interface SearchPosition {
  by: 'identity' | 'name';
  key: string;
  id: string;
}

export interface CustomerSearch {
  /** The start of the identity (as stored: an email in lower case, a phone in E.164) or of the name. */
  identityPrefix: string;
  namePrefix: string;
  status: CustomerStatus | undefined;
  after: SearchPosition | undefined;
  limit: number;
  now: Date;
}

function likePrefix(text: string): string {
  return `${text.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

/**
 * A page of the store's customers whose identity or name starts with the prefixes, for staff:
 * those matching by identity in identity order, then those matching only by name in name order.
 * Each part is one range of an index read in its order (customers_identity_order and
 * customers_name_order, byte order), so a page costs its own rows, not the store's. With empty
 * prefixes it lists every customer by identity. `next` is where the next page starts, or null.
 */
export async function searchCustomers(
  db: StoreQueryable,
  search: CustomerSearch,
): Promise<{ rows: StaffCustomerRow[]; next: SearchPosition | null }> {
  const { limit, after } = search;
  const rows: StaffCustomerRow[] = [];
  if (after?.by !== 'name') {
    const found = await searchPart(db, search, 'identity', after);
    if (found.length > limit) return { rows: found.slice(0, limit), next: positionOf('identity', found[limit - 1]!) };
    rows.push(...found);
    if (search.namePrefix === '' && search.identityPrefix === '') return { rows, next: null };
  }
  const wanted = limit - rows.length;
  if (wanted === 0) return { rows, next: rows.length === 0 ? null : positionOf('identity', rows.at(-1)!, true) };
  const named = await searchPart(db, { ...search, limit: wanted }, 'name', after?.by === 'name' ? after : undefined);
  if (named.length > wanted) {
    rows.push(...named.slice(0, wanted));
    return { rows, next: positionOf('name', rows.at(-1)!) };
  }
  rows.push(...named);
  return { rows, next: null };
}

type KeyedRow = StaffCustomerRow & { sort_key: string };

function positionOf(by: SearchPosition['by'], row: StaffCustomerRow, identityDone = false): SearchPosition {
  // A full page of identity matches with nothing after them: the next page starts with the names.
  if (identityDone) return { by: 'name', key: '', id: '00000000-0000-0000-0000-000000000000' };
  return { by, key: (row as KeyedRow).sort_key, id: row.id };
}

async function searchPart(
  db: StoreQueryable,
  search: CustomerSearch,
  by: SearchPosition['by'],
  after: SearchPosition | undefined,
): Promise<KeyedRow[]> {
  const key = by === 'identity' ? `identity_value COLLATE "C"` : `lower(name) COLLATE "C"`;
  const values: unknown[] = [db.storeId, likePrefix(by === 'identity' ? search.identityPrefix : search.namePrefix)];
  const add = (value: unknown) => `$${values.push(value)}`;
  const where = [`store_id = $1`, `${key} LIKE $2`];
  // Those whose identity matches were listed by identity already.
  if (by === 'name') where.push(`identity_value COLLATE "C" NOT LIKE ${add(likePrefix(search.identityPrefix))}`);
  if (after !== undefined) where.push(`(${key}, id) > (${add(after.key)}::text COLLATE "C", ${add(after.id)}::uuid)`);
  if (search.status !== undefined) {
    const holds = `(blocked_at IS NOT NULL AND (blocked_until IS NULL OR blocked_until > ${add(search.now)}))`;
    if (search.status === 'blocked') where.push(holds);
    else where.push(`NOT ${holds}`, search.status === 'active' ? 'verified_at IS NOT NULL' : 'verified_at IS NULL');
  }
  // An unnamed statement: planned for its own prefix, so the LIKE becomes a range of the index.
  return db.query<KeyedRow>(
    `SELECT ${staffColumns}, ${key} AS sort_key FROM customers WHERE ${where.join(' AND ')}
      ORDER BY ${key}, id LIMIT ${add(search.limit + 1)}`,
    values,
  );
}

/** One customer as staff see them; null when the store has none with this id. */
export async function findStaffCustomer(db: StoreQueryable, id: string): Promise<StaffCustomerRow | null> {
  if (!isUuid(id)) return null;
  const rows = await db.query<StaffCustomerRow>(
    `SELECT ${staffColumns} FROM customers WHERE store_id = $1 AND id = $2`,
    [db.storeId, id],
  );
  return rows[0] ?? null;
}

/** Sets the block (or lifts it, `block` null); the caller holds the row locked. */
export async function setBlock(
  tx: StoreQueryable,
  id: string,
  block: { reason: string; until: Date | null } | null,
  now: Date,
): Promise<void> {
  await tx.query(
    `UPDATE customers SET blocked_at = CASE WHEN $3 THEN $2::timestamptz END, blocked_reason = $4, blocked_until = $5,
            updated_at = $2 WHERE store_id = $6 AND id = $1`,
    [id, now, block !== null, block?.reason ?? null, block?.until ?? null, tx.storeId],
  );
}

/**
 * Retires the password (no hash, a new credential version: no login that checked it opens a
 * session); the caller holds the row locked.
 */
export async function retirePassword(tx: StoreQueryable, id: string, now: Date): Promise<void> {
  await tx.query(
    `UPDATE customers SET password_hash = NULL, credential_version = credential_version + 1, updated_at = $2
      WHERE store_id = $3 AND id = $1`,
    [id, now, tx.storeId],
  );
}

/** Staff's change of the plain fields, each when given; the caller holds the row locked. */
export async function updateStaffFields(
  tx: StoreQueryable,
  id: string,
  change: { externalId?: string | null | undefined; verifiedAt?: Date | null | undefined },
  now: Date,
): Promise<void> {
  await tx.query(
    `UPDATE customers SET external_id = CASE WHEN $3 THEN $4 ELSE external_id END,
            verified_at = CASE WHEN $5 THEN $6::timestamptz ELSE verified_at END, updated_at = $2
      WHERE store_id = $7 AND id = $1`,
    [
      id,
      now,
      change.externalId !== undefined,
      change.externalId ?? null,
      change.verifiedAt !== undefined,
      change.verifiedAt ?? null,
      tx.storeId,
    ],
  );
}
