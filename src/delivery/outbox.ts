import { secondsBefore, type Clock } from '../clock.js';
import type { Keys } from '../keys.js';
import { deleteInBatch, erasedValue, type Queryable, type StoreQueryable } from '../storage/database.js';
import type { Channel, MessageBranding, MessagePurpose } from './message.js';
import { sealContent } from './seal.js';
import { renderMessage, type SignInDetails } from './templates.js';
import { templateNameOf } from './message-templates.js';
import { findTemplate } from './store-templates.js';

export type OutboxStatus = 'pending' | 'sent' | 'failed' | 'dropped';
export const outboxStatuses: readonly OutboxStatus[] = ['pending', 'sent', 'failed', 'dropped'];

export interface OutboxDeps {
  clock: Clock;
  keys: Pick<Keys, 'outbox'>;
}

export interface NewMessage {
  channel: Channel;
  purpose: MessagePurpose;
  to: string;
  /**
   * The customer the message is about, whatever address it goes to (a code to an identity they
   * are moving to, a notice to one they left), so deleting the account finds it. Null only for a
   * message about no customer: the notice of a deletion, queued once the customer is gone.
   */
  customerId: string | null;
  storeName: string;
  /** The store's logo, colour and support link, for the email's HTML; none: the service's look. */
  branding?: MessageBranding | undefined;
  /** For a store's template of a notice: the customer's name, given only once their identity is proven. */
  customerName?: string | null | undefined;
  /** The language it is written in: the customer's (messageLanguage). */
  language: string;
  /** A code and when it expires, which the message states as its lifetime. */
  code?: { value: string; expiresAt: Date };
  signedOut?: 'every_device' | 'other_devices';
  signIn?: SignInDetails;
  /** For `identity_changed`: the new identity, masked (maskIdentity). */
  maskedIdentity?: string;
  challengeId?: string;
}

/** Writes a message in the caller's transaction, so it exists exactly when its code does. */
export async function enqueueMessage(tx: StoreQueryable, deps: OutboxDeps, message: NewMessage): Promise<string> {
  const now = deps.clock.now();
  const { code } = message;
  // A store's own words for an email, when it has them for this message and language.
  const template =
    message.channel === 'email' ? await findTemplate(tx, templateNameOf(message.purpose), message.language) : null;
  // Only what a template may say is handed over, by name: nothing else the caller sent gets in.
  const content = renderMessage(
    {
      channel: message.channel,
      purpose: message.purpose,
      language: message.language,
      storeName: message.storeName,
      branding: message.branding,
      customerName: message.customerName ?? null,
      signedOut: message.signedOut,
      signIn: message.signIn,
      maskedIdentity: message.maskedIdentity,
      ...(code === undefined
        ? {}
        : {
            code: {
              value: code.value,
              lifetimeMinutes: Math.round((code.expiresAt.getTime() - now.getTime()) / 60_000),
              expiresAt: code.expiresAt,
            },
          }),
    },
    template,
  );
  const [row] = await tx.query<{ id: string }>(
    `INSERT INTO outbox (store_id, channel, purpose, recipient, customer_id, sealed_body, challenge_id, status, next_attempt_at, window_started_at, created_at, updated_at)
     VALUES ($8, $1, $2, $3, $4, $5, $6, 'pending', $7, $7, $7, $7) RETURNING id::text AS id`,
    [
      message.channel,
      message.purpose,
      message.to,
      message.customerId,
      sealContent(deps.keys.outbox, content),
      message.challengeId ?? null,
      now,
      tx.storeId,
    ],
  );
  return row!.id;
}

/**
 * Names the customer of messages that name none, as migration 10 did for the messages then queued:
 * a code's message belongs to its code's customer, any other to the account whose address it
 * went to. For rows brought over from a version before that column. Returns how many it named.
 */
export async function attributeUnownedMessages(tx: StoreQueryable): Promise<number> {
  const [row] = await tx.query<{ n: number }>(
    `WITH owners AS (
       SELECT m.id, COALESCE(
                (SELECT ch.customer_id FROM challenges ch WHERE ch.store_id = m.store_id AND ch.id = m.challenge_id),
                (SELECT c.id FROM customers c
                  WHERE c.store_id = m.store_id
                    AND c.identity_type = CASE m.channel WHEN 'email' THEN 'email' ELSE 'phone' END
                    AND c.identity_value = m.recipient)) AS customer_id
         FROM outbox m WHERE m.store_id = $1 AND m.customer_id IS NULL),
     named AS (
       UPDATE outbox o SET customer_id = owners.customer_id FROM owners
        WHERE o.store_id = $1 AND o.id = owners.id AND owners.customer_id IS NOT NULL
       RETURNING 1)
     SELECT count(*)::int AS n FROM named`,
    [tx.storeId],
  );
  return row?.n ?? 0;
}

/**
 * Forgets a customer everywhere in the outbox, in the caller's transaction (account deletion):
 * every message about them, whatever address it went to, and every message to their current
 * address (which also covers messages queued before the outbox named customers and left without
 * one, see migration 10). Unsent ones (pending, or failed and so retryable) become `dropped`;
 * all of them lose the address, the sealed body and the customer. Returns how many were dropped.
 * The dispatcher only claims pending messages, so a dropped one is never sent.
 */
export async function eraseCustomerMessages(
  tx: StoreQueryable,
  clock: Clock,
  customerId: string,
  current: { channel: Channel; recipient: string },
): Promise<number> {
  const rows = await tx.query<{ dropped: boolean }>(
    `UPDATE outbox o
        SET status = CASE WHEN o.status IN ('pending', 'failed') THEN 'dropped' ELSE o.status END,
            sealed_body = NULL, recipient = $4, customer_id = NULL, locked_until = NULL, updated_at = $5
       FROM (SELECT id, status IN ('pending', 'failed') AS dropped FROM outbox
              WHERE store_id = $6 AND (customer_id = $1 OR (channel = $2 AND recipient = $3)) FOR UPDATE) old
      WHERE o.store_id = $6 AND o.id = old.id
      RETURNING old.dropped`,
    [customerId, current.channel, current.recipient, erasedValue, clock.now(), tx.storeId],
  );
  return rows.filter((row) => row.dropped).length;
}

export interface OutboxEntry {
  id: string;
  channel: Channel;
  purpose: MessagePurpose;
  recipient: string;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: string;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

/**
 * The store's messages, newest first, never a body. `beforeId`: only messages older than that one,
 * the next page after a page that ended with it; the primary key (store_id, id) is read backwards
 * from there.
 */
export async function listOutbox(
  db: StoreQueryable,
  status?: OutboxStatus,
  limit = 100,
  beforeId?: string,
): Promise<OutboxEntry[]> {
  const rows = await db.query<Record<string, unknown>>(
    `SELECT id::text AS id, channel, purpose, recipient, status, attempts, next_attempt_at, last_error, created_at, sent_at
       FROM outbox WHERE store_id = $3 AND ($1::text IS NULL OR status = $1)
        AND ($4::bigint IS NULL OR outbox.id < $4::bigint)
      ORDER BY outbox.id DESC LIMIT $2`,
    [status ?? null, limit, db.storeId, beforeId ?? null],
  );
  const iso = (value: unknown) => (value == null ? null : new Date(value as Date).toISOString());
  return rows.map((row) => ({
    ...(row as unknown as OutboxEntry),
    next_attempt_at: iso(row['next_attempt_at'])!,
    created_at: iso(row['created_at'])!,
    sent_at: iso(row['sent_at']),
  }));
}

/** Puts a failed message back in the queue with a fresh delivery window (dropped ones have no body left). */
export async function retryOutboxMessage(
  db: StoreQueryable,
  clock: Clock,
  id: string,
): Promise<'retried' | 'not_found' | 'not_retryable'> {
  if (!/^\d{1,18}$/.test(id)) return 'not_found';
  const now = clock.now();
  const rows = await db.query<{ status: OutboxStatus; sealed: boolean }>(
    'SELECT status, sealed_body IS NOT NULL AS sealed FROM outbox WHERE store_id = $2 AND id = $1',
    [id, db.storeId],
  );
  const row = rows[0];
  if (row === undefined) return 'not_found';
  if (row.status !== 'failed' || !row.sealed) return 'not_retryable';
  await db.query(
    `UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $2, locked_until = NULL,
            window_started_at = $2, last_error = NULL, updated_at = $2 WHERE store_id = $3 AND id = $1`,
    [id, now, db.storeId],
  );
  return 'retried';
}

/**
 * Deletes up to `limit` finished messages and returns how many: sent and dropped ones last
 * changed at least `deliveredRetentionSeconds` ago, failed ones `failedRetentionSeconds` ago.
 * Pending messages are never touched. Rows another instance is deleting are skipped.
 */
export async function deleteFinishedMessages(
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
      table: 'outbox',
      key: ['store_id', 'id'],
      where: `(status IN ('sent', 'dropped') AND updated_at <= $1) OR (status = 'failed' AND updated_at <= $2)`,
    },
    [secondsBefore(now, deliveredRetentionSeconds), secondsBefore(now, failedRetentionSeconds)],
    limit,
  );
}

/** A message the dispatcher has leased for one delivery attempt. */
export interface ClaimedMessage {
  store_id: string;
  id: string;
  channel: Channel;
  purpose: MessagePurpose;
  recipient: string;
  sealed_body: string | null;
  attempts: number;
  window_started_at: Date;
  /** Its code was used, replaced or expired (null when it carries none). */
  pointless: boolean | null;
  /** The store it comes from, as its messages name and send it. */
  store_name: string;
  /** And as operators name it, in the log and the metrics. */
  store_slug: string;
  mail_from: string | null;
  sms_sender: string | null;
  /** The store's `auth.phone_countries` (ISO 3166 codes) as its settings hold them; null: any. */
  phone_countries: unknown;
}

/** A message by its key. */
export type MessageKey = Pick<ClaimedMessage, 'store_id' | 'id'>;

/**
 * Leases up to `limit` due messages until `leaseEnd`, with FOR UPDATE SKIP LOCKED so instances
 * sharing the outbox never claim one message twice. Whether a message's code is still usable is
 * read in the same statement (the one read of `challenges` outside src/auth/tables/codes.ts), so a code
 * spent before the claim is never sent.
 */
export async function claimDueMessages(
  db: Queryable,
  now: Date,
  leaseEnd: Date,
  limit: number,
  /** Stores whose hourly budget is spent: their messages wait. */
  skipStores: readonly string[] = [],
  /**
   * SMS destinations whose store's budget for them is spent, as `<store id> +<calling code>%`:
   * their messages wait. Calling codes are prefix-free, so the pattern matches that code alone.
   */
  skipSmsPrefixes: readonly string[] = [],
): Promise<ClaimedMessage[]> {
  return db.query<ClaimedMessage>(
    // The delivery window opens at the first attempt, not at enqueue: a message that waited for its
    // store's hourly budget still gets its hour of retries.
    // The batch is picked once (a materialized CTE): as a plain `id IN (subquery)` the planner may
    // run the subquery again for every row, and each run skips the rows this statement has just
    // leased and hands over the next ones, past the limit.
    `WITH batch AS MATERIALIZED (
       SELECT o.store_id, o.id FROM outbox o JOIN stores live ON live.id = o.store_id AND live.deleted_at IS NULL
        WHERE o.status = 'pending' AND o.next_attempt_at <= $1
          AND (o.locked_until IS NULL OR o.locked_until <= $1) AND o.store_id <> ALL ($4::text[])
          AND NOT (o.channel = 'sms' AND o.store_id || ' ' || o.recipient LIKE ANY ($5::text[]))
        ORDER BY o.id LIMIT $3 FOR UPDATE OF o SKIP LOCKED)
     UPDATE outbox SET locked_until = $2, attempts = attempts + 1, updated_at = $1,
            window_started_at = CASE WHEN outbox.attempts = 0 THEN $1 ELSE outbox.window_started_at END
      FROM batch, stores s WHERE outbox.store_id = batch.store_id AND outbox.id = batch.id AND s.id = outbox.store_id
      RETURNING outbox.store_id, outbox.id::text AS id, channel, purpose, recipient, sealed_body, attempts,
        window_started_at, s.name AS store_name, s.slug AS store_slug, s.mail_from, s.sms_sender,
        s.settings -> 'auth.phone_countries' AS phone_countries,
        (SELECT c.consumed_at IS NOT NULL OR c.voided_at IS NOT NULL OR c.expires_at <= $1
           FROM challenges c WHERE c.store_id = outbox.store_id AND c.id = outbox.challenge_id) AS pointless`,
    [now, leaseEnd, limit, skipStores, skipSmsPrefixes],
  );
}

/** Messages sent since `since`, per store that sent any (the hourly budget is each store's). */
export async function countSentSince(db: Queryable, since: Date): Promise<Map<string, number>> {
  const rows = await db.query<{ store_id: string; n: number }>(
    'SELECT store_id, count(*)::int AS n FROM outbox WHERE sent_at > $1 GROUP BY store_id',
    [since],
  );
  return new Map(rows.map((row) => [row.store_id, row.n]));
}

/**
 * SMS sent since `since`, per store and recipient: the dispatcher sums them by country calling code.
 * At most the stores' hourly budgets of rows, and only read while a per-country budget is set.
 */
export async function countSmsSentSince(
  db: Queryable,
  since: Date,
): Promise<{ store_id: string; recipient: string; n: number }[]> {
  return db.query(
    `SELECT store_id, recipient, count(*)::int AS n FROM outbox WHERE sent_at > $1 AND channel = 'sms'
      GROUP BY store_id, recipient`,
    [since],
  );
}

/** Gives leased messages back untried: their store's budget was spent before their turn came. */
export async function releaseMessages(db: Queryable, messages: readonly MessageKey[]): Promise<void> {
  if (messages.length === 0) return;
  await db.query(
    `UPDATE outbox SET locked_until = NULL, attempts = attempts - 1
      WHERE (store_id, id) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
    [messages.map((m) => m.store_id), messages.map((m) => m.id)],
  );
}

/** Messages by status, for the outbox gauge. */
export async function countByStatus(db: Queryable): Promise<{ status: OutboxStatus; n: number }[]> {
  return db.query<{ status: OutboxStatus; n: number }>('SELECT status, count(*)::int AS n FROM outbox GROUP BY status');
}

/** Dropped unsent: its code is no longer usable. The sealed body goes with it. */
export async function markDropped(db: Queryable, { store_id, id }: MessageKey, now: Date): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'dropped', sealed_body = NULL, locked_until = NULL, updated_at = $2
      WHERE store_id = $3 AND id = $1`,
    [id, now, store_id],
  );
}

/**
 * Sent: the sealed body is erased. The notice of a deleted account is the last place its address
 * is kept, so its recipient goes too.
 */
export async function markSent(db: Queryable, { store_id, id }: MessageKey, now: Date): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'sent', sealed_body = NULL, locked_until = NULL, last_error = NULL,
            sent_at = $2, updated_at = $2,
            recipient = CASE WHEN purpose = 'account_deleted' THEN $3 ELSE recipient END
      WHERE store_id = $4 AND id = $1`,
    [id, now, erasedValue, store_id],
  );
}

/** Failed for good: its delivery window is over. */
export async function markFailed(
  db: Queryable,
  { store_id, id }: MessageKey,
  reason: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'failed', locked_until = NULL, last_error = $2, updated_at = $3
      WHERE store_id = $4 AND id = $1`,
    [id, reason, now, store_id],
  );
}

/** Not delivered this time: tried again at `nextAttempt`. */
export async function scheduleNextAttempt(
  db: Queryable,
  { store_id, id }: MessageKey,
  nextAttempt: Date,
  reason: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE outbox SET next_attempt_at = $2, locked_until = NULL, last_error = $3, updated_at = $4
      WHERE store_id = $5 AND id = $1`,
    [id, nextAttempt, reason, now, store_id],
  );
}

/** Deletes up to `limit` messages of a deleted store, sent or not; returns how many. */
export async function deleteStoreMessages(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(db, { table: 'outbox', key: ['store_id', 'id'], where: 'store_id = $1' }, [storeId], limit);
}
