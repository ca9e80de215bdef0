import type { Config } from './config.js';
import { loadOrCreateSecret } from './storage/data-folder.js';
import type { Database } from './storage/database.js';
import { defaultServerSettings, startEmbeddedPostgres, type ServerLog } from './storage/embedded-postgres.js';
import { maintenanceDeadline, openPostgres } from './storage/postgres.js';

/** The database the configuration names: a server's pool, or the embedded server started for it. */

export interface OpenedDatabase {
  /** The request path's: statements bounded near two seconds (requestDeadline). */
  db: Database;
  /**
   * The same pool under the long limits (maintenanceDeadline), for migrations, the janitor and the
   * command line: no connection more than DATABASE_POOL_SIZE.
   */
  maintenance: Database;
  secret: string;
  release(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Where the embedded server's warnings go. */
  log?: ServerLog;
  /** Connections in the pool; DATABASE_POOL_SIZE unless given. */
  max?: number;
  /** Embedded mode: use the server a running service owns instead of refusing (the command line). */
  shareRunning?: boolean;
  /** Embedded mode: start beside a DATA_DIR/pgdata of the earlier format (the import of it). */
  allowLegacyFolder?: boolean;
}

/**
 * The embedded server's connection slots: the pool, plus room for the command line, probes and the
 * server's own maintenance, never fewer than its default 30.
 */
export function embeddedMaxConnections(poolSize: number): number {
  return Math.max(Number(defaultServerSettings['max_connections']), poolSize + 20);
}

/**
 * The database the configuration names. In embedded mode that is the PostgreSQL server of the data
 * folder, started here as a child process and stopped on release.
 */
export async function openDatabase(config: Config, options: OpenDatabaseOptions = {}): Promise<OpenedDatabase> {
  const database = config.database;
  const max = options.max ?? database.poolSize;
  const log = options.log;
  // Expected behind PgBouncer, so not a warning: the service logs it at start, commands stay quiet.
  const pool = { max, ...(log === undefined ? {} : { notice: (message: string) => log.info({}, message) }) };
  if (database.mode === 'server') {
    const db = openPostgres(database.url, { ...pool, ca: database.ca });
    const maintenance = db.withDeadline(maintenanceDeadline);
    return { db, maintenance, secret: database.appSecret, release: () => db.close() };
  }
  const server = await startEmbeddedPostgres(database.dataDir, {
    ...(log === undefined ? {} : { log }),
    ...(options.shareRunning === undefined ? {} : { shareRunning: options.shareRunning }),
    ...(options.allowLegacyFolder === undefined ? {} : { allowLegacyFolder: options.allowLegacyFolder }),
    settings: { max_connections: String(embeddedMaxConnections(max)) },
  });
  let secret: string;
  try {
    secret = database.appSecret ?? loadOrCreateSecret(database.dataDir);
  } catch (error) {
    await server.stop();
    throw error;
  }
  const db = openPostgres(server.url, pool);
  return {
    db,
    maintenance: db.withDeadline(maintenanceDeadline),
    secret,
    async release() {
      await db.close();
      await server.stop();
    },
  };
}
