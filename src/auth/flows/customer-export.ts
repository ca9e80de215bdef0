import type { StoreQueryable } from '../../storage/database.js';
import { pageOfCustomers, type ImportedCustomerRow } from '../tables/imported-customers.js';
import { linksOfCustomers, type ExportedProviderLink } from '../tables/provider-links.js';

/**
 * A store's customers, one NDJSON line each, in the import's own format (customer-import.ts), so
 * another deployment of this service takes the store whole and its customers sign in there with
 * the passwords they have. Read a page at a time in key order: memory stays flat, however many.
 */

const exportPageSize = 1_000;

export async function* exportCustomers(db: StoreQueryable): AsyncGenerator<string> {
  let after: string | null = null;
  for (;;) {
    const page = await pageOfCustomers(db, after, exportPageSize);
    if (page.length === 0) return;
    const links = new Map<string, ExportedProviderLink[]>();
    for (const link of await linksOfCustomers(
      db,
      page.map((row) => row.id),
    )) {
      links.set(link.customer_id, [...(links.get(link.customer_id) ?? []), link]);
    }
    for (const row of page) yield `${JSON.stringify(exportLine(row, links.get(row.id) ?? []))}\n`;
    after = page[page.length - 1]!.id;
  }
}

function exportLine(row: ImportedCustomerRow, links: ExportedProviderLink[]): Record<string, unknown> {
  return {
    [row.identity_type]: row.identity_value,
    name: row.name,
    verified: row.verified_at !== null,
    ...(row.password_hash === null ? {} : { password_hash: row.password_hash }),
    ...(row.external_id === null ? {} : { external_id: row.external_id }),
    created_at: new Date(row.created_at).toISOString(),
    ...(row.locale === null ? {} : { locale: row.locale }),
    // That a second step is on, never its secret: the customer sets it up again where the line goes.
    ...(row.two_factor ? { two_factor: true } : {}),
    ...(links.length === 0
      ? {}
      : {
          providers: links.map(({ issuer, subject, email }) => ({
            issuer,
            subject,
            ...(email === null ? {} : { email }),
          })),
        }),
  };
}
