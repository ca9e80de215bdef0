import type { IdentityMode } from '../../config.js';
import type { StoreQueryable } from '../../storage/database.js';
import { customerColumns, type CustomerRow } from './customers.js';

/** The `customers` table's SQL for imports and exports (customers.ts owns the rest of it). */

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
