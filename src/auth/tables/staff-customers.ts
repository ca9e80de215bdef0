import { isUuid, type StoreQueryable } from '../../storage/database.js';
import { customerColumns, type CustomerRow } from './customers.js';

/** The `customers` table's SQL for the platform's staff: search, block, edit (customers.ts owns the rest of it). */

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
