import type { IdentityMode } from '../config.js';
import type { Queryable } from '../storage/database.js';

export interface CustomerRow {
  id: string;
  name: string;
  identity_type: IdentityMode;
  identity_value: string;
  password_hash: string;
  verified_at: Date | null;
  /** Raised by every change of password; sessions are only opened against the current one. */
  credential_version: number;
}

/** The Customer resource as the API shows it. */
export interface Customer {
  id: string;
  name: string;
  identity: { type: IdentityMode; value: string; verified_at: string | null };
}

export function toCustomer(row: CustomerRow): Customer {
  return {
    id: row.id,
    name: row.name,
    identity: {
      type: row.identity_type,
      value: row.identity_value,
      verified_at: row.verified_at === null ? null : new Date(row.verified_at).toISOString(),
    },
  };
}

const customerColumns = 'id, name, identity_type, identity_value, password_hash, verified_at, credential_version';

export async function findCustomerByIdentity(
  db: Queryable,
  type: IdentityMode,
  value: string,
  { forUpdate = false } = {},
): Promise<CustomerRow | null> {
  const rows = await db.query<CustomerRow>(
    `SELECT ${customerColumns} FROM customers WHERE identity_type = $1 AND identity_value = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [type, value],
  );
  return rows[0] ?? null;
}

export async function findCustomerById(db: Queryable, id: string): Promise<CustomerRow | null> {
  const rows = await db.query<CustomerRow>(`SELECT ${customerColumns} FROM customers WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Sets verified_at when it is still null (a code sent to the identity proves it) and returns the row. */
export async function markVerified(tx: Queryable, id: string, now: Date): Promise<CustomerRow> {
  const [row] = await tx.query<CustomerRow>(
    `UPDATE customers SET verified_at = $2, updated_at = $2 WHERE id = $1 AND verified_at IS NULL RETURNING ${customerColumns}`,
    [id, now],
  );
  return row ?? (await findCustomerById(tx, id))!;
}

export { customerColumns };
