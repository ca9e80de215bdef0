import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { serverFolder } from '../src/storage/embedded-postgres-folder.js';
import { startPgBouncer, startRedisCluster } from './scaled-servers.js';

/**
 * embedded: the default; production: PostgreSQL + Redis directly; scaled: the same PostgreSQL
 * through PgBouncer in transaction mode, and a three-master Redis Cluster, as grown shops run it.
 */
export type Mode = 'embedded' | 'production' | 'scaled';

/** Where one mode's service keeps its state, and how to remove it afterwards. */
export interface Backend {
  mode: Mode;
  /** Environment for `storefront-auth serve` (besides PORT, LOG_LEVEL, TRUST_PROXY). */
  env: Record<string, string>;
  /**
   * A database on the service's PostgreSQL server itself (never through a pooler), e.g. the
   * service's own (`serviceDatabase`) for its statistics. Embedded: valid while a service runs.
   */
  serverUrl(database: string): string;
  serviceDatabase: string;
  /** The service's Redis, for INFO commandstats; none when the counters live in the process. */
  redisUrl?: string;
  /** Empties the counters between figures (production: FLUSHDB of the benchmark's own Redis db). */
  resetCounters(): Promise<void>;
  cleanup(): Promise<void>;
  description: string;
}

const benchSecret = `bench-secret-${randomBytes(24).toString('hex')}`;

export function embeddedBackend(): Backend {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-bench-'));
  return {
    mode: 'embedded',
    env: { DATA_DIR: dataDir, APP_SECRET: benchSecret },
    // The server the service starts listens only on its socket in DATA_DIR.
    serverUrl: (database) =>
      `postgresql://postgres@localhost/${database}?host=${encodeURIComponent(serverFolder(dataDir))}`,
    serviceDatabase: 'storefront',
    description: 'the embedded PostgreSQL server in a fresh temporary DATA_DIR, counters in the process',
    async resetCounters() {
      // The counters live in the service process; a fresh process starts with none.
    },
    async cleanup() {
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The highest-numbered Redis database that holds no keys, so FLUSHDB touches nobody else's. */
async function pickEmptyRedisDb(redisUrl: string): Promise<number> {
  const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await probe.connect();
  try {
    const [, countText] = (await probe.config('GET', 'databases')) as [string, string];
    for (let db = Number(countText) - 1; db > 0; db -= 1) {
      await probe.select(db);
      if ((await probe.dbsize()) === 0) return db;
    }
    throw new Error('no empty Redis database to run the benchmark in');
  } finally {
    probe.disconnect();
  }
}

/** `url` naming another database, its other parts kept. */
function withDatabase(url: string, name: string): string {
  const changed = new URL(url);
  changed.pathname = `/${name}`;
  return changed.toString();
}

/** A database of the run's own on `databaseUrl`'s server; `drop` removes it and closes the connection. */
async function benchDatabase(databaseUrl: string) {
  const name = `sfa_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const drop = async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  };
  return { name, admin, drop };
}

/** Runs `start`; if it fails, runs `undo` before passing the failure on, so nothing is left behind. */
async function orUndo<T>(start: () => Promise<T>, undo: () => Promise<unknown>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    await undo().catch(() => undefined);
    throw error;
  }
}

export async function productionBackend(databaseUrl: string, redisUrl: string): Promise<Backend> {
  const { name, admin, drop } = await benchDatabase(databaseUrl);
  const redisDb = await orUndo(() => pickEmptyRedisDb(redisUrl), drop);
  const cacheUrl = new URL(redisUrl);
  cacheUrl.pathname = `/${redisDb}`;
  const redis = new Redis(cacheUrl.toString(), { maxRetriesPerRequest: 1 });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-bench-'));
  const [{ server_version: postgresVersion } = { server_version: '?' }] = (
    await admin.query<{ server_version: string }>('SHOW server_version')
  ).rows;
  const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  return {
    mode: 'production',
    env: {
      DATABASE_URL: withDatabase(databaseUrl, name),
      REDIS_URL: cacheUrl.toString(),
      APP_SECRET: benchSecret,
      DATA_DIR: dataDir,
    },
    serverUrl: (database) => withDatabase(databaseUrl, database),
    serviceDatabase: name,
    redisUrl: cacheUrl.toString(),
    description: `PostgreSQL ${postgresVersion} database ${name} (created and dropped), Redis ${redisVersion} db ${redisDb} (flushed)`,
    async resetCounters() {
      await redis.flushdb();
    },
    async cleanup() {
      await redis.flushdb().catch(() => undefined);
      redis.disconnect();
      await drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The production service behind PgBouncer (transaction mode, its own on a spare port, in front of
 * DATABASE_URL's server) and on a three-master Redis Cluster of its own, both started here.
 */
export async function scaledBackend(databaseUrl: string): Promise<Backend> {
  const { name, admin, drop } = await benchDatabase(databaseUrl);
  const bouncer = await orUndo(() => startPgBouncer(databaseUrl), drop);
  const cluster = await orUndo(
    () => startRedisCluster(3),
    () => Promise.allSettled([bouncer.stop(), drop()]),
  );
  const masters = cluster.nodes.map(({ host, port }) => new Redis({ host, port, maxRetriesPerRequest: 1 }));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-bench-'));
  const [{ server_version: postgresVersion } = { server_version: '?' }] = (
    await admin.query<{ server_version: string }>('SHOW server_version')
  ).rows;
  const flush = () => Promise.all(masters.map((master) => master.flushall()));
  return {
    mode: 'scaled',
    env: { DATABASE_URL: bouncer.url(name), REDIS_URL: cluster.url, APP_SECRET: benchSecret, DATA_DIR: dataDir },
    serverUrl: (database) => withDatabase(databaseUrl, database),
    serviceDatabase: name,
    description: `PostgreSQL ${postgresVersion} database ${name} through PgBouncer in transaction mode (default_pool_size 20), Redis Cluster of 3 masters (flushed)`,
    async resetCounters() {
      await flush();
    },
    async cleanup() {
      for (const master of masters) master.disconnect();
      await cluster.stop();
      await bouncer.stop();
      await drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
