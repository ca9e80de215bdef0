import { eventStatementParts } from '../../hooks/webhook-outbox.js';
import type { SignInMethod } from '../../hooks/webhook-catalogue.js';
import { createHash, randomBytes } from 'node:crypto';
import { secondsBefore, type Clock } from '../../clock.js';
import {
  deleteInBatch,
  isUuid,
  prepared,
  StatementParams,
  type Queryable,
  type StoreQueryable,
} from '../../storage/database.js';
import { customerColumnsOf, type CustomerRow } from './customers.js';
import { deviceFamily } from '../rules/device-family.js';
import { maskAddress } from '../rules/network.js';
import { refreshSeenDevice, type DeviceKey } from './known-devices.js';
import { fail, ok, type Result } from '../result.js';

export const sessionIdleTimeoutSeconds = 14 * 24 * 60 * 60;
export const sessionAbsoluteLifetimeSeconds = 30 * 24 * 60 * 60;
// Sliding the idle window costs a write, so it is done at most this often per session; the
// last_seen_at the account area shows may lag by as much.
export const sessionTouchIntervalSeconds = 5 * 60;
/** The longest user-agent kept for a session, in characters. */
export const sessionUserAgentMaxLength = 256;

/** The stored form of a session id: its SHA-256, so the table alone opens no session. */
export function hashSessionId(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('base64url');
}

/** Where a login came from, as the request gave it; stored only cut and masked. */
export interface SessionClient {
  userAgent: string | undefined;
  address: string;
}

/** The user-agent cut to its first 256 characters (code points, so no character is split). */
export function cutUserAgent(userAgent: string | undefined): string | null {
  if (userAgent === undefined || userAgent === '') return null;
  return [...userAgent].slice(0, sessionUserAgentMaxLength).join('');
}

export interface NewSession {
  /** The secret that goes into the cookie; never stored. */
  sessionId: string;
  expiresAt: Date;
}

/** A session to open, and what a sign-in does in the same statement. */
export interface SessionOpening {
  customerId: string;
  /** The credential version the password was checked against: no session opens once it changed. */
  credentialVersion: number;
  client?: SessionClient | undefined;
  /** The session the request carried, ended when this one opens (never reused: session fixation). */
  replaces?: string | undefined;
  /** The sign-in's device, refreshed when it was seen within the look-back (see refreshSeenDevice). */
  knownDevice?: DeviceKey | undefined;
  /** How a sign-in signed in: its `customer.signed_in` is written by the same statement, for endpoints that asked. */
  signedIn?: SignInMethod | undefined;
}

export interface OpenedSession {
  session: NewSession;
  /** The device was seen within the look-back, and its row now says it was seen again. */
  knownDeviceRefreshed: boolean;
  /** A `customer.signed_in` was written (an endpoint of the store asked for it). */
  eventRecorded: boolean;
}

/** The INSERT of createSession, its values added to `params`. */
function insertSessionSql(
  params: StatementParams,
  storeId: string,
  opening: SessionOpening,
  session: NewSession,
  now: Date,
): string {
  const { client } = opening;
  const store = params.add(storeId);
  const idHash = params.add(hashSessionId(session.sessionId));
  const at = params.add(now);
  const expiresAt = params.add(session.expiresAt);
  const userAgent = params.add(cutUserAgent(client?.userAgent));
  const address = params.add(client === undefined ? null : maskAddress(client.address));
  const customerId = params.add(opening.customerId);
  const version = params.add(opening.credentialVersion);
  return `INSERT INTO sessions (store_id, id_hash, customer_id, created_at, last_seen_at, expires_at, user_agent, client_address)
     SELECT store_id, ${idHash}, id, ${at}, ${at}, ${expiresAt}, ${userAgent}, ${address}
       FROM customers WHERE store_id = ${store} AND id = ${customerId} AND credential_version = ${version}
        AND (blocked_at IS NULL OR blocked_until <= ${at}) FOR SHARE`;
}

/**
 * Opens a session for the customer, but only while `credentialVersion` (the version the password
 * was checked against) is still current and no block holds: a login that checked a password a
 * reset has since replaced, or that a block by staff overtook, gets no session (null). FOR SHARE makes the statement wait for a password change in
 * progress and then look at the changed row. Without it, under READ COMMITTED a reset that has
 * deleted the sessions but not yet committed still shows the old version, and this session would
 * outlive the reset. The foreign key's own FOR KEY SHARE does not wait for a non-key update.
 * public_id takes its random default: a handle of its own, unrelated to the cookie.
 *
 * A sign-in's `replaces` and `knownDevice` go into the same statement, so one round trip opens the
 * session, ends the one the request carried and refreshes a known device, with no transaction:
 * the parts act only when the session opened, and commit together. They share one snapshot, so
 * the device is found as it was before this sign-in. A device not seen lately is left to
 * noteSignIn, whose transaction records it with its notice, so a notice that cannot be queued is
 * tried again next time.
 */
export async function createSession(
  db: StoreQueryable,
  clock: Clock,
  opening: SessionOpening,
): Promise<OpenedSession | null> {
  const sessionId = randomBytes(32).toString('base64url');
  const now = clock.now();
  const session = { sessionId, expiresAt: new Date(now.getTime() + sessionAbsoluteLifetimeSeconds * 1000) };
  const params = new StatementParams();
  const insert = insertSessionSql(params, db.storeId, opening, session, now);
  const { replaces, knownDevice, signedIn } = opening;
  if (replaces === undefined && knownDevice === undefined && signedIn === undefined) {
    // Named, as each of the shapes below: a login's one write. Their texts never vary otherwise.
    const rows = await db.query(prepared(`${insert} RETURNING 1`), params.values);
    return rows.length === 1 ? { session, knownDeviceRefreshed: false, eventRecorded: false } : null;
  }
  const parts = [`opened AS (${insert} RETURNING customer_id)`];
  if (replaces !== undefined) {
    const replacedHash = params.add(hashSessionId(replaces));
    const store = params.add(db.storeId);
    parts.push(
      `replaced AS (DELETE FROM sessions WHERE store_id = ${store} AND id_hash = ${replacedHash} AND EXISTS (SELECT 1 FROM opened))`,
    );
  }
  if (knownDevice !== undefined) {
    parts.push(`device AS (${refreshSeenDevice(params, db.storeId, 'opened', knownDevice, now)})`);
  }
  if (signedIn !== undefined) {
    // Only when the session opened: no event for a sign-in a password change refused.
    const event = { type: 'customer.signed_in' as const, customerId: opening.customerId, data: { method: signedIn } };
    parts.push(...eventStatementParts(params, 'signed_in', db.storeId, event, now, 'EXISTS (SELECT 1 FROM opened)'));
  }
  const seen = knownDevice === undefined ? 'false' : 'EXISTS (SELECT 1 FROM device)';
  const recorded = signedIn === undefined ? 'false' : 'EXISTS (SELECT 1 FROM signed_in)';
  const [row] = await db.query<{ opened: boolean; device_seen: boolean; event_recorded: boolean }>(
    prepared(`WITH ${parts.join(',\n     ')}
     SELECT EXISTS (SELECT 1 FROM opened) AS opened, ${seen} AS device_seen, ${recorded} AS event_recorded`),
    params.values,
  );
  return row?.opened === true
    ? { session, knownDeviceRefreshed: row.device_seen, eventRecorded: row.event_recorded }
    : null;
}

// Built once, and named: a session read is the most frequent statement of all. Exported for the
// benchmark's yardstick, which runs exactly this statement.
export const findSessionCustomerSql = prepared(`SELECT ${customerColumnsOf('c')}, s.last_seen_at
       FROM sessions s JOIN customers c ON c.store_id = s.store_id AND c.id = s.customer_id
      WHERE s.store_id = $4 AND s.id_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3`);

/**
 * The customer behind a live session of the store, sliding its idle window; null for a dead or
 * unknown one, and for another store's: a cookie sent to a sibling store's host opens nothing.
 */
export async function findSessionCustomer(
  db: StoreQueryable,
  clock: Clock,
  sessionId: string,
): Promise<CustomerRow | null> {
  const { now, idleCutoff } = idleCutoffOf(clock);
  const idHash = hashSessionId(sessionId);
  const rows = await db.query<CustomerRow & { last_seen_at: Date }>(findSessionCustomerSql, [
    idHash,
    now,
    idleCutoff,
    db.storeId,
  ]);
  const row = rows[0];
  if (row === undefined) return null;
  await slideIdleWindow(db, idHash, now, row.last_seen_at);
  const { last_seen_at: _lastSeen, ...customer } = row;
  return customer;
}

/** Moves a live session's last use to now, at most once per touch interval (a write each time). */
async function slideIdleWindow(db: StoreQueryable, idHash: string, now: Date, lastSeenAt: Date): Promise<void> {
  if (now.getTime() - new Date(lastSeenAt).getTime() > sessionTouchIntervalSeconds * 1000) {
    await db.query('UPDATE sessions SET last_seen_at = $2 WHERE store_id = $3 AND id_hash = $1', [
      idHash,
      now,
      db.storeId,
    ]);
  }
}

/** A live session with its customer, as a backend's introspection shows it: never the secret or its hash. */
export interface LiveSession {
  customer: CustomerRow;
  /** The public handle the account area's session list shows. */
  publicId: string;
  createdAt: Date;
  expiresAt: Date;
}

// The session check's statement with the session's own public columns; built once, as a backend
// asks on each of its requests.
const findLiveSessionSql =
  prepared(`SELECT ${customerColumnsOf('c')}, s.last_seen_at, s.public_id::text AS session_public_id,
            s.created_at AS session_created_at, s.expires_at AS session_expires_at
       FROM sessions s JOIN customers c ON c.store_id = s.store_id AND c.id = s.customer_id
      WHERE s.store_id = $4 AND s.id_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3`);

type LiveSessionRow = CustomerRow & {
  last_seen_at: Date;
  session_public_id: string;
  session_created_at: Date;
  session_expires_at: Date;
};

/**
 * The session of a cookie value and its customer, by the session check's rule (findSessionCustomer),
 * sliding its idle window the same way; null for a dead, revoked or unknown one.
 */
export async function findLiveSession(
  db: StoreQueryable,
  clock: Clock,
  sessionId: string,
): Promise<LiveSession | null> {
  const { now, idleCutoff } = idleCutoffOf(clock);
  const idHash = hashSessionId(sessionId);
  const rows = await db.query<LiveSessionRow>(findLiveSessionSql, [idHash, now, idleCutoff, db.storeId]);
  const row = rows[0];
  if (row === undefined) return null;
  await slideIdleWindow(db, idHash, now, row.last_seen_at);
  const {
    last_seen_at: _lastSeen,
    session_public_id: publicId,
    session_created_at: createdAt,
    session_expires_at: expiresAt,
    ...customer
  } = row;
  return { customer, publicId, createdAt: new Date(createdAt), expiresAt: new Date(expiresAt) };
}

/** Deletes a session; returns its customer when it was live, null when there was none (gone, expired, unknown). */
export async function deleteSession(db: StoreQueryable, clock: Clock, sessionId: string): Promise<string | null> {
  const { now, idleCutoff } = idleCutoffOf(clock);
  const rows = await db.query<{ customer_id: string; live: boolean }>(
    `DELETE FROM sessions WHERE store_id = $4 AND id_hash = $1
     RETURNING customer_id, (expires_at > $2 AND last_seen_at > $3) AS live`,
    [hashSessionId(sessionId), now, idleCutoff, db.storeId],
  );
  return rows[0]?.live === true ? rows[0].customer_id : null;
}

/** A session as the account area shows it. */
export interface SessionView {
  id: string;
  current: boolean;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  client: { user_agent: string | null; device: string; address: string | null };
}

interface SessionRow {
  id_hash: string;
  public_id: string;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  user_agent: string | null;
  client_address: string | null;
}

/** What makes a session live at `$2` (now) with idle cutoff `$3`. */
const liveCondition = 'expires_at > $2 AND last_seen_at > $3';

export function idleCutoffOf(clock: Clock): { now: Date; idleCutoff: Date } {
  const now = clock.now();
  return { now, idleCutoff: secondsBefore(now, sessionIdleTimeoutSeconds) };
}

/** The customer's live sessions, newest first; `currentSessionId` is the caller's cookie, if any. */
export async function listCustomerSessions(
  db: StoreQueryable,
  clock: Clock,
  customerId: string,
  currentSessionId?: string,
): Promise<SessionView[]> {
  const { now, idleCutoff } = idleCutoffOf(clock);
  const rows = await db.query<SessionRow>(
    `SELECT id_hash, public_id::text AS public_id, created_at, last_seen_at, expires_at, user_agent, client_address
       FROM sessions WHERE store_id = $4 AND customer_id = $1 AND ${liveCondition}
      ORDER BY created_at DESC, public_id DESC`,
    [customerId, now, idleCutoff, db.storeId],
  );
  const currentHash = currentSessionId === undefined ? undefined : hashSessionId(currentSessionId);
  return rows.map((row) => ({
    id: row.public_id,
    current: row.id_hash === currentHash,
    created_at: new Date(row.created_at).toISOString(),
    last_seen_at: new Date(row.last_seen_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
    client: { user_agent: row.user_agent, device: deviceFamily(row.user_agent), address: row.client_address },
  }));
}

/** How many live sessions the customer has, by the same rule as every other reader of sessions. */
export async function countLiveCustomerSessions(db: StoreQueryable, clock: Clock, customerId: string): Promise<number> {
  const { now, idleCutoff } = idleCutoffOf(clock);
  const [row] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM sessions WHERE store_id = $4 AND customer_id = $1 AND ${liveCondition}`,
    [customerId, now, idleCutoff, db.storeId],
  );
  return row?.n ?? 0;
}

/**
 * Deletes one of the customer's live sessions by its public handle, and tells whether it was the
 * session of `currentSessionId`. Fails with `not_found` when the customer has no such live session,
 * whether the handle is malformed, unknown or another customer's: the caller answers all three alike.
 */
export async function revokeCustomerSession(
  db: StoreQueryable,
  clock: Clock,
  customerId: string,
  publicId: string,
  currentSessionId: string,
): Promise<Result<{ current: boolean }, 'not_found'>> {
  if (!isUuid(publicId)) return fail('not_found');
  const { now, idleCutoff } = idleCutoffOf(clock);
  const rows = await db.query<{ id_hash: string }>(
    `DELETE FROM sessions WHERE store_id = $5 AND customer_id = $1 AND public_id = $4 AND ${liveCondition}
     RETURNING id_hash`,
    [customerId, now, idleCutoff, publicId, db.storeId],
  );
  const row = rows[0];
  return row === undefined ? fail('not_found') : ok({ current: row.id_hash === hashSessionId(currentSessionId) });
}

/**
 * Deletes every session of the customer except `keepSessionId` (all of them without one) and
 * returns how many of those were live: dead ones go too, but were no device to sign out.
 */
export async function revokeCustomerSessions(
  db: StoreQueryable,
  clock: Clock,
  customerId: string,
  keepSessionId?: string,
): Promise<number> {
  const { now, idleCutoff } = idleCutoffOf(clock);
  const [row] = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM sessions WHERE store_id = $5 AND customer_id = $1 AND ($4::text IS NULL OR id_hash <> $4)
       RETURNING ${liveCondition} AS live)
     SELECT count(*) FILTER (WHERE live)::int AS n FROM gone`,
    [customerId, now, idleCutoff, keepSessionId === undefined ? null : hashSessionId(keepSessionId), db.storeId],
  );
  return row?.n ?? 0;
}

export async function deleteCustomerSessions(tx: StoreQueryable, customerId: string): Promise<void> {
  await tx.query('DELETE FROM sessions WHERE store_id = $2 AND customer_id = $1', [customerId, tx.storeId]);
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
  const cutoff = secondsBefore(clock.now(), retentionSeconds);
  return deleteInBatch(
    db,
    { table: 'sessions', key: ['store_id', 'id_hash'], where: 'expires_at <= $1 OR last_seen_at <= $2' },
    [cutoff, secondsBefore(cutoff, sessionIdleTimeoutSeconds)],
    limit,
  );
}
