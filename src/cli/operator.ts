import { writeAuditEntry, type AuditEvent } from '../audit.js';
import type { Clock } from '../clock.js';
import type { StoreQueryable } from '../storage/database.js';

/**
 * A change an operator made from the command line, in the store's trail as the admin API records
 * the same change (its event and details), with `by: operator` where the API names its token.
 */
export async function recordOperatorChange(
  sdb: StoreQueryable,
  clock: Clock,
  details: Record<string, string>,
  event: AuditEvent = 'store.changed',
): Promise<void> {
  await writeAuditEntry(sdb, clock, { event, customerId: null, details: { by: 'operator', ...details } });
}
