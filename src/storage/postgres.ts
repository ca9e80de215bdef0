import pg from 'pg';
import type { Database, Queryable } from './database.js';
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
}

/**
 * A PostgreSQL server through node-postgres, with a pool whose waits are all bounded. TLS follows
 * the URL's sslmode as `postgresTls` reads it.
 */
export function openPostgres(
  url: string,
  { max = 10, statementTimeoutMs = 10_000, queryTimeoutMs = 12_000, ca }: PostgresOptions = {},
): Database {
  const { connectionString, ssl } = postgresTls(url, ca);
  const pool = new pg.Pool({
    connectionString,
    ssl,
    max,
    // Short enough that a customer call answers 503 within two seconds while the server is away.
    connectionTimeoutMillis: 1_500,
    idleTimeoutMillis: 30_000,
    // Bound any single statement, so a stuck lock or a silent server cannot hold a request forever.
    statement_timeout: statementTimeoutMs,
    query_timeout: queryTimeoutMs,
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
