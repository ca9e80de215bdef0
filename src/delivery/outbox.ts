import { secondsBefore, type Clock } from '../clock.js';
import type { Keys } from '../keys.js';
import { deleteInBatch, erasedValue, type Queryable } from '../storage/database.js';
import type { Channel, MessagePurpose } from './message.js';
import { sealContent } from './seal.js';
import { renderMessage, type SignInDetails } from './templates.js';

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
  /** A code and when it expires, which the message states as its lifetime. */
  code?: { value: string; expiresAt: Date };
  signedOut?: 'every_device' | 'other_devices';
  signIn?: SignInDetails;
  /** For `identity_changed`: the new identity, masked (maskIdentity). */
  maskedIdentity?: string;
  challengeId?: string;
}

/** Writes a message in the caller's transaction, so it exists exactly when its code does. */
export async function enqueueMessage(tx: Queryable, deps: OutboxDeps, message: NewMessage): Promise<string> {
  const now = deps.clock.now();
  const { code } = message;
  // Only what a template may say is handed over, by name: nothing else the caller sent gets in.
  const content = renderMessage({
    channel: message.channel,
    purpose: message.purpose,
    storeName: message.storeName,
    signedOut: message.signedOut,
    signIn: message.signIn,
    maskedIdentity: message.maskedIdentity,
    ...(code === undefined
      ? {}
      : {
          code: { value: code.value, lifetimeMinutes: Math.round((code.expiresAt.getTime() - now.getTime()) / 60_000) },
        }),
  });
  const [row] = await tx.query<{ id: string }>(
    `INSERT INTO outbox (channel, purpose, recipient, customer_id, sealed_body, challenge_id, status, next_attempt_at, window_started_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $7, $7, $7) RETURNING id::text AS id`,
    [
      message.channel,
      message.purpose,
      message.to,
      message.customerId,
      sealContent(deps.keys.outbox, content),
      message.challengeId ?? null,
      now,
    ],
  );
  return row!.id;
}

/**
 * Names the customer of messages that name none, as migration 10 did for the messages then queued:
 * a code's message belongs to its code's customer, any other to the account whose address it
 * went to. For rows brought over from a version before that column. Returns how many it named.
 */
export async function attributeUnownedMessages(tx: Queryable): Promise<number> {
  const [row] = await tx.query<{ n: number }>(
    `WITH owners AS (
       SELECT m.id, COALESCE(
                (SELECT ch.customer_id FROM challenges ch WHERE ch.id = m.challenge_id),
                (SELECT c.id FROM customers c
                  WHERE c.identity_type = CASE m.channel WHEN 'email' THEN 'email' ELSE 'phone' END
                    AND c.identity_value = m.recipient)) AS customer_id
         FROM outbox m WHERE m.customer_id IS NULL),
     named AS (
       UPDATE outbox o SET customer_id = owners.customer_id FROM owners
        WHERE o.id = owners.id AND owners.customer_id IS NOT NULL
       RETURNING 1)
     SELECT count(*)::int AS n FROM named`,
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
  tx: Queryable,
  clock: Clock,
  customerId: string,
  current: { channel: Channel; recipient: string },
): Promise<number> {
  const rows = await tx.query<{ dropped: boolean }>(
    `UPDATE outbox o
        SET status = CASE WHEN o.status IN ('pending', 'failed') THEN 'dropped' ELSE o.status END,
            sealed_body = NULL, recipient = $4, customer_id = NULL, locked_until = NULL, updated_at = $5
       FROM (SELECT id, status IN ('pending', 'failed') AS dropped FROM outbox
              WHERE customer_id = $1 OR (channel = $2 AND recipient = $3) FOR UPDATE) old
      WHERE o.id = old.id
      RETURNING old.dropped`,
    [customerId, current.channel, current.recipient, erasedValue, clock.now()],
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

export async function listOutbox(db: Queryable, status?: OutboxStatus, limit = 100): Promise<OutboxEntry[]> {
  const rows = await db.query<Record<string, unknown>>(
    `SELECT id::text AS id, channel, purpose, recipient, status, attempts, next_attempt_at, last_error, created_at, sent_at
       FROM outbox WHERE ($1::text IS NULL OR status = $1) ORDER BY outbox.id DESC LIMIT $2`,
    [status ?? null, limit],
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
  db: Queryable,
  clock: Clock,
  id: string,
): Promise<'retried' | 'not_found' | 'not_retryable'> {
  if (!/^\d{1,18}$/.test(id)) return 'not_found';
  const now = clock.now();
  const rows = await db.query<{ status: OutboxStatus; sealed: boolean }>(
    'SELECT status, sealed_body IS NOT NULL AS sealed FROM outbox WHERE id = $1',
    [id],
  );
  const row = rows[0];
  if (row === undefined) return 'not_found';
  if (row.status !== 'failed' || !row.sealed) return 'not_retryable';
  await db.query(
    `UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $2, locked_until = NULL,
            window_started_at = $2, last_error = NULL, updated_at = $2 WHERE id = $1`,
    [id, now],
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
      key: ['id'],
      where: `(status IN ('sent', 'dropped') AND updated_at <= $1) OR (status = 'failed' AND updated_at <= $2)`,
    },
    [secondsBefore(now, deliveredRetentionSeconds), secondsBefore(now, failedRetentionSeconds)],
    limit,
  );
}

/** A message the dispatcher has leased for one delivery attempt. */
export interface ClaimedMessage {
  id: string;
  channel: Channel;
  purpose: MessagePurpose;
  recipient: string;
  sealed_body: string | null;
  attempts: number;
  window_started_at: Date;
  /** Its code was used, replaced or expired (null when it carries none). */
  pointless: boolean | null;
}

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
): Promise<ClaimedMessage[]> {
  return db.query<ClaimedMessage>(
    // The batch is picked once (a materialized CTE): as a plain `id IN (subquery)` the planner may
    // run the subquery again for every row, and each run skips the rows this statement has just
    // leased and hands over the next ones, past the limit.
    `WITH batch AS MATERIALIZED (
       SELECT id FROM outbox
        WHERE status = 'pending' AND next_attempt_at <= $1
          AND (locked_until IS NULL OR locked_until <= $1)
        ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
     UPDATE outbox SET locked_until = $2, attempts = attempts + 1, updated_at = $1
      FROM batch WHERE outbox.id = batch.id
      RETURNING outbox.id::text AS id, channel, purpose, recipient, sealed_body, attempts, window_started_at,
        (SELECT c.consumed_at IS NOT NULL OR c.voided_at IS NOT NULL OR c.expires_at <= $1
           FROM challenges c WHERE c.id = outbox.challenge_id) AS pointless`,
    [now, leaseEnd, limit],
  );
}

/** Messages sent since `since`, across the deployment (the hourly budget). */
export async function countSentSince(db: Queryable, since: Date): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE sent_at > $1', [since]);
  return row?.n ?? 0;
}

/** Messages by status, for the outbox gauge. */
export async function countByStatus(db: Queryable): Promise<{ status: OutboxStatus; n: number }[]> {
  return db.query<{ status: OutboxStatus; n: number }>('SELECT status, count(*)::int AS n FROM outbox GROUP BY status');
}

/** Dropped unsent: its code is no longer usable. The sealed body goes with it. */
export async function markDropped(db: Queryable, id: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'dropped', sealed_body = NULL, locked_until = NULL, updated_at = $2 WHERE id = $1`,
    [id, now],
  );
}

/**
 * Sent: the sealed body is erased. The notice of a deleted account is the last place its address
 * is kept, so its recipient goes too.
 */
export async function markSent(db: Queryable, id: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'sent', sealed_body = NULL, locked_until = NULL, last_error = NULL,
            sent_at = $2, updated_at = $2,
            recipient = CASE WHEN purpose = 'account_deleted' THEN $3 ELSE recipient END
      WHERE id = $1`,
    [id, now, erasedValue],
  );
}

/** Failed for good: its delivery window is over. */
export async function markFailed(db: Queryable, id: string, reason: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE outbox SET status = 'failed', locked_until = NULL, last_error = $2, updated_at = $3 WHERE id = $1`,
    [id, reason, now],
  );
}

/** Not delivered this time: tried again at `nextAttempt`. */
export async function scheduleNextAttempt(
  db: Queryable,
  id: string,
  nextAttempt: Date,
  reason: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE outbox SET next_attempt_at = $2, locked_until = NULL, last_error = $3, updated_at = $4 WHERE id = $1`,
    [id, nextAttempt, reason, now],
  );
}
