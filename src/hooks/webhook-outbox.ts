import { randomBytes } from 'node:crypto';
import { secondsBefore, type Clock } from '../clock.js';
import { deleteInBatch, isUuid, StatementParams, type Queryable, type StoreQueryable } from '../storage/database.js';
import {
  allEvents,
  loudEventTypes,
  testEventType,
  type CustomerEvent,
  type ImportCounts,
  type WebhookEventType,
} from './webhook-catalogue.js';

/**
 * This module owns `webhook_events` and `webhook_deliveries`: the events written beside the changes
 * they report, and their delivery to each endpoint that asked for them, claimed and settled as the
 * message outbox's rows are (a lease, at least once).
 */

/** A timestamp as events and answers write it: ISO 8601 in UTC, to the millisecond. */
const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The customer as an event shows them: in full, or, once erased, only what lets a receiver forget them. */
function customerJson(erased: boolean): string {
  if (erased) return `jsonb_build_object('id', c.id, 'external_id', c.external_id)`;
  return `jsonb_build_object('id', c.id, 'identity', jsonb_build_object('type', c.identity_type,
    'value', c.identity_value, 'verified_at', ${isoSql('c.verified_at')}), 'name', c.name, 'external_id', c.external_id)`;
}

/** An event's id, its `webhook-id` on every attempt. */
function newEventId(): string {
  return `evt_${randomBytes(16).toString('hex')}`;
}

/**
 * The parts of a statement (WITH clauses, named after `name`) that write one event and its
 * deliveries to every enabled endpoint of the store that asked for its type: nothing at all when
 * none did. `when`, a condition, ties the event to the statement's own change (a session opened).
 * `customerId` null: a store's event (an import's, a test's), with `data` all it carries.
 */
export function eventStatementParts(
  params: StatementParams,
  name: string,
  storeId: string,
  event: { type: WebhookEventType; customerId: string | null; data: object; endpointId?: string },
  now: Date,
  when = 'true',
): string[] {
  const store = params.add(storeId);
  const type = params.add(event.type);
  const at = params.add(now);
  const data = params.add(JSON.stringify(event.data));
  const envelope = (customerPart: string) =>
    `jsonb_build_object('type', ${type}::text, 'timestamp', ${isoSql(`${at}::timestamptz`)}, 'data',
       jsonb_build_object('store_id', ${store}::text) || ${customerPart} || ${data}::jsonb)::text`;
  // One endpoint named (a test): it gets the event whatever types it asked for.
  const asked = () => {
    if (event.endpointId !== undefined) return ` AND id = ${params.add(event.endpointId)}::uuid`;
    const loud = params.add(loudEventTypes.includes(event.type as never));
    return ` AND (${type}::text = ANY (events) OR ('${allEvents}' = ANY (events) AND NOT ${loud}::boolean))`;
  };
  const id = params.add(newEventId());
  const source =
    event.customerId === null
      ? `SELECT ${envelope(`'{}'::jsonb`)} AS body, NULL::uuid AS customer_id WHERE ${when}`
      : `SELECT ${envelope(`jsonb_build_object('customer', ${customerJson(event.type === 'customer.deleted')})`)} AS body,
                c.id AS customer_id
           FROM customers c WHERE c.store_id = ${store}::text AND c.id = ${params.add(event.customerId)}::uuid AND ${when}`;
  return [
    `${name}_targets AS (SELECT id FROM webhook_endpoints WHERE store_id = ${store}::text AND disabled_at IS NULL${asked()})`,
    `${name} AS (INSERT INTO webhook_events (store_id, id, type, customer_id, body, created_at)
       SELECT ${store}::text, ${id}::text, ${type}::text, source.customer_id, source.body, ${at}::timestamptz
         FROM (${source}) source WHERE EXISTS (SELECT 1 FROM ${name}_targets) RETURNING id, customer_id)`,
    `${name}_deliveries AS (INSERT INTO webhook_deliveries (store_id, endpoint_id, event_id, customer_id, status, next_attempt_at, created_at, updated_at)
       SELECT ${store}::text, t.id, e.id, e.customer_id, 'pending', ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
         FROM ${name} e CROSS JOIN ${name}_targets t)`,
  ];
}

async function recordEvent(
  db: StoreQueryable,
  clock: Clock,
  event: Parameters<typeof eventStatementParts>[3],
): Promise<boolean> {
  const params = new StatementParams();
  const parts = eventStatementParts(params, 'event', db.storeId, event, clock.now());
  const [row] = await db.query<{ recorded: boolean }>(
    `WITH ${parts.join(',\n')} SELECT EXISTS (SELECT 1 FROM event) AS recorded`,
    params.values,
  );
  return row?.recorded === true;
}

/**
 * Writes a customer's event in the caller's transaction, after the change it reports (before it,
 * for `customer.deleted`: the row is read for its id and external_id). True when an endpoint asked
 * for it, so the caller nudges the dispatcher once the transaction commits.
 */
export function recordCustomerEvent(tx: StoreQueryable, clock: Clock, event: CustomerEvent): Promise<boolean> {
  return recordEvent(tx, clock, event);
}

/** An import's one `customer.imported`, with its counts, when the import has finished. */
export function recordImportEvent(db: StoreQueryable, clock: Clock, counts: ImportCounts): Promise<boolean> {
  return recordEvent(db, clock, { type: 'customer.imported', customerId: null, data: counts });
}

/** A `webhook.test` for one endpoint, whatever it asked for; false when it is unknown or disabled. */
export function recordTestEvent(db: StoreQueryable, clock: Clock, endpointId: string): Promise<boolean> {
  return recordEvent(db, clock, {
    type: testEventType,
    customerId: null,
    data: { webhook_id: endpointId },
    endpointId,
  });
}

/**
 * An erased customer's events that no endpoint still waits for lose their bodies (their
 * deliveries stay listed, and can no longer be retried). Those still pending keep theirs: the
 * receiver gets the customer's history in order, up to their `customer.deleted`.
 */
export async function eraseCustomerEvents(tx: StoreQueryable, customerId: string): Promise<void> {
  await tx.query(
    `UPDATE webhook_events e SET body = NULL WHERE e.store_id = $1 AND e.customer_id = $2 AND e.body IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                         WHERE d.store_id = e.store_id AND d.event_id = e.id AND d.status = 'pending')`,
    [tx.storeId, customerId],
  );
}

/** A delivery leased for one attempt, with what it takes to send it. */
export interface ClaimedDelivery {
  store_id: string;
  store_slug: string;
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  body: string | null;
  attempts: number;
  event_created_at: Date;
  url: string;
  sealed_secret: string;
  sealed_previous_secret: string | null;
  previous_secret_until: Date | null;
}

export type DeliveryKey = Pick<ClaimedDelivery, 'store_id' | 'id'>;

/**
 * Leases up to `limit` due deliveries until `leaseEnd`. Fair lanes: each enabled endpoint offers
 * its oldest due deliveries, at most `perEndpoint` in flight at once, and the batch takes every
 * endpoint's first before anyone's second, so a slow or dead endpoint never fills the batch and
 * delays another store. Per endpoint, a customer's delivery waits while an older one of theirs is
 * pending (in flight or waiting for a retry): their events arrive in the order they happened. The
 * lease is taken by a conditional update, so instances sharing the tables never claim one twice.
 */
export async function claimDueDeliveries(
  db: Queryable,
  now: Date,
  leaseEnd: Date,
  { limit, perEndpoint }: { limit: number; perEndpoint: number },
): Promise<ClaimedDelivery[]> {
  return db.query<ClaimedDelivery>(
    `WITH lanes AS (
       SELECT e.store_id, e.id AS endpoint_id,
              $4::int - (SELECT count(*)::int FROM webhook_deliveries l WHERE l.endpoint_id = e.id AND l.locked_until > $1) AS room
         FROM webhook_endpoints e JOIN stores s ON s.id = e.store_id AND s.deleted_at IS NULL
        WHERE e.disabled_at IS NULL),
     candidates AS (
       SELECT due.store_id, due.id FROM lanes CROSS JOIN LATERAL (
         SELECT d.store_id, d.id, row_number() OVER (ORDER BY d.id) AS rank FROM webhook_deliveries d
          WHERE d.endpoint_id = lanes.endpoint_id AND d.store_id = lanes.store_id AND d.status = 'pending'
            AND d.next_attempt_at <= $1 AND (d.locked_until IS NULL OR d.locked_until <= $1)
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                             WHERE p.endpoint_id = d.endpoint_id AND p.customer_id = d.customer_id
                               AND p.status = 'pending' AND p.id < d.id)
          ORDER BY d.id LIMIT greatest(lanes.room, 0)) due
        ORDER BY due.rank, due.id LIMIT $3),
     claimed AS (
       UPDATE webhook_deliveries d SET locked_until = $2, attempts = d.attempts + 1, updated_at = $1
         FROM candidates c WHERE d.store_id = c.store_id AND d.id = c.id AND d.status = 'pending'
          AND (d.locked_until IS NULL OR d.locked_until <= $1)
       RETURNING d.store_id, d.id, d.endpoint_id, d.event_id, d.attempts)
     SELECT claimed.store_id, s.slug AS store_slug, claimed.id::text AS id, claimed.endpoint_id, claimed.event_id,
            ev.type, ev.body, claimed.attempts, ev.created_at AS event_created_at, ep.url, ep.sealed_secret,
            ep.sealed_previous_secret, ep.previous_secret_until
       FROM claimed
       JOIN webhook_events ev ON ev.store_id = claimed.store_id AND ev.id = claimed.event_id
       JOIN webhook_endpoints ep ON ep.store_id = claimed.store_id AND ep.id = claimed.endpoint_id
       JOIN stores s ON s.id = claimed.store_id`,
    [now, leaseEnd, limit, perEndpoint],
  );
}

/** One attempt as the deliveries list shows it. */
export interface AttemptRecord {
  at: string;
  /** The answer's status; null when none came (refused, timed out, a private address). */
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/** Keeps the last attempts of a delivery, not all of them: a manual retry may add more. */
const attemptsKept = 20;

/**
 * Settles an attempt: `sent`, `failed` (for good), or back to `pending` at `nextAttempt`. Only the
 * lease's holder settles it: a delivery claimed again after its lease ran out is left to that claim.
 * The last delivery of an erased customer's event that was still pending at the erasure takes its
 * body with it, as the erasure took the others' (eraseCustomerEvents); their `customer.deleted`
 * keeps its id and external_id for retries.
 */
export async function settleDelivery(
  db: Queryable,
  { store_id, id }: DeliveryKey,
  leaseEnd: Date,
  attempt: AttemptRecord,
  outcome: { status: 'sent' | 'failed' } | { status: 'pending'; nextAttempt: Date },
): Promise<void> {
  const now = new Date(attempt.at);
  await db.query(
    `WITH settled AS (
       UPDATE webhook_deliveries SET status = $3, locked_until = NULL, updated_at = $4,
              next_attempt_at = COALESCE($5, next_attempt_at), last_status = $6, last_error = $7,
              delivered_at = CASE WHEN $3 = 'sent' THEN $4 ELSE delivered_at END,
              attempt_log = CASE WHEN jsonb_array_length(attempt_log) >= ${attemptsKept} THEN attempt_log - 0
                                 ELSE attempt_log END || jsonb_build_array($8::jsonb)
        WHERE store_id = $1 AND id = $2 AND locked_until = $9
       RETURNING store_id, id, event_id, customer_id, status)
     UPDATE webhook_events e SET body = NULL FROM settled s
      WHERE s.status <> 'pending' AND s.customer_id IS NOT NULL
        AND e.store_id = s.store_id AND e.id = s.event_id AND e.body IS NOT NULL AND e.type <> 'customer.deleted'
        AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.store_id = s.store_id AND c.id = s.customer_id)
        -- The statement sees the delivery as it was before it: pending, so it is left out here.
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.store_id = e.store_id AND d.event_id = e.id
                          AND d.status = 'pending' AND d.id <> s.id)`,
    [
      store_id,
      id,
      outcome.status,
      now,
      outcome.status === 'pending' ? outcome.nextAttempt : null,
      attempt.status,
      attempt.error,
      JSON.stringify(attempt),
      leaseEnd,
    ],
  );
}

/**
 * Makes what waits for a retry due now. `unreachable`: only the deliveries whose last attempt got no
 * answer at all (refused, timed out): the endpoint answered again after being down, and the gaps
 * were there to spare it while it was. One that answered an event with an error keeps that event on
 * its schedule, or every success beside it would send that event again at once.
 */
export async function hurryEndpointDeliveries(
  db: Queryable,
  storeId: string,
  endpointId: string,
  now: Date,
  { unreachable }: { unreachable: boolean },
): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET next_attempt_at = $3
      WHERE endpoint_id = $2 AND store_id = $1 AND status = 'pending' AND next_attempt_at > $3
        AND (NOT $4 OR (attempts > 0 AND last_status IS NULL))`,
    [storeId, endpointId, now, unreachable],
  );
}

export interface DeliveryView {
  id: string;
  event_id: string;
  type: string;
  status: 'pending' | 'sent' | 'failed';
  attempts: AttemptRecord[];
  next_attempt_at: string | null;
  created_at: string;
  delivered_at: string | null;
}

/** An endpoint's deliveries, newest first, `limit` after the cursor (a delivery id). */
export async function listDeliveries(
  db: StoreQueryable,
  endpointId: string,
  { cursor, limit }: { cursor: string | undefined; limit: number },
): Promise<DeliveryView[]> {
  const rows = await db.query<DeliveryView & { retryable: boolean }>(
    `SELECT d.id::text AS id, d.event_id, e.type, d.status, d.attempt_log AS attempts,
            CASE WHEN d.status = 'pending' THEN ${isoSql('d.next_attempt_at')} END AS next_attempt_at,
            ${isoSql('d.created_at')} AS created_at, ${isoSql('d.delivered_at')} AS delivered_at
       FROM webhook_deliveries d JOIN webhook_events e ON e.store_id = d.store_id AND e.id = d.event_id
      WHERE d.store_id = $1 AND d.endpoint_id = $2 AND ($3::bigint IS NULL OR d.id < $3::bigint)
      ORDER BY d.id DESC LIMIT $4`,
    [db.storeId, endpointId, cursor ?? null, limit],
  );
  return rows;
}

/**
 * Sends a delivery again (failed, sent, or pending and waiting for a retry), with a fresh
 * schedule. Not one whose event lost its body to an erasure.
 */
export async function retryDelivery(
  db: StoreQueryable,
  clock: Clock,
  endpointId: string,
  deliveryId: string,
): Promise<'retried' | 'not_found' | 'erased'> {
  if (!isUuid(endpointId) || !/^\d{1,18}$/.test(deliveryId)) return 'not_found';
  const [row] = await db.query<{ erased: boolean; retried: boolean }>(
    `WITH target AS (
       SELECT d.store_id, d.id, e.body IS NULL AS erased FROM webhook_deliveries d
         JOIN webhook_events e ON e.store_id = d.store_id AND e.id = d.event_id
        WHERE d.store_id = $1 AND d.endpoint_id = $2 AND d.id = $3::bigint),
     retried AS (
       UPDATE webhook_deliveries d SET status = 'pending', attempts = 0, next_attempt_at = $4, updated_at = $4
         FROM target WHERE d.store_id = target.store_id AND d.id = target.id AND NOT target.erased
          AND d.locked_until IS NULL
       RETURNING 1)
     SELECT target.erased, EXISTS (SELECT 1 FROM retried) AS retried FROM target`,
    [db.storeId, endpointId, deliveryId, clock.now()],
  );
  if (row === undefined) return 'not_found';
  return row.erased ? 'erased' : 'retried';
}

/**
 * Deletes up to `limit` events (and their deliveries) whose deliveries are all over: sent at least
 * `deliveredRetentionSeconds` ago, failed `failedRetentionSeconds` ago. Pending ones stay.
 */
export async function deleteFinishedEvents(
  db: Queryable,
  clock: Clock,
  {
    deliveredRetentionSeconds,
    failedRetentionSeconds,
  }: { deliveredRetentionSeconds: number; failedRetentionSeconds: number },
  limit: number,
): Promise<number> {
  const now = clock.now();
  return deleteInBatch(
    db,
    {
      table: 'webhook_events',
      key: ['store_id', 'id'],
      where: `created_at <= $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                WHERE d.store_id = webhook_events.store_id AND d.event_id = webhook_events.id
                  AND (d.status = 'pending' OR (d.status = 'sent' AND d.updated_at > $1)
                       OR (d.status = 'failed' AND d.updated_at > $2)))`,
    },
    [secondsBefore(now, deliveredRetentionSeconds), secondsBefore(now, failedRetentionSeconds)],
    limit,
  );
}

/** Part of erasing a deleted store: its events, with their deliveries. */
export async function deleteStoreWebhookEvents(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'webhook_events', key: ['store_id', 'id'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}

/** Deliveries by status, for the gauge. */
export async function countDeliveriesByStatus(db: Queryable): Promise<{ status: string; n: number }[]> {
  return db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status',
  );
}
