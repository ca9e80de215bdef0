import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Database } from '../../src/storage/database.js';
import { MemoryKeyValueStore, type KeyValueStore } from '../../src/storage/key-value.js';
import { openPglite } from '../../src/storage/pglite.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { RedisKeyValueStore } from '../../src/storage/redis.js';

/** Which backends this run uses: `npm test` alone is embedded; with DATABASE_URL/REDIS_URL it is the servers. */
export const testBackends = {
  database: process.env['DATABASE_URL'] === undefined ? 'pglite' : 'postgres',
  cache: process.env['REDIS_URL'] === undefined ? 'memory' : 'redis',
} as const;

export interface TestDatabase {
  db: Database;
  /** For child processes: the URL of this file's own database, when it is a server. */
  url: string | undefined;
  drop(): Promise<void>;
}

/**
 * The database a test file runs against. Embedded: an in-memory PGlite. With DATABASE_URL: a
 * fresh database on that server, made for this file and dropped at the end, so parallel files
 * and runs never see each other's rows.
 */
export async function openTestDatabase(): Promise<TestDatabase> {
  if (process.env['DATABASE_URL'] === undefined) {
    const db = await openPglite();
    return { db, url: undefined, drop: () => db.close() };
  }
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

/** A fresh, empty database on the DATABASE_URL server, and how to drop it. */
export async function createScratchDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env['DATABASE_URL']!;
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export async function truncateAll(db: Database): Promise<void> {
  await db.query('TRUNCATE audit_events, outbox, sessions, challenges, customers, store RESTART IDENTITY CASCADE');
}

/** Memory, or Redis (connected) under a key prefix of its own that is deleted on close. */
export async function openTestKeyValueStore(): Promise<KeyValueStore> {
  const redisUrl = process.env['REDIS_URL'];
  if (redisUrl === undefined) return new MemoryKeyValueStore();
  const prefix = `sfa-test:${randomBytes(6).toString('hex')}:`;
  const store = new RedisKeyValueStore(redisUrl, { keyPrefix: prefix });
  if (!(await store.connected())) throw new Error(`Redis at ${redisUrl} is not reachable`);
  const close = store.close.bind(store);
  store.close = async () => {
    try {
      // KEYS patterns are not prefixed, and the keys it returns carry the prefix DEL would add again.
      const keys = await store.client.keys(`${prefix}*`);
      if (keys.length > 0) await store.client.del(...keys.map((key) => key.slice(prefix.length)));
    } finally {
      await close();
    }
  };
  return store;
}
