import type { Clock } from '../../clock.js';
import type { StoreQueryable } from '../../storage/database.js';

/**
 * This module owns the `provider_links` table: which customer a provider's account (its issuer and
 * subject, never its email alone) signs in to. Links go with their customer (ON DELETE CASCADE).
 */

/** A link as the customer sees it (their linked providers, their export). */
export interface ProviderLinkView {
  provider: string;
  email: string | null;
  linked_at: string;
}

export interface NewProviderLink {
  customerId: string;
  providerId: string;
  issuer: string;
  subject: string;
  email: string | null;
}

/** The customer a provider's account is linked to, or null. */
export async function findLinkedCustomer(db: StoreQueryable, issuer: string, subject: string): Promise<string | null> {
  const [row] = await db.query<{ customer_id: string }>(
    'SELECT customer_id::text AS customer_id FROM provider_links WHERE store_id = $1 AND issuer = $2 AND subject = $3',
    [db.storeId, issuer, subject],
  );
  return row?.customer_id ?? null;
}

/** Links a provider's account to a customer; false when it is linked already (to anyone). */
export async function insertProviderLink(tx: StoreQueryable, clock: Clock, link: NewProviderLink): Promise<boolean> {
  const rows = await tx.query(
    `INSERT INTO provider_links (store_id, issuer, subject, customer_id, provider_id, email, linked_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (store_id, issuer, subject) DO NOTHING RETURNING 1`,
    [tx.storeId, link.issuer, link.subject, link.customerId, link.providerId, link.email, clock.now()],
  );
  return rows.length > 0;
}

export async function listProviderLinks(db: StoreQueryable, customerId: string): Promise<ProviderLinkView[]> {
  const rows = await db.query<{ provider_id: string; email: string | null; linked_at: Date }>(
    `SELECT provider_id, email, linked_at FROM provider_links WHERE store_id = $1 AND customer_id = $2
      ORDER BY linked_at, provider_id`,
    [db.storeId, customerId],
  );
  return rows.map((row) => ({
    provider: row.provider_id,
    email: row.email,
    linked_at: new Date(row.linked_at).toISOString(),
  }));
}

/** Removes the customer's links to one provider; how many there were. */
export async function deleteProviderLinks(tx: StoreQueryable, customerId: string, providerId: string): Promise<number> {
  const rows = await tx.query(
    'DELETE FROM provider_links WHERE store_id = $1 AND customer_id = $2 AND provider_id = $3 RETURNING 1',
    [tx.storeId, customerId, providerId],
  );
  return rows.length;
}

/** Removes every link of the customer (the first proof of control ends what a claimant linked). */
export async function deleteCustomerProviderLinks(tx: StoreQueryable, customerId: string): Promise<void> {
  await tx.query('DELETE FROM provider_links WHERE store_id = $1 AND customer_id = $2', [tx.storeId, customerId]);
}

/** A link as an export writes it: the provider's issuer and subject, and the email it gave. */
export interface ExportedProviderLink {
  customer_id: string;
  issuer: string;
  subject: string;
  email: string | null;
}

/** The links of these customers (a page of an export), in the order they were made. */
export async function linksOfCustomers(
  db: StoreQueryable,
  customerIds: readonly string[],
): Promise<ExportedProviderLink[]> {
  // An index lookup per customer, as lockCustomersByIdentity does, whatever the statistics say
  // (`OFFSET 0` keeps the planner from turning the lookups into a join that reads every link).
  return db.query<ExportedProviderLink>(
    `SELECT link.customer_id::text AS customer_id, link.issuer, link.subject, link.email
       FROM unnest($2::uuid[]) AS wanted (id) CROSS JOIN LATERAL (
         SELECT customer_id, issuer, subject, email, linked_at FROM provider_links
          WHERE store_id = $1 AND customer_id = wanted.id OFFSET 0) link
      ORDER BY link.linked_at, link.issuer, link.subject`,
    [db.storeId, customerIds],
  );
}
