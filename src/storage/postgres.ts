import pg from 'pg';
import { DatabaseUnavailableError, preparedName, type Database, type Queryable } from './database.js';
import {
  isDatabaseUnavailable,
  isPreparedStatementMismatch,
  translateDriverError as translate,
} from './postgres-errors.js';
import { postgresTls } from './postgres-tls.js';

/** The pool size the service has always used; DATABASE_POOL_SIZE (config.ts) defaults to it. */
export const defaultDatabasePoolSize = 10;

/** How often a transaction the server undid for a deadlock or serialization failure is tried. */
const transactionAttempts = 3;

/**
 * Statements on `client`; with `queryTimeoutMs`, each waits that long for its answer instead of the
 * pool's time; with `named`, a statement marked `prepared` runs under its name.
 */
function wrap(client: pg.Pool | pg.PoolClient, queryTimeoutMs?: number, named = false): Queryable {
  const timeout = queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs };
  return {
    async query<Row>(text: string, params: readonly unknown[] = []) {
      const name = named ? preparedName(text) : undefined;
      try {
        const config = { text, values: params as unknown[], ...timeout, ...(name === undefined ? {} : { name }) };
        return (await client.query(config)).rows as Row[];
      } catch (error) {
        throw translate(error);
      }
    },
    async exec(text: string) {
      try {
        // No parameters: the simple protocol, which runs several statements.
        await client.query({ text, ...timeout });
      } catch (error) {
        throw translate(error);
      }
    },
  };
}

/** How long one statement of a pool may take. */
export interface Deadline {
  /** The server cancels a statement after this long (a stuck lock, an overloaded server). */
  statementTimeoutMs: number;
  /**
   * The client gives up on an answer after this long (a server or network that stopped answering
   * on an open connection) and the connection is discarded, never handed out again.
   */
  queryTimeoutMs: number;
}

/**
 * The request path's: a customer-facing statement takes milliseconds, so a database that goes
 * silent mid-query is a 503 within about two seconds, as a refused connection is (1.5 s). The
 * server's limit fires first, so a merely slow statement is cancelled cleanly, and its backend
 * freed, before the client gives up on the connection.
 */
export const requestDeadline: Deadline = { statementTimeoutMs: 1_500, queryTimeoutMs: 2_000 };

/** Migrations, the janitor's batches, the command line, imports and table copies: nobody waits on them. */
export const maintenanceDeadline: Deadline = { statementTimeoutMs: 10_000, queryTimeoutMs: 12_000 };

/** A PostgreSQL pool under its own deadline, which can be used under another one. */
export interface PostgresDatabase extends Database {
  /**
   * The same pool and connections under `deadline` (maintenanceDeadline: migrations, the janitor,
   * the command line). Each of its statements runs in a transaction, where SET LOCAL gives it the
   * deadline's limit in place of the connection's own. Closing it closes the pool.
   */
  withDeadline(deadline: Deadline): Database;
}

export interface PostgresOptions extends Partial<Deadline> {
  /** Connections in the pool. */
  max?: number;
  /** PEM CA bundle that verifies the server's certificate (DATABASE_CA_FILE), in place of the public roots. */
  ca?: string | undefined;
  /**
   * Told once when the server refused the statement limit as a connection parameter (a pooler),
   * and once when it refused a named statement.
   */
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

/** What a pool connects with, and the limits each connection starts with. */
interface PoolSettings {
  connectionString: string;
  ssl: ReturnType<typeof postgresTls>['ssl'];
  max: number;
  /** The server's statement limit, in whole milliseconds. */
  statementTimeout: number;
  queryTimeoutMs: number;
  notice: ((message: string) => void) | undefined;
  /** Told when the pool learns that a pooler stands between it and the server. */
  pooled?: () => void;
}

function createPool(settings: PoolSettings, startupStatementTimeout: boolean): pg.Pool {
  const created = new pg.Pool({
    connectionString: settings.connectionString,
    ssl: settings.ssl,
    max: settings.max,
    // Short enough that a customer call answers 503 within two seconds while the server is away.
    connectionTimeoutMillis: 1_500,
    // Kept for five minutes without use, as the hashing threads are (src/auth/rules/hash-pool.ts): a
    // burst after a shorter lull finds them open instead of forking a server process for each.
    idleTimeoutMillis: 5 * 60_000,
    // Bound any single statement, so a stuck lock or a silent server cannot hold a request forever.
    ...(startupStatementTimeout ? { statement_timeout: settings.statementTimeout } : {}),
    query_timeout: settings.queryTimeoutMs,
    application_name: 'storefront-auth',
  });
  created.on('error', () => {}); // an idle client lost its server; the next checkout reconnects
  // pg-pool drops its own listener from a client while it is checked out: a connection that dies
  // between two statements of a transaction would otherwise raise an uncaught exception. The
  // next statement on it fails with its own error instead.
  created.on('connect', (client) => client.on('error', () => {}));
  return created;
}

/** The pool, which a pooler's refusal of the startup statement limit replaces once. */
interface ReplaceablePool {
  onPool<T>(use: (current: pg.Pool) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

function replaceablePool(settings: PoolSettings): ReplaceablePool {
  let pool = createPool(settings, true);
  return {
    /**
     * Runs `use` on the pool. When the server refuses the statement limit as a connection
     * parameter, the pool is replaced by one that connects without it, once, and `use` runs again:
     * statements in a transaction keep their limit (SET LOCAL), single statements get the role's
     * statement_timeout.
     */
    async onPool(use) {
      const current = pool;
      try {
        return await use(current);
      } catch (error) {
        // Queries report it already translated into unavailability; a checkout reports it as it came.
        const reported = error instanceof DatabaseUnavailableError ? error.cause : error;
        if (!isRefusedStatementTimeout(reported)) throw error;
        if (current === pool) {
          settings.pooled?.();
          pool = createPool(settings, false);
          void current.end().catch(() => {});
          settings.notice?.(
            'the database refused statement_timeout as a connection parameter (a pooler such as PgBouncer): statements inside transactions keep their limit; give the database role a statement_timeout for the others',
          );
        }
        return use(pool);
      }
    },
    close: () => pool.end(),
  };
}

type Transaction = <T>(work: (tx: Queryable) => Promise<T>, deadline?: Deadline) => Promise<T>;

/** Runs `work` in one transaction on the pool, under `deadline` when given, else the pool's own. */
function transactionsOn({ onPool }: ReplaceablePool, statementTimeout: number): Transaction {
  async function runTransaction<T>(work: (tx: Queryable) => Promise<T>, deadline?: Deadline): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await onPool((current) => current.connect());
    } catch (error) {
      throw translate(error);
    }
    let broken: Error | undefined;
    const limit = deadline === undefined ? statementTimeout : Math.max(1, Math.round(deadline.statementTimeoutMs));
    const tx = wrap(client, deadline?.queryTimeoutMs);
    try {
      // One round trip, as a plain BEGIN. SET LOCAL ends with the transaction, so behind a
      // transaction-mode pooler it never reaches another client's transaction.
      await tx.exec(`BEGIN; SET LOCAL statement_timeout = ${limit}`);
      const result = await work(tx);
      await tx.exec('COMMIT');
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
  }

  return async (work, deadline) => {
    // A deadlock or a serialization failure is the server undoing one transaction of two so the
    // other can go on: nothing of it was kept, so it runs again. Past the attempts it is a
    // contention to wait out (503), never a bug (500).
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await runTransaction(work, deadline);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code !== '40P01' && code !== '40001') throw error;
        if (attempt === transactionAttempts) throw new DatabaseUnavailableError(error);
      }
    }
  };
}

/**
 * A PostgreSQL server through node-postgres, with a pool whose waits are all bounded. It runs the
 * same behind PgBouncer in transaction mode: no session state outlives a transaction (no session
 * SET, advisory lock, LISTEN or temporary table), the statement limit is also set inside every
 * transaction, where a pooler cannot lose it, and the hot path's named statements (`prepared`,
 * single statements outside transactions) are given up as soon as a pooler shows itself. TLS follows the URL's
 * sslmode as `postgresTls` reads it. Its limits are the request path's unless given (Deadline); a
 * connection whose answer did not come in time is destroyed, not returned: its late answer would
 * otherwise be read as the next statement's. pg-pool's `query` releases a client with its error,
 * which removes it, and `transaction` releases it as broken.
 */
export function openPostgres(
  url: string,
  {
    max = defaultDatabasePoolSize,
    statementTimeoutMs = requestDeadline.statementTimeoutMs,
    queryTimeoutMs = requestDeadline.queryTimeoutMs,
    ca,
    notice,
  }: PostgresOptions = {},
): PostgresDatabase {
  const { connectionString, ssl } = postgresTls(url, ca);
  const statementTimeout = Math.max(1, Math.round(statementTimeoutMs));
  // Named statements live in a server connection's session, which a pooler in transaction mode
  // does not keep: they are given up once a pooler shows itself, by its refusal of the statement
  // limit or of a named statement (then the statement runs again unnamed: neither refusal ran it).
  let naming = true;
  const pooled = () => (naming = false);
  const pools = replaceablePool({ connectionString, ssl, max, statementTimeout, queryTimeoutMs, notice, pooled });
  const transaction = transactionsOn(pools, statementTimeout);
  const { onPool, close } = pools;
  async function query<Row>(text: string, params?: readonly unknown[]): Promise<Row[]> {
    const named = naming && preparedName(text) !== undefined;
    try {
      return await onPool((current) => wrap(current, undefined, named).query<Row>(text, params));
    } catch (error) {
      if (!named || !isPreparedStatementMismatch(error)) throw error;
      if (naming) {
        pooled();
        notice?.(
          'the database refused a named statement (a pooler in transaction mode that does not track them): statements now run unnamed',
        );
      }
      return onPool((current) => wrap(current).query<Row>(text, params));
    }
  }
  return {
    query,
    exec: (text) => onPool((current) => wrap(current).exec(text)),
    transaction: (work) => transaction(work),
    close,
    withDeadline: (deadline) => ({
      query: (text, params) => transaction((tx) => tx.query(text, params), deadline),
      exec: (text) => transaction((tx) => tx.exec(text), deadline),
      transaction: (work) => transaction(work, deadline),
      close,
    }),
  };
}
