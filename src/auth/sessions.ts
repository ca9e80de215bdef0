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

export async function createSession(tx: Queryable, clock: Clock, customerId: string): Promise<NewSession> {
  const sessionId = randomBytes(32).toString('base64url');
  const now = clock.now();
  const expiresAt = new Date(now.getTime() + sessionAbsoluteLifetimeSeconds * 1000);
  await tx.query(
    'INSERT INTO sessions (id_hash, customer_id, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $3, $4)',
    [hashSessionId(sessionId), customerId, now, expiresAt],
  );
  return { sessionId, expiresAt };
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

export async function deleteCustomerSessions(tx: Queryable, customerId: string): Promise<void> {
  await tx.query('DELETE FROM sessions WHERE customer_id = $1', [customerId]);
}
