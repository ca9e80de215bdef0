import { certificateFailure } from '../tls.js';
import { DatabaseUnavailableError } from './database.js';

/**
 * Server-reported SQLSTATEs that mean "the database is not answering us", not "this SQL is wrong":
 * class 08 (connection exception), the server shutting down or starting (57P01–57P03), no
 * connection slot left (53300), and our own time limits on a statement or a lock (57014, 55P03),
 * which fire when a table is locked or the server is overloaded.
 */
const unavailableStates = new Set(['57P01', '57P02', '57P03', '53300', '57014', '55P03']);
const connectionExceptionClass = '08';

// Socket errors from connecting to, or talking with, the server.
const socketCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * node-postgres and pg-pool raise these as plain Errors, told apart only by their text (pg 8.x):
 * a query with no answer within query_timeout, a client or pool that gave up connecting or waiting
 * for a free client, a connection lost or closed under a query, a pool already ended at shutdown.
 */
const driverMessages = [
  /^Query read timeout$/,
  /^timeout exceeded when trying to connect$/,
  /^timeout expired$/,
  /^Connection terminated/,
  /^Connection ended/,
  /is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
];

/** True when `error` means the database could not be reached or did not answer in time. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  const { code, severity } = error as { code?: unknown; severity?: unknown };
  // Errors the server reported carry a severity; their text is the server's, so only the code counts.
  if (severity !== undefined) {
    return typeof code === 'string' && (unavailableStates.has(code) || code.startsWith(connectionExceptionClass));
  }
  if (typeof code === 'string' && socketCodes.has(code)) return true;
  // A refused server certificate: the database cannot be reached safely, which is an outage to
  // retry (a CA bundle or certificate being rotated), not a bug in the request.
  if (certificateFailure(error) !== undefined) return true;
  return driverMessages.some((pattern) => pattern.test(error.message));
}

/** Unavailability becomes DatabaseUnavailableError (answered 503); anything else is a real error. */
export function translateDriverError(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError) return error;
  return isDatabaseUnavailable(error) ? new DatabaseUnavailableError(error) : error;
}

/**
 * A named statement that the connection's server does not have, or has already: what a pooler in
 * transaction mode that does not track them (PgBouncer before 1.21, or without
 * max_prepared_statements) answers, since consecutive statements reach different servers. Both
 * fail before the statement runs.
 */
export function isPreparedStatementMismatch(error: unknown): boolean {
  const { code } = (error ?? {}) as { code?: unknown };
  return code === '26000' || code === '42P05';
}
