/**
 * The events a store's endpoints can hear. Each body is `{ type, timestamp, data }`, where `data`
 * holds `store_id`, the customer as the event left them (`customer`: id, identity, name,
 * external_id; only id and external_id once erased) and what the type adds. No code, password,
 * hash, session id or token is ever in one.
 */
export const customerEventTypes = [
  'customer.registered',
  'customer.verified',
  'customer.identity_changed',
  'customer.password_changed',
  'customer.sessions_revoked',
  'customer.blocked',
  'customer.unblocked',
  'customer.deleted',
  'customer.imported',
  'customer.signed_in',
] as const;

export type CustomerEventType = (typeof customerEventTypes)[number];

/** What `POST …/webhooks/{id}/test` sends, to that endpoint only. */
export const testEventType = 'webhook.test';

export type WebhookEventType = CustomerEventType | typeof testEventType;

/** Sent only to endpoints that name it: one per sign-in is loud, and `*` does not include it. */
export const loudEventTypes: readonly CustomerEventType[] = ['customer.signed_in'];

export const allEvents = '*';

/** The ways of signing in a `customer.signed_in` names. */
export type SignInMethod = 'password' | 'code' | 'passkey' | 'provider';

/** What ended sessions in a `customer.sessions_revoked`: one, all but the caller's, or all. */
export type RevokedSessions = 'one' | 'others' | 'all';

/** The fields each type adds to `data`, besides `store_id` and `customer`. */
export interface EventExtras {
  'customer.registered': { method: 'password' | 'provider' | 'staff' };
  'customer.verified': Record<string, never>;
  'customer.identity_changed': { previous_identity: { type: string; value: string } };
  'customer.password_changed': { how: 'changed' | 'reset' | 'retired' };
  'customer.sessions_revoked': { sessions: RevokedSessions; by: 'customer' | 'staff' };
  'customer.blocked': { reason: string; until: string | null };
  'customer.unblocked': Record<string, never>;
  'customer.deleted': Record<string, never>;
  'customer.signed_in': { method: SignInMethod };
}

export type CustomerEvent = {
  [T in keyof EventExtras]: { type: T; customerId: string; data: EventExtras[T] };
}[keyof EventExtras];

/** An import's one event: its counts, never its customers (see customer.imported). */
export interface ImportCounts {
  import_id: string;
  created: number;
  updated: number;
  unchanged: number;
  refused: number;
  invited: number;
}
