import { secondsBefore, type Clock } from './clock.js';
import { deleteInBatch, erasedValue, type Queryable, type StoreQueryable } from './storage/database.js';

export const auditEvents = [
  'customer.registered',
  'customer.verified',
  'login.succeeded',
  'login.failed',
  'login.second_step_asked',
  'password.reset',
  'password.changed',
  'profile.changed',
  'logout',
  'session.revoked',
  'rate_limited',
  'account.exported',
  'account.deleted',
  'identity.change_requested',
  'identity.changed',
  'reauthentication.failed',
  'two_factor.enabled',
  'two_factor.disabled',
  'two_factor.recovery_codes_renewed',
  'passkey.added',
  'passkey.removed',
  'provider.linked',
  'provider.unlinked',
  'store.created',
  'store.changed',
  'customer.looked_up',
  'customers.imported',
  'customers.exported',
  'customer.invited',
  'customer.created',
  'customer.changed',
  'customer.blocked',
  'customer.unblocked',
  'customer.reset_required',
  'customer.two_factor_removed',
] as const;
export type AuditEvent = (typeof auditEvents)[number];

export interface AuditEntry {
  /** The store the event happened in: its trail is erased with it. */
  storeId: string;
  event: AuditEvent;
  customerId?: string | null | undefined;
  /** Null for what an operator did from the command line. */
  clientAddress: string | null;
  requestId: string | null;
  details?: Record<string, string>;
}

interface PendingEntry extends AuditEntry {
  occurredAt: Date;
}

export type AuditDropReason = 'queue_full' | 'write_failed';

export interface AuditTrailOptions {
  /** Entries held while the database is slow or away; past it new entries are dropped. */
  maxQueued: number;
  /** Told how many entries were lost and why (for the metric and the log). */
  dropped: (count: number, reason: AuditDropReason) => void;
}

const defaultOptions: AuditTrailOptions = { maxQueued: 10_000, dropped: () => {} };

/**
 * Writes the trail behind the answer, in the order the events happened: entries are stamped when
 * they occur and queued, and one writer at a time flushes the queue in a single INSERT, so the
 * row ids follow the events even when the answers' background work runs in parallel.
 */
export class AuditTrail {
  private readonly queue: PendingEntry[] = [];
  /** The flush that is scheduled or running; at most one, so rows keep the order of events. */
  private writer: Promise<void> | undefined;
  private scheduled = false;
  private readonly options: AuditTrailOptions;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    /** Runs the write later; returns false when it refused to (a full background queue). */
    private readonly schedule: (write: () => Promise<void>) => boolean,
    options: Partial<AuditTrailOptions> = {},
  ) {
    this.options = { ...defaultOptions, ...options };
  }

  /** Entries waiting to be written. */
  get queued(): number {
    return this.queue.length;
  }

  record(entry: AuditEntry): void {
    // Bounded: while the database is away, memory must not grow with every request.
    if (this.queue.length >= this.options.maxQueued) {
      this.options.dropped(1, 'queue_full');
      return;
    }
    this.queue.push({ ...entry, occurredAt: this.clock.now() });
    this.requestFlush();
  }

  /** Writes what is queued now (shutdown); resolves when the queue is empty or a write failed. */
  async flush(): Promise<void> {
    await this.writer;
    if (this.queue.length > 0) await this.write();
  }

  private requestFlush(): void {
    if (this.scheduled || this.writer !== undefined) return;
    this.scheduled = true;
    // A refused schedule leaves the entries queued and no writer pending, so the next entry (or
    // shutdown) tries again: a dropped flush never stops the trail.
    if (!this.schedule(() => this.write())) this.scheduled = false;
  }

  private write(): Promise<void> {
    this.scheduled = false;
    this.writer ??= this.writeQueue().finally(() => {
      this.writer = undefined;
      // An entry recorded between the loop's last check and now found a writer still set and
      // scheduled nothing: it is picked up here instead of waiting for the next event.
      if (this.queue.length > 0) this.requestFlush();
    });
    return this.writer;
  }

  private async writeQueue(): Promise<void> {
    while (this.queue.length > 0) {
      // 1,000 rows of seven parameters stay far below PostgreSQL's 65,535-parameter limit.
      const batch = this.queue.splice(0, 1000);
      try {
        await insertAudit(this.db, batch);
      } catch (error) {
        // Only this batch is lost; what was recorded meanwhile waits for the next flush, which the
        // next entry schedules. The caller logs the error.
        this.options.dropped(batch.length, 'write_failed');
        throw error;
      }
    }
  }
}

async function insertAudit(db: Queryable, batch: PendingEntry[]): Promise<void> {
  const values: unknown[] = [];
  const rows = batch.map((entry) => {
    values.push(
      entry.storeId,
      entry.occurredAt,
      entry.event,
      entry.customerId ?? null,
      entry.clientAddress,
      entry.requestId,
      JSON.stringify(entry.details ?? {}),
    );
    const n = values.length;
    return `($${n - 6}, $${n - 5}, $${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n}::text::jsonb)`;
  });
  await db.query(
    `INSERT INTO audit_events (store_id, occurred_at, event, customer_id, client_address, request_id, details)
     VALUES ${rows.join(', ')}`,
    values,
  );
}

/**
 * Writes one entry at once, outside any request and the trail's queue (an operator's command,
 * which has no queue to flush): there is no client address or request id.
 */
export async function writeAuditEntry(
  db: StoreQueryable,
  clock: Clock,
  entry: Pick<AuditEntry, 'event' | 'customerId' | 'details'>,
): Promise<void> {
  const storeId = db.storeId;
  await insertAudit(db, [{ ...entry, storeId, clientAddress: null, requestId: null, occurredAt: clock.now() }]);
}

/**
 * Account deletion: the customer's events stay (with their customer id) but every detail that
 * holds the identity value is replaced, compared without regard to case. Runs in the deletion's
 * transaction.
 */
export async function scrubAuditIdentity(tx: StoreQueryable, customerId: string, identityValue: string): Promise<void> {
  await tx.query(
    `UPDATE audit_events
        SET details = (SELECT jsonb_object_agg(key, CASE WHEN strpos(lower(value #>> '{}'), lower($2)) > 0
                                                         THEN to_jsonb($3::text) ELSE value END)
                         FROM jsonb_each(details))
      WHERE store_id = $4 AND customer_id = $1 AND strpos(lower(details::text), lower($2)) > 0`,
    [customerId, identityValue, erasedValue, tx.storeId],
  );
}

/** Every event of one customer, newest first, for their data export. */
export async function listCustomerAudit(db: StoreQueryable, customerId: string): Promise<AuditRecord[]> {
  const rows = await db.query<AuditRecord & { occurred_at: Date }>(
    `SELECT id::text AS id, occurred_at, event, customer_id, client_address, request_id, details FROM audit_events
      WHERE store_id = $2 AND customer_id = $1 ORDER BY audit_events.id DESC`,
    [customerId, db.storeId],
  );
  return rows.map((row) => ({ ...row, occurred_at: new Date(row.occurred_at).toISOString() }));
}

/** When the customer last signed in, as far as the trail still remembers (its retention); null: not within it. */
export async function lastSignInAt(db: StoreQueryable, customerId: string): Promise<string | null> {
  const [row] = await db.query<{ at: Date | null }>(
    `SELECT max(occurred_at) AS at FROM audit_events WHERE store_id = $1 AND customer_id = $2 AND event = 'login.succeeded'`,
    [db.storeId, customerId],
  );
  return row?.at == null ? null : new Date(row.at).toISOString();
}

export interface AuditQuery {
  customerId?: string | undefined;
  event?: AuditEvent | undefined;
  limit?: number | undefined;
  /** Only events older than this one (by id): the next page after a page that ended with it. */
  beforeId?: string | undefined;
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

/**
 * The store's events, newest first, a page at a time by id. Only the filters given are in the
 * statement, so each reads its index backwards from `beforeId` and stops at the page's end: the
 * primary key (store_id, id), or audit_events_customer_id (store_id, customer_id, id) for a customer.
 */
export async function listAudit(db: StoreQueryable, query: AuditQuery): Promise<AuditRecord[]> {
  const values: unknown[] = [db.storeId, query.limit ?? 100];
  const where = ['store_id = $1'];
  const filter = (condition: (n: number) => string, value: unknown) => {
    values.push(value);
    where.push(condition(values.length));
  };
  if (query.customerId !== undefined) filter((n) => `customer_id = $${n}::uuid`, query.customerId);
  if (query.event !== undefined) filter((n) => `event = $${n}`, query.event);
  if (query.beforeId !== undefined) filter((n) => `id < $${n}::bigint`, query.beforeId);
  const rows = await db.query<AuditRecord & { occurred_at: Date }>(
    `SELECT id::text AS id, occurred_at, event, customer_id, client_address, request_id, details FROM audit_events
      WHERE ${where.join(' AND ')} ORDER BY audit_events.id DESC LIMIT $2`,
    values,
  );
  return rows.map((row) => ({ ...row, occurred_at: new Date(row.occurred_at).toISOString() }));
}

/** Deletes up to `limit` events at least `retentionSeconds` old and returns how many. */
export async function deleteOldAuditEvents(
  db: Queryable,
  clock: Clock,
  retentionSeconds: number,
  limit: number,
): Promise<number> {
  const cutoff = secondsBefore(clock.now(), retentionSeconds);
  return deleteInBatch(
    db,
    { table: 'audit_events', key: ['store_id', 'id'], where: 'occurred_at <= $1' },
    [cutoff],
    limit,
  );
}

/** Deletes up to `limit` events of a deleted store; returns how many. */
export async function deleteStoreAudit(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'audit_events', key: ['store_id', 'id'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}
