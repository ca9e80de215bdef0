import type { Clock } from './clock.js';
import type { Queryable } from './storage/database.js';

export const auditEvents = [
  'customer.registered',
  'customer.verified',
  'login.succeeded',
  'login.failed',
  'password.reset',
  'logout',
  'rate_limited',
] as const;
export type AuditEvent = (typeof auditEvents)[number];

export interface AuditEntry {
  event: AuditEvent;
  customerId?: string | null | undefined;
  clientAddress: string;
  requestId: string;
  details?: Record<string, string>;
}

interface PendingEntry extends AuditEntry {
  occurredAt: Date;
}

/**
 * Writes the trail behind the answer, in the order the events happened: entries are stamped when
 * they occur and queued, and one writer at a time flushes the queue in a single INSERT, so the
 * row ids follow the events even when the answers' background work runs in parallel.
 */
export class AuditTrail {
  private queue: PendingEntry[] = [];
  private writing = false;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly schedule: (write: () => Promise<void>) => void,
  ) {}

  record(entry: AuditEntry): void {
    this.queue.push({ ...entry, occurredAt: this.clock.now() });
    if (this.writing) return;
    this.writing = true;
    this.schedule(() => this.flush());
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        // 1,000 rows of six parameters stay far below PostgreSQL's 65,535-parameter limit.
        await insertAudit(this.db, this.queue.splice(0, 1000));
      }
    } finally {
      // Entries left by a failed write are dropped with it (the failure is logged by the caller).
      this.queue = [];
      this.writing = false;
    }
  }
}

async function insertAudit(db: Queryable, batch: PendingEntry[]): Promise<void> {
  const values: unknown[] = [];
  const rows = batch.map((entry) => {
    values.push(
      entry.occurredAt,
      entry.event,
      entry.customerId ?? null,
      entry.clientAddress,
      entry.requestId,
      JSON.stringify(entry.details ?? {}),
    );
    const n = values.length;
    return `($${n - 5}, $${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n}::text::jsonb)`;
  });
  await db.query(
    `INSERT INTO audit_events (occurred_at, event, customer_id, client_address, request_id, details)
     VALUES ${rows.join(', ')}`,
    values,
  );
}

export interface AuditQuery {
  customerId?: string | undefined;
  event?: AuditEvent | undefined;
  limit?: number | undefined;
}

export interface AuditRecord {
  id: string;
  occurred_at: string;
  event: AuditEvent;
  customer_id: string | null;
  client_address: string | null;
  request_id: string | null;
  details: Record<string, string>;
}

/** Newest first. */
export async function listAudit(db: Queryable, query: AuditQuery): Promise<AuditRecord[]> {
  const rows = await db.query<AuditRecord & { occurred_at: Date }>(
    `SELECT id::text AS id, occurred_at, event, customer_id, client_address, request_id, details FROM audit_events
      WHERE ($1::uuid IS NULL OR customer_id = $1) AND ($2::text IS NULL OR event = $2)
      ORDER BY audit_events.id DESC LIMIT $3`,
    [query.customerId ?? null, query.event ?? null, query.limit ?? 100],
  );
  return rows.map((row) => ({ ...row, occurred_at: new Date(row.occurred_at).toISOString() }));
}
