import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { serverFolder } from '../src/storage/embedded-postgres-folder.js';
import { startPgBouncer } from '../test/helpers/pgbouncer.js';
import { startRedisCluster } from '../test/helpers/redis-cluster.js';

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
  /** A database on the service's PostgreSQL server itself, never through a pooler (embedded: while a service runs). */
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
const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-bench-'));
const removeDir = (dir: string) => fs.rmSync(dir, { recursive: true, force: true });

export function embeddedBackend(): Backend {
  const dir = dataDir();
  return {
    mode: 'embedded',
    env: { DATA_DIR: dir, APP_SECRET: benchSecret },
    // The server the service starts listens only on its socket in DATA_DIR.
    serverUrl: (database) =>
      `postgresql://postgres@localhost/${database}?host=${encodeURIComponent(serverFolder(dir))}`,
    serviceDatabase: 'storefront',
    description: 'the embedded PostgreSQL server in a fresh temporary DATA_DIR, counters in the process',
    // The counters live in the service process; a fresh process starts with none.
    resetCounters: async () => {},
    cleanup: async () => removeDir(dir),
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

/**
 * A database of the run's own on `databaseUrl`'s server, and its server's version; `start` runs
 * with it, and if it fails the database is dropped before the failure is passed on.
 */
async function withBenchDatabase<T>(
  databaseUrl: string,
  start: (name: string, version: string, drop: () => Promise<void>) => Promise<T>,
): Promise<T> {
  const name = `sfa_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const drop = async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  };
  try {
    const { rows } = await admin.query<{ server_version: string }>('SHOW server_version');
    return await start(name, rows[0]?.server_version ?? '?', drop);
  } catch (error) {
    await drop().catch(() => undefined);
    throw error;
  }
}

export function productionBackend(databaseUrl: string, redisUrl: string): Promise<Backend> {
  return withBenchDatabase(databaseUrl, async (name, version, drop) => {
    const cacheUrl = new URL(redisUrl);
    const redisDb = await pickEmptyRedisDb(redisUrl);
    cacheUrl.pathname = `/${redisDb}`;
    const redis = new Redis(cacheUrl.toString(), { maxRetriesPerRequest: 1 });
    const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
    const dir = dataDir();
    const env = {
      DATABASE_URL: withDatabase(databaseUrl, name),
      REDIS_URL: cacheUrl.toString(),
      APP_SECRET: benchSecret,
    };
    return {
      mode: 'production',
      env: { ...env, DATA_DIR: dir },
      serverUrl: (database) => withDatabase(databaseUrl, database),
      serviceDatabase: name,
      redisUrl: cacheUrl.toString(),
      description: `PostgreSQL ${version} database ${name} (created and dropped), Redis ${redisVersion} db ${redisDb} (flushed)`,
      resetCounters: async () => void (await redis.flushdb()),
      async cleanup() {
        await redis.flushdb().catch(() => undefined);
        redis.disconnect();
        await drop();
        removeDir(dir);
      },
    };
  });
}

/** The production service behind a PgBouncer (transaction mode) and on a three-master Redis Cluster of its own. */
export function scaledBackend(databaseUrl: string): Promise<Backend> {
  return withBenchDatabase(databaseUrl, async (name, version, drop) => {
    // The tests' own servers, with PgBouncer's and Redis's defaults where the tests shorten them.
    const bouncer = await startPgBouncer({
      upstream: databaseUrl,
      poolSize: 20,
      settings: { server_idle_timeout: '600' },
    });
    const cluster = await startRedisCluster({ masters: 3, nodeTimeoutMs: 15_000 }).catch(async (error: unknown) => {
      await bouncer.stop();
      throw error;
    });
    const masters = cluster.nodes.map(({ host, port }) => new Redis({ host, port, maxRetriesPerRequest: 1 }));
    const dir = dataDir();
    return {
      mode: 'scaled',
      env: { DATABASE_URL: bouncer.url(name), REDIS_URL: cluster.url, APP_SECRET: benchSecret, DATA_DIR: dir },
      serverUrl: (database) => withDatabase(databaseUrl, database),
      serviceDatabase: name,
      description: `PostgreSQL ${version} database ${name} through PgBouncer in transaction mode (default_pool_size 20), Redis Cluster of 3 masters (flushed)`,
      resetCounters: async () => void (await Promise.all(masters.map((master) => master.flushall()))),
      async cleanup() {
        for (const master of masters) master.disconnect();
        await cluster.stop();
        await bouncer.stop();
        await drop();
        removeDir(dir);
      },
    };
  });
}
