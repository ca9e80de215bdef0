/**
 * A store's records through the admin listener: its audit trail and its message outbox, newest
 * first a page at a time, and a retry of a failed message. Part of the admin client
 * (`@storefront-auth/client/admin`), which re-exports these types.
 */

export type OutboxStatus = 'pending' | 'sent' | 'failed' | 'dropped';

export interface AuditRecord {
  /** A later event has a greater id. */
  id: string;
  /** An ISO 8601 date and time (UTC). */
  occurred_at: string;
  /** Its type: `login.succeeded`, `session.revoked`, `store.changed`, … */
  event: string;
  /** The customer it is about, kept after they are deleted; null for none. */
  customer_id: string | null;
  /** Where the request came from; null for what an operator did from the command line. */
  client_address: string | null;
  request_id: string | null;
  /** What the type tells besides (`method`, `by`, `count`, `fields`, …); never a secret. */
  details: Record<string, string>;
}

export interface AuditPage {
  /** Newest first. */
  events: AuditRecord[];
  /** Pass as `cursor` for the next page; null on the last. */
  next_cursor: string | null;
}

export interface OutboxEntry {
  /** For `retryStoreOutboxMessage`. */
  id: string;
  channel: 'email' | 'sms';
  /** What it is for: `verification`, `password_reset`, `invitation`, `sign_in`, `new_sign_in`, … */
  purpose: string;
  /** The email address or phone number; `(erased)` once its customer was deleted. */
  recipient: string;
  status: OutboxStatus;
  /** Attempts in its current delivery window. */
  attempts: number;
  next_attempt_at: string;
  /** Why the last attempt failed. */
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

export interface OutboxPage {
  /** Newest first, never a body. */
  messages: OutboxEntry[];
  /** Pass as `cursor` for the next page; null on the last. */
  next_cursor: string | null;
}

export interface RetriedMessage {
  id: string;
  /** Queued again with a fresh delivery window. */
  status: 'pending';
}

export interface PageOptions {
  cursor?: string;
  /** 1 to 500 (default 100). */
  limit?: number;
}

export interface RecordsAdmin {
  /** One page of the store's audit trail, newest first; `customerId` and `event` narrow it. */
  listStoreAudit(store: string, options?: PageOptions & { customerId?: string; event?: string }): Promise<AuditPage>;
  /** One page of the store's messages, newest first, never a body; `status` narrows it. */
  listStoreOutbox(store: string, options?: PageOptions & { status?: OutboxStatus }): Promise<OutboxPage>;
  /** Queues a failed message again; any other is `message_not_retryable`, an unknown id `not_found`. */
  retryStoreOutboxMessage(store: string, id: string): Promise<RetriedMessage>;
}

/** One admin call: method, path under `/admin/v1`, and body. */
type Call = <T>(method: string, path: string, body?: unknown) => Promise<T>;

function withQuery(path: string, fields: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) query.set(name, String(value));
  const search = query.toString();
  return search === '' ? path : `${path}?${search}`;
}

export function recordsAdmin(call: Call): RecordsAdmin {
  const part = encodeURIComponent;
  return {
    listStoreAudit: (store, { cursor, limit, customerId, event } = {}) =>
      call('GET', withQuery(`/stores/${part(store)}/audit`, { customer_id: customerId, event, cursor, limit })),
    listStoreOutbox: (store, { cursor, limit, status } = {}) =>
      call('GET', withQuery(`/stores/${part(store)}/outbox`, { status, cursor, limit })),
    retryStoreOutboxMessage: (store, id) => call('POST', `/stores/${part(store)}/outbox/${part(id)}/retry`),
  };
}
