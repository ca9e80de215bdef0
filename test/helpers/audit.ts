import type { TestApp } from './harness.js';

export interface AuditRow {
  customer_id: string | null;
  client_address: string | null;
  details: Record<string, string>;
}

/** The audit events of one kind, oldest first, once the work behind the answers has recorded them. */
export async function auditRows(t: TestApp, event: string): Promise<AuditRow[]> {
  await t.services.background.drain();
  return t.db.query<AuditRow>(
    'SELECT customer_id::text AS customer_id, client_address, details FROM audit_events WHERE event = $1 ORDER BY id',
    [event],
  );
}

export async function auditCount(t: TestApp, event: string): Promise<number> {
  return (await auditRows(t, event)).length;
}
