import { randomBytes } from 'node:crypto';
import type net from 'node:net';
import { Cluster } from 'ioredis';
import pg from 'pg';
import { forStore, type Database, type StoreDatabase } from '../../src/storage/database.js';
import { MemoryCounterStore, type CounterStore } from '../../src/storage/counters.js';
import { migrate } from '../../src/storage/migrations.js';
import { maintenanceDeadline, openPostgres } from '../../src/storage/postgres.js';
import { RedisCounterStore } from '../../src/storage/redis.js';
import { ensureStore, firstStoreId } from '../../src/store/store.js';
import { systemClock } from '../../src/clock.js';
import { perDescribe } from './per-describe.js';
import { startTestServer, testServerUrlVariable, type TestServer } from './embedded-server.js';

/**
 * Which backends this run uses: `npm test` alone runs on one embedded PostgreSQL server; with
 * DATABASE_URL/REDIS_URL it is those servers.
 */
export const testBackends = {
  database: process.env['DATABASE_URL'] === undefined ? 'embedded' : 'postgres',
  cache: process.env['REDIS_URL'] === undefined ? 'memory' : 'redis',
} as const;

export interface TestDatabase {
  db: Database;
  /** For child processes: the URL of this file's own database. */
  url: string;
  drop(): Promise<void>;
}

/**
 * Set by `npm run test:pgbouncer`: the PostgreSQL server itself, while DATABASE_URL names the
 * PgBouncer in front of it. Test databases are made and dropped here, since a pooler holds server
 * connections to a database and would stand in the way of dropping it; the code under test still
 * connects through DATABASE_URL.
 */
export const testDirectUrlVariable = 'STOREFRONT_TEST_DIRECT_URL';

let ownServer: Promise<TestServer> | undefined;
let ownServerUsers = 0;

interface Server {
  /** Where the code under test connects (a pooler, when there is one). */
  url: string;
  /** The server itself: databases are made and dropped here. */
  directUrl: string;
  release(): Promise<void>;
}

/**
 * The server test databases are made on: DATABASE_URL, else the embedded server `npm test` started
 * for the run. A file run on its own starts an embedded server for as long as it has databases.
 */
async function testServer(): Promise<Server> {
  const url = process.env['DATABASE_URL'] ?? process.env[testServerUrlVariable];
  if (url !== undefined) return { url, directUrl: process.env[testDirectUrlVariable] ?? url, release: async () => {} };
  ownServerUsers += 1;
  ownServer ??= startTestServer();
  const started = ownServer;
  const { server } = await started;
  return {
    url: server.adminUrl,
    directUrl: server.adminUrl,
    async release() {
      ownServerUsers -= 1;
      if (ownServerUsers > 0) return;
      ownServer = undefined;
      await (await started).remove();
    },
  };
}

/** How to reach the server of a database URL with `net.connect`: its socket, or its host and port. */
export function serverTarget(url: string): net.NetConnectOpts {
  const parsed = new URL(url);
  const port = Number(parsed.port || 5432);
  const socketFolder = parsed.searchParams.get('host');
  if (socketFolder !== null && socketFolder.startsWith('/')) return { path: `${socketFolder}/.s.PGSQL.${port}` };
  return { host: parsed.hostname || '127.0.0.1', port };
}

/** `url` with another database name, its other parts (a socket folder in ?host=) kept. */
export function withDatabase(url: string, name: string): string {
  const changed = new URL(url);
  changed.pathname = `/${name}`;
  return changed.toString();
}

/**
 * The database a test file runs against: a fresh database on the test server, made for this file
 * and dropped at the end, so parallel files and runs never see each other's rows.
 */
export async function openTestDatabase(): Promise<TestDatabase> {
  const scratch = await createScratchDatabase('sfa_test');
  // The long limits, not the request path's 2 s: tests seed thousands of rows in one statement and
  // hold locks while other work waits on them, on a shared machine. The request path's own limits
  // are tested where they matter (test/production/faults.test.ts, test/storage/deadlines.test.ts).
  const db = openPostgres(scratch.url, { max: 5, ...maintenanceDeadline });
  return {
    db,
    url: scratch.url,
    async drop() {
      await db.close();
      await scratch.drop();
    },
  };
}

/**
 * A migrated test database for the enclosing `describe`: made before its first test, dropped
 * after its last.
 */
export function useMigratedDatabase(): { readonly db: Database } {
  const current = perDescribe(
    async () => {
      const database = await openTestDatabase();
      await migrate(database.db);
      return database;
    },
    (database) => database.drop(),
    'the database',
  );
  return {
    get db() {
      return current().db;
    },
  };
}

export interface ScratchDatabase {
  name: string;
  /** Where the code under test connects: through the pooler when the run has one. */
  url: string;
  /** The same database on the server itself, never through a pooler. */
  directUrl: string;
  drop(): Promise<void>;
}

/** A fresh, empty database on the test server, and how to drop it. */
export async function createScratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const server = await testServer();
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: server.directUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  try {
    await admin(`CREATE DATABASE ${name}`);
  } catch (error) {
    await server.release();
    throw error;
  }
  return {
    name,
    url: withDatabase(server.url, name),
    directUrl: withDatabase(server.directUrl, name),
    async drop() {
      try {
        // FORCE also ends the server connections a pooler still keeps open to the database.
        await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await server.release();
      }
    },
  };
}

export async function truncateAll(db: Database): Promise<void> {
  await db.query(
    'TRUNCATE audit_events, outbox, sessions, challenges, customers, store_hosts, stores, idempotency_keys, breached_hashes RESTART IDENTITY CASCADE',
  );
}

/** The database bound to the first store ('default'), the one a single-store deployment has. */
export function defaultStore(db: Database): StoreDatabase {
  return forStore(db, firstStoreId);
}

/**
 * Makes the first store's row as the service does on its first start (after `truncateAll`, for a
 * test that writes rows without starting a service), and returns the database bound to it.
 */
export async function seedFirstStore(db: Database): Promise<StoreDatabase> {
  await ensureStore(db, systemClock, { name: 'My Store', identityMode: 'email', verificationRequired: false });
  return defaultStore(db);
}

/**
 * Memory, or Redis (connected) under a key prefix of its own that is deleted on close. `redisUrl`
 * may name a Redis Cluster (`redis+cluster://…`).
 */
export async function openTestCounterStore(redisUrl = process.env['REDIS_URL']): Promise<CounterStore> {
  if (redisUrl === undefined) return new MemoryCounterStore();
  const prefix = `sfa-test:${randomBytes(6).toString('hex')}:`;
  const store = new RedisCounterStore(redisUrl, { keyPrefix: prefix });
  if (!(await store.connected())) {
    // Closed, or its reconnection attempts would keep the test process alive.
    await store.close();
    throw new Error(`the Redis at ${redisUrl} does not answer`);
  }
  const close = store.close.bind(store);
  store.close = async () => {
    try {
      // KEYS patterns are not prefixed, and the keys it returns carry the prefix DEL would add
      // again. A cluster's keys are spread over its masters, and one DEL may name one slot's only.
      const client = store.client;
      const holders = client instanceof Cluster ? client.nodes('master') : [client];
      for (const holder of holders) {
        const keys = await holder.keys(`${prefix}*`);
        await Promise.all(keys.map((key) => client.del(key.slice(prefix.length))));
      }
    } finally {
      await close();
    }
  };
  return store;
}
