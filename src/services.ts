import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { AuditTrail, type AuditEntry } from './audit.js';
import { BackgroundWork } from './background.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { createArgon2Hasher, type PasswordHasher } from './auth/password.js';
import { Dispatcher, type DispatcherOptions } from './delivery/dispatcher.js';
import type { Transports } from './delivery/message.js';
import { createLogTransport } from './delivery/transports/log.js';
import { createSmsWebhookTransport } from './delivery/transports/sms-webhook.js';
import { createSmtpTransport } from './delivery/transports/smtp.js';
import { deriveKeys, type Keys } from './keys.js';
import { Metrics } from './metrics.js';
import { RateLimiter } from './http/rate-limit.js';
import { createReadinessProbe, type Readiness } from './http/readiness.js';
import { loadOrCreateSecret, lockDataFolder, type DataFolderLock } from './storage/data-folder.js';
import type { Database } from './storage/database.js';
import { MemoryKeyValueStore, type KeyValueStore } from './storage/key-value.js';
import { migrate } from './storage/migrations.js';
import { openPglite } from './storage/pglite.js';
import { openPostgres } from './storage/postgres.js';
import { FallbackKeyValueStore, RedisKeyValueStore } from './storage/redis.js';
import { ensureStore, StoreCache } from './store/store.js';

/** Everything the service is made of, built once from configuration and closed in reverse order. */
export interface Services {
  config: Config;
  logger: FastifyBaseLogger;
  db: Database;
  kv: KeyValueStore;
  clock: Clock;
  hasher: PasswordHasher;
  keys: Keys;
  store: StoreCache;
  transports: Transports;
  dispatcher: Dispatcher;
  background: BackgroundWork;
  readiness: () => Promise<Readiness>;
  metrics: Metrics;
  limiter: RateLimiter;
  /** Records a security event behind the answer; a failure to record is logged, never shown. */
  audit(entry: AuditEntry): void;
  close(): Promise<void>;
}

/** Parts a caller (a test, the benchmark) may supply instead of the configured ones. */
export interface ServiceOverrides {
  db?: Database;
  kv?: KeyValueStore;
  clock?: Clock;
  hasher?: PasswordHasher;
  transports?: Partial<Transports>;
  secret?: string;
  dispatcher?: Partial<DispatcherOptions>;
  /** Leave the dispatcher stopped; the caller drains it. */
  manualDispatch?: boolean;
}

export function configuredTransports(config: Config, logger: FastifyBaseLogger): Transports {
  const log = createLogTransport(logger);
  return {
    email: config.smtpUrl === undefined ? log : createSmtpTransport(config.smtpUrl, config.mailFrom),
    sms:
      config.smsWebhookUrl === undefined
        ? log
        : createSmsWebhookTransport(config.smsWebhookUrl, config.smsWebhookSecret!),
  };
}

/** Redis when configured, with this instance's memory standing in while Redis is unreachable. */
export async function configuredKeyValueStore(config: Config, logger: FastifyBaseLogger): Promise<KeyValueStore> {
  if (config.redisUrl === undefined) return new MemoryKeyValueStore();
  const redis = new RedisKeyValueStore(config.redisUrl);
  if (!(await redis.connected())) logger.warn('Redis not reachable at start: counting in this instance until it is');
  let lastWarningMs = -Infinity;
  return new FallbackKeyValueStore(redis, new MemoryKeyValueStore(), (error) => {
    const nowMs = performance.now();
    if (nowMs - lastWarningMs < 10_000) return;
    lastWarningMs = nowMs;
    logger.warn({ err: error }, 'Redis unreachable: rate limits are counted in this instance until it returns');
  });
}

export interface OpenedDatabase {
  db: Database;
  secret: string;
  release(): Promise<void>;
}

/**
 * The database the configuration names, migrated. In embedded mode this takes the data folder's
 * lock first, so a second process gets a clear error instead of a damaged database.
 */
export async function openDatabase(config: Config, logger?: FastifyBaseLogger): Promise<OpenedDatabase> {
  if (config.databaseUrl !== undefined) {
    const db = openPostgres(config.databaseUrl);
    return { db, secret: config.appSecret!, release: () => db.close() };
  }
  const lock: DataFolderLock = lockDataFolder(config.dataDir);
  try {
    const secret = config.appSecret ?? loadOrCreateSecret(config.dataDir);
    const dataDir = path.join(config.dataDir, 'pgdata');
    const db = await openPglite(dataDir, {
      creating: () => logger?.info({ dataDir }, 'creating the embedded database (first start, a few seconds)'),
    });
    return {
      db,
      secret,
      async release() {
        await db.close();
        lock.release();
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}

export async function openServices(
  config: Config,
  logger: FastifyBaseLogger,
  overrides: ServiceOverrides = {},
): Promise<Services> {
  const opened: OpenedDatabase =
    overrides.db === undefined
      ? await openDatabase(config, logger)
      : { db: overrides.db, secret: overrides.secret ?? config.appSecret ?? 'x'.repeat(32), release: async () => {} };
  const { db } = opened;
  const clock = overrides.clock ?? systemClock;
  try {
    await migrate(db);
    await ensureStore(db, clock, config.initialStore);
  } catch (error) {
    await opened.release();
    throw error;
  }
  const keys = deriveKeys(opened.secret);
  const kv = overrides.kv ?? (await configuredKeyValueStore(config, logger));
  const transports = { ...configuredTransports(config, logger), ...overrides.transports };
  const metrics = new Metrics(db);
  const dispatcher = new Dispatcher(
    {
      db,
      clock,
      keys,
      transports,
      logger,
      delivered: (channel, outcome) => metrics.deliveries.inc({ channel, outcome }),
    },
    {
      retryBaseSeconds: config.delivery.retryBaseSeconds,
      deliveryWindowSeconds: config.delivery.windowSeconds,
      budgetPerHour: config.delivery.budgetPerHour,
      ...overrides.dispatcher,
    },
  );
  if (overrides.manualDispatch !== true) dispatcher.start();
  const background = new BackgroundWork(logger);
  const auditTrail = new AuditTrail(db, clock, (write) => background.run('audit', write));

  return {
    config,
    logger,
    db,
    kv,
    clock,
    hasher: overrides.hasher ?? createArgon2Hasher(),
    keys,
    store: new StoreCache(db),
    transports,
    dispatcher,
    background,
    readiness: createReadinessProbe({
      db,
      kv,
      searchUrl: config.searchUrl,
      checked: (checks) => {
        for (const [dependency, up] of Object.entries(checks)) metrics.dependencyUp.set({ dependency }, up ? 1 : 0);
      },
    }),
    metrics,
    limiter: new RateLimiter(kv, clock, (rule) => metrics.rateLimited.inc({ limit: rule.name })),
    audit: (entry) => auditTrail.record(entry),
    async close() {
      await background.drain();
      await dispatcher.stop();
      await Promise.all(Object.values(transports).map((transport) => transport.close?.()));
      await kv.close();
      await opened.release();
    },
  };
}
