import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Database, Queryable } from '../storage/database.js';
import { customerColumns, type CustomerRow } from './customers.js';

export const sessionIdleTimeoutSeconds = 14 * 24 * 60 * 60;
export const sessionAbsoluteLifetimeSeconds = 30 * 24 * 60 * 60;
// Sliding the idle window costs a write, so it is done at most this often per session.
const sessionTouchIntervalSeconds = 60;

/** The stored form of a session id: its SHA-256, so the table alone opens no session. */
export function hashSessionId(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('base64url');
}

export interface NewSession {
  /** The secret that goes into the cookie; never stored. */
  sessionId: string;
  expiresAt: Date;
}

/**
 * Opens a session for the customer, but only while `credentialVersion` (the version the password
 * was checked against) is still current: a login that checked a password a reset has since
 * replaced gets no session (null). FOR SHARE makes the statement wait for a password change in
 * progress and then look at the changed row. Without it, under READ COMMITTED a reset that has
 * deleted the sessions but not yet committed still shows the old version, and this session would
 * outlive the reset. The foreign key's own FOR KEY SHARE does not wait for a non-key update.
 */
export async function createSession(
  tx: Queryable,
  clock: Clock,
  customerId: string,
  credentialVersion: number,
): Promise<NewSession | null> {
  const sessionId = randomBytes(32).toString('base64url');
  const now = clock.now();
  const expiresAt = new Date(now.getTime() + sessionAbsoluteLifetimeSeconds * 1000);
  const rows = await tx.query(
    `INSERT INTO sessions (id_hash, customer_id, created_at, last_seen_at, expires_at)
     SELECT $1, id, $3, $3, $4 FROM customers WHERE id = $2 AND credential_version = $5 FOR SHARE
     RETURNING 1`,
    [hashSessionId(sessionId), customerId, now, expiresAt, credentialVersion],
  );
  return rows.length === 1 ? { sessionId, expiresAt } : null;
}

/** The customer behind a live session, sliding its idle window; null for a dead or unknown one. */
export async function findSessionCustomer(db: Database, clock: Clock, sessionId: string): Promise<CustomerRow | null> {
  const now = clock.now();
  const idleCutoff = new Date(now.getTime() - sessionIdleTimeoutSeconds * 1000);
  const rows = await db.query<CustomerRow & { last_seen_at: Date }>(
    `SELECT ${customerColumns
      .split(', ')
      .map((column) => `c.${column}`)
      .join(', ')}, s.last_seen_at
       FROM sessions s JOIN customers c ON c.id = s.customer_id
      WHERE s.id_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3`,
    [hashSessionId(sessionId), now, idleCutoff],
  );
  const row = rows[0];
  if (row === undefined) return null;
  if (now.getTime() - new Date(row.last_seen_at).getTime() > sessionTouchIntervalSeconds * 1000) {
    await db.query('UPDATE sessions SET last_seen_at = $2 WHERE id_hash = $1', [hashSessionId(sessionId), now]);
  }
  const { last_seen_at: _lastSeen, ...customer } = row;
  return customer;
}

/** Deletes a session; returns its customer when it was live, null when there was none (gone, expired, unknown). */
export async function deleteSession(db: Queryable, clock: Clock, sessionId: string): Promise<string | null> {
  const now = clock.now();
  const idleCutoff = new Date(now.getTime() - sessionIdleTimeoutSeconds * 1000);
  const rows = await db.query<{ customer_id: string; live: boolean }>(
    'DELETE FROM sessions WHERE id_hash = $1 RETURNING customer_id, (expires_at > $2 AND last_seen_at > $3) AS live',
    [hashSessionId(sessionId), now, idleCutoff],
  );
  return rows[0]?.live === true ? rows[0].customer_id : null;
}

/** A session as the customer's data export shows it; never its id or the hash of it. */
export interface SessionRecord {
  /** Whether this is the session the request came with. */
  current: boolean;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

/**
 * The customer's sessions for their data export, newest first. The one place that decides which
 * session columns a customer sees about themselves: a new column is added here and nowhere else.
 */
export async function listCustomerSessions(
  db: Queryable,
  customerId: string,
  currentSessionId: string | undefined,
): Promise<SessionRecord[]> {
  const rows = await db.query<{ current: boolean; created_at: Date; last_seen_at: Date; expires_at: Date }>(
    `SELECT id_hash = $2 AS current, created_at, last_seen_at, expires_at
       FROM sessions WHERE customer_id = $1 ORDER BY created_at DESC, id_hash`,
    [customerId, currentSessionId === undefined ? '' : hashSessionId(currentSessionId)],
  );
  const iso = (value: Date) => new Date(value).toISOString();
  return rows.map((row) => ({
    current: row.current,
    created_at: iso(row.created_at),
    last_seen_at: iso(row.last_seen_at),
    expires_at: iso(row.expires_at),
  }));
}

export async function deleteCustomerSessions(tx: Queryable, customerId: string): Promise<void> {
  await tx.query('DELETE FROM sessions WHERE customer_id = $1', [customerId]);
}

/**
 * Deletes up to `limit` sessions that ended (absolute lifetime or idle timeout) at least
 * `retentionSeconds` ago and returns how many. Rows another instance is deleting are skipped,
 * never waited for, so janitors in several instances share the work.
 */
export async function deleteExpiredSessions(
  db: Queryable,
  clock: Clock,
  retentionSeconds: number,
  limit: number,
): Promise<number> {
  const cutoff = clock.now().getTime() - retentionSeconds * 1000;
  const [row] = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM sessions WHERE id_hash IN (
         SELECT id_hash FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2
          LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [new Date(cutoff), new Date(cutoff - sessionIdleTimeoutSeconds * 1000), limit],
  );
  return row?.n ?? 0;
}
