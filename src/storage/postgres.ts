import pg from 'pg';
import { defaultDatabasePoolSize } from '../config.js';
import { DatabaseUnavailableError, type Database, type Queryable } from './database.js';
import { isDatabaseUnavailable, translateDriverError as translate } from './postgres-errors.js';
import { postgresTls } from './postgres-tls.js';

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<Row>(text: string, params: readonly unknown[] = []) {
      try {
        return (await client.query(text, params as unknown[])).rows as Row[];
      } catch (error) {
        throw translate(error);
      }
    },
    async exec(text: string) {
      try {
        await client.query(text); // no parameters: the simple protocol, which runs several statements
      } catch (error) {
        throw translate(error);
      }
    },
  };
}

export interface PostgresOptions {
  /** Connections in the pool. */
  max?: number;
  /** The server cancels a statement after this long (a stuck lock). */
  statementTimeoutMs?: number;
  /** The client gives up on an answer after this long (a server that stopped answering). */
  queryTimeoutMs?: number;
  /** PEM CA bundle that verifies the server's certificate (DATABASE_CA_FILE), in place of the public roots. */
  ca?: string | undefined;
  /** Told once when the server refused the statement limit as a connection parameter (a pooler). */
  notice?: (message: string) => void;
}

/**
 * PgBouncer (and other poolers) refuse a connection whose startup packet carries a parameter they
 * cannot restore on whichever server connection runs the next transaction, statement_timeout among
 * them: FATAL 08P01 "unsupported startup parameter: statement_timeout".
 */
export function isRefusedStatementTimeout(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    code === '08P01' &&
    typeof message === 'string' &&
    /unsupported startup parameter/i.test(message) &&
    message.includes('statement_timeout')
  );
}

/**
 * A PostgreSQL server through node-postgres, with a pool whose waits are all bounded. It runs the
 * same behind PgBouncer in transaction mode: no session state outlives a transaction (no session
 * SET, advisory lock, LISTEN, temporary table or named prepared statement), and the statement limit
 * is also set inside every transaction, where a pooler cannot lose it. TLS follows the URL's
 * sslmode as `postgresTls` reads it.
 */
export function openPostgres(
  url: string,
  {
    max = defaultDatabasePoolSize,
    statementTimeoutMs = 10_000,
    queryTimeoutMs = 12_000,
    ca,
    notice,
  }: PostgresOptions = {},
): Database {
  const { connectionString, ssl } = postgresTls(url, ca);
  const statementTimeout = Math.max(1, Math.round(statementTimeoutMs));
  const createPool = (startupStatementTimeout: boolean) => {
    const created = new pg.Pool({
      connectionString,
      ssl,
      max,
      // Short enough that a customer call answers 503 within two seconds while the server is away.
      connectionTimeoutMillis: 1_500,
      // Kept for five minutes without use, as the hashing threads are (src/auth/hash-pool.ts): a
      // burst after a shorter lull finds them open instead of forking a server process for each.
      idleTimeoutMillis: 5 * 60_000,
      // Bound any single statement, so a stuck lock or a silent server cannot hold a request forever.
      ...(startupStatementTimeout ? { statement_timeout: statementTimeout } : {}),
      query_timeout: queryTimeoutMs,
      application_name: 'storefront-auth',
    });
    created.on('error', () => {}); // an idle client lost its server; the next checkout reconnects
    return created;
  };
  let pool = createPool(true);

  /**
   * Runs `use` on the pool. When the server refuses the statement limit as a connection parameter,
   * the pool is replaced by one that connects without it, once, and `use` runs again: statements in
   * a transaction keep their limit (SET LOCAL), single statements get the role's statement_timeout.
   */
  async function onPool<T>(use: (current: pg.Pool) => Promise<T>): Promise<T> {
    const current = pool;
    try {
      return await use(current);
    } catch (error) {
      // Queries report it already translated into unavailability; a checkout reports it as it came.
      const reported = error instanceof DatabaseUnavailableError ? error.cause : error;
      if (!isRefusedStatementTimeout(reported)) throw error;
      if (current === pool) {
        pool = createPool(false);
        void current.end().catch(() => {});
        notice?.(
          'the database refused statement_timeout as a connection parameter (a pooler such as PgBouncer): statements inside transactions keep their limit; give the database role a statement_timeout for the others',
        );
      }
      return use(pool);
    }
  }

  return {
    query: (text, params) => onPool((current) => wrap(current).query(text, params)),
    exec: (text) => onPool((current) => wrap(current).exec(text)),
    async transaction(work) {
      let client: pg.PoolClient;
      try {
        client = await onPool((current) => current.connect());
      } catch (error) {
        throw translate(error);
      }
      let broken: Error | undefined;
      try {
        // One round trip, as a plain BEGIN. SET LOCAL ends with the transaction, so behind a
        // transaction-mode pooler it never reaches another client's transaction.
        await client.query(`BEGIN; SET LOCAL statement_timeout = ${statementTimeout}`);
        const result = await work(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        if (isDatabaseUnavailable(error)) {
          // A ROLLBACK on a connection that stopped answering would only wait out another
          // timeout; dropping the connection ends the transaction on the server just the same.
          broken = error as Error;
        } else {
          await client.query('ROLLBACK').catch((rollbackError: Error) => {
            broken = rollbackError; // the connection is unusable; the pool must not hand it out again
          });
        }
        throw translate(error);
      } finally {
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}
