import pg from 'pg';
import { DatabaseUnavailableError, type Database, type Queryable } from './database.js';

// Server-reported states that mean "the server is going away or not accepting us".
const unavailableStates = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);

/**
 * Connection trouble becomes DatabaseUnavailableError (answered 503); anything else is a real
 * error. Errors the server reported carry a `severity`; the others come from the socket or pool.
 */
function translate(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { code, severity } = error as { code?: unknown; severity?: unknown };
  if (severity !== undefined)
    return typeof code === 'string' && unavailableStates.has(code) ? new DatabaseUnavailableError(error) : error;
  const connectionTrouble =
    (typeof code === 'string' && /^E(CONNREFUSED|CONNRESET|TIMEDOUT|HOSTUNREACH|NOTFOUND|PIPE)$/.test(code)) ||
    /Connection terminated|timeout exceeded when trying to connect|connection error|Connection ended/i.test(
      error.message,
    );
  return connectionTrouble ? new DatabaseUnavailableError(error) : error;
}

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
}

/** A PostgreSQL server through node-postgres, with a pool whose waits are all bounded. */
export function openPostgres(url: string, { max = 10 }: PostgresOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // Short enough that a customer call answers 503 within two seconds while the server is away.
    connectionTimeoutMillis: 1_500,
    idleTimeoutMillis: 30_000,
    // Bound any single statement, so a stuck lock or a silent server cannot hold a request forever.
    statement_timeout: 10_000,
    query_timeout: 12_000,
    application_name: 'storefront-auth',
  });
  pool.on('error', () => {}); // an idle client lost its server; the next checkout reconnects
  const base = wrap(pool);
  return {
    ...base,
    async transaction(work) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw translate(error);
      }
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await work(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => {
          broken = rollbackError; // the connection is unusable; the pool must not hand it out again
        });
        throw translate(error);
      } finally {
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}
