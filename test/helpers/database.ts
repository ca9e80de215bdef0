import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import pg from 'pg';
import type { Database } from '../../src/storage/database.js';
import { MemoryKeyValueStore, type KeyValueStore } from '../../src/storage/key-value.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { RedisKeyValueStore } from '../../src/storage/redis.js';
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

let ownServer: Promise<TestServer> | undefined;
let ownServerUsers = 0;

/**
 * The server test databases are made on: DATABASE_URL, else the embedded server `npm test` started
 * for the run. A file run on its own starts an embedded server for as long as it has databases.
 */
async function testServer(): Promise<{ url: string; release(): Promise<void> }> {
  const url = process.env['DATABASE_URL'] ?? process.env[testServerUrlVariable];
  if (url !== undefined) return { url, release: async () => {} };
  ownServerUsers += 1;
  ownServer ??= startTestServer();
  const started = ownServer;
  const { server } = await started;
  return {
    url: server.adminUrl,
    async release() {
      ownServerUsers -= 1;
      if (ownServerUsers > 0) return;
      ownServer = undefined;
      await (await started).remove();
    },
  };
}

/**
 * The database a test file runs against: a fresh database on the test server, made for this file
 * and dropped at the end, so parallel files and runs never see each other's rows.
 */
export async function openTestDatabase(): Promise<TestDatabase> {
  const scratch = await createScratchDatabase('sfa_test');
  const db = openPostgres(scratch.url, { max: 5 });
  return {
    db,
    url: scratch.url,
    async drop() {
      await db.close();
      await scratch.drop();
    },
  };
}

/** A fresh, empty database on the test server, and how to drop it. */
export async function createScratchDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const server = await testServer();
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: server.url });
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
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      try {
        await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await server.release();
      }
    },
  };
}

export async function truncateAll(db: Database): Promise<void> {
  await db.query('TRUNCATE audit_events, outbox, sessions, challenges, customers, store RESTART IDENTITY CASCADE');
}

/**
 * Memory, or Redis (connected) under a key prefix of its own that is deleted on close. `redisUrl`
 * may name a Redis Cluster (`redis+cluster://…`).
 */
export async function openTestKeyValueStore(redisUrl = process.env['REDIS_URL']): Promise<KeyValueStore> {
  if (redisUrl === undefined) return new MemoryKeyValueStore();
  const prefix = `sfa-test:${randomBytes(6).toString('hex')}:`;
  const store = new RedisKeyValueStore(redisUrl, { keyPrefix: prefix });
  if (!(await store.connected())) throw new Error(`Redis at ${redisUrl} is not reachable`);
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
