import type { FastifyBaseLogger } from 'fastify';
import { AuditTrail, type AuditEntry } from './audit.js';
import { BackgroundWork, type BackgroundLimits } from './background.js';
import { systemClock, type Clock } from './clock.js';
import { ConfigError, deliveryProblem, type Config } from './config.js';
import type { PasswordHasher } from './auth/rules/password.js';
import { createBreachedPasswords, type BreachedPasswords } from './auth/rules/breached.js';
import { Dispatcher, type DispatcherDeps, type DispatcherOptions } from './delivery/dispatcher.js';
import { WebhookDispatcher, type WebhookDispatcherOptions } from './hooks/webhook-dispatcher.js';
import { countDeliveriesByStatus } from './hooks/webhook-outbox.js';
import { countByStatus } from './delivery/outbox.js';
import type { Transports } from './delivery/message.js';
import { Janitor, type JanitorDeps } from './janitor.js';
import { PeriodicTask } from './periodic.js';
import { deriveKeys, type Keys } from './keys.js';
import { Metrics } from './metrics.js';
import type { Database } from './storage/database.js';
import type { CounterStore } from './storage/counters.js';
import { migrate } from './storage/migrations.js';
import { RelyingParties } from './providers/relying-party.js';
import { StoreDirectory, storeFeedIntervalMs } from './store/directory.js';
import { ensureStore, identityModesInUse } from './store/store.js';
import { openDatabase, type OpenedDatabase } from './open-database.js';
import { configuredCounterStore, configuredHasher, configuredTransports } from './configured-parts.js';

// What the command line and the tests open without the whole service.
export {
  embeddedMaxConnections,
  openDatabase,
  type OpenDatabaseOptions,
  type OpenedDatabase,
} from './open-database.js';
export { configuredCounterStore, configuredHasher, configuredTransports, createLogger } from './configured-parts.js';

/** Everything the service is made of, built once from configuration and closed in reverse order. */
export interface Services {
  config: Config;
  logger: FastifyBaseLogger;
  db: Database;
  counters: CounterStore;
  clock: Clock;
  hasher: PasswordHasher;
  keys: Keys;
  /** The breach corpus new passwords are checked against (BREACHED_PASSWORDS_URL or the local copy). */
  breachedPasswords: BreachedPasswords;
  /** The stores, resolved by host; follows the change feed in the background. */
  store: StoreDirectory;
  /** The relying party of the stores' sign-in providers, with their discovered metadata and keys. */
  providers: RelyingParties;
  transports: Transports;
  dispatcher: Dispatcher;
  /** Sends the stores' webhook events. */
  webhooks: WebhookDispatcher;
  janitor: Janitor;
  background: BackgroundWork;
  metrics: Metrics;
  /** Records a security event behind the answer; a failure to record is logged, never shown. */
  audit(entry: AuditEntry): void;
  close(): Promise<void>;
}

/** Parts a caller (a test, the benchmark) may supply instead of the configured ones. */
export interface ServiceOverrides {
  db?: Database;
  counters?: CounterStore;
  clock?: Clock;
  hasher?: PasswordHasher;
  transports?: Partial<Transports>;
  secret?: string;
  dispatcher?: Partial<DispatcherOptions>;
  /** Leave the dispatcher stopped; the caller drains it. */
  manualDispatch?: boolean;
  webhooks?: Partial<WebhookDispatcherOptions>;
  /** Leave the webhook dispatcher stopped; the caller drains it. */
  manualWebhooks?: boolean;
  /** Leave the janitor stopped; the caller prunes. */
  manualJanitor?: boolean;
  /** How long a call to a sign-in provider may take (a test's slow provider). */
  providerTimeoutSeconds?: number;
  /** How long the breached-password range API is waited for (a test's slow server). */
  breachedPasswordsTimeoutMs?: number;
  /** Bounds of the work behind the answers (a test fills the queue). */
  background?: Partial<BackgroundLimits>;
}

export async function openServices(
  config: Config,
  logger: FastifyBaseLogger,
  overrides: ServiceOverrides = {},
): Promise<Services> {
  const opened =
    overrides.db === undefined
      ? await openDatabase(config, { log: logger })
      : suppliedDatabase(overrides.db, overrides.secret ?? config.database.appSecret);
  const { db, maintenance } = opened;
  const clock = overrides.clock ?? systemClock;
  await prepareDatabase(opened, clock, config);
  const store = await openStoreDirectory(opened);
  const keys = deriveKeys(opened.secret, config.appSecretPrevious);
  const counters = overrides.counters ?? (await configuredCounterStore(config, logger));
  const transports = { ...configuredTransports(config, logger), ...overrides.transports };
  const metrics = new Metrics(
    () => countByStatus(db),
    () => countDeliveriesByStatus(db),
    { storeLabels: config.metricsStoreLabels },
  );
  const dispatcher = startDispatcher({ db, clock, keys, transports, logger }, metrics, config, overrides);
  const webhooks = new WebhookDispatcher(
    {
      db,
      clock,
      keys,
      logger,
      rules: config.webhooks,
      delivered: ({ type, outcome, lagSeconds, storeId, storeSlug }) => {
        const store = metrics.storeLabels.of(storeId, storeSlug);
        metrics.webhookDeliveries.inc({ type, outcome, store });
        if (lagSeconds !== undefined) metrics.webhookLag.observe({ store }, lagSeconds);
      },
      passFailed: () => metrics.passFailures.inc({ loop: 'webhooks' }),
    },
    overrides.webhooks,
  );
  if (overrides.manualWebhooks !== true) webhooks.start();
  const janitor = startJanitor({ db: maintenance, clock, logger }, metrics, config, overrides);
  const background = new BackgroundWork(logger, overrides.background);
  const auditTrail = openAuditTrail({ db, clock, logger }, background, metrics);
  const storeFeed = new PeriodicTask(
    backingOff(() => store.refresh()),
    {
      intervalMs: storeFeedIntervalMs,
      logger,
      failureMessage: 'reading the store change feed failed; will retry',
      failed: () => metrics.passFailures.inc({ loop: 'store_feed' }),
    },
  );
  storeFeed.start();
  const parts = { background, auditTrail, dispatcher, webhooks, janitor, storeFeed, transports, counters, logger };
  return {
    config,
    logger,
    db,
    counters,
    clock,
    hasher: overrides.hasher ?? configuredHasher(config),
    keys,
    breachedPasswords: createBreachedPasswords({
      url: config.breachedPasswordsUrl,
      db,
      timeoutMs: overrides.breachedPasswordsTimeoutMs,
      checked: (outcome, source, error) => {
        metrics.breachedPasswordChecks.inc({ source, outcome });
        if (outcome === 'failed_open') {
          logger.warn(
            { err: error, source },
            'breached-password check failed: the new password was accepted unchecked',
          );
        }
      },
    }),
    store,
    providers: new RelyingParties({ clock, timeoutSeconds: overrides.providerTimeoutSeconds }),
    transports,
    dispatcher,
    webhooks,
    janitor,
    background,
    metrics,
    audit: (entry) => auditTrail.record(entry),
    close: () => closeServices(parts, opened),
  };
}

/**
 * A pass that, after a failure, sits out passes: 1, then 3, 7… up to 30 (about half a minute at the
 * feed's pace). Reading every second while the database is away only keeps a pooler retrying its
 * server login, which delays the recovery; the failures are still logged and counted.
 */
function backingOff(pass: () => Promise<unknown>): () => Promise<void> {
  let failures = 0;
  let skip = 0;
  return async () => {
    if (skip > 0) {
      skip -= 1;
      return;
    }
    try {
      await pass();
      failures = 0;
    } catch (error) {
      failures += 1;
      skip = Math.min(2 ** failures - 1, 30);
      throw error;
    }
  };
}

/**
 * The stores, read once now: the change feed's starting point, and which stores the deployment
 * has, so the first requests (and a refused probe's audit entry, see edge.ts) find them known.
 */
async function openStoreDirectory(opened: OpenedDatabase): Promise<StoreDirectory> {
  const store = new StoreDirectory(opened.db);
  try {
    await store.refresh();
    await store.resolve(null);
    return store;
  } catch (error) {
    await opened.release();
    throw error;
  }
}

/** A database the caller opened (a test, the benchmark), and closes itself. */
function suppliedDatabase(db: Database, secret: string | undefined): OpenedDatabase {
  return { db, maintenance: db, secret: secret ?? 'x'.repeat(32), release: async () => {} };
}

/**
 * Migrates, makes sure of the store row, and checks the one setting only that row can judge; a
 * failure releases the database before it is thrown.
 */
async function prepareDatabase(opened: OpenedDatabase, clock: Clock, config: Config): Promise<void> {
  const { maintenance } = opened;
  try {
    await migrate(maintenance);
    await ensureStore(maintenance, clock, config.initialStore);
    // The store rows, not STORE_IDENTITY_MODE, decide the channels: they may have been switched since.
    for (const mode of await identityModesInUse(maintenance)) {
      const problem = deliveryProblem(config, mode);
      if (problem !== undefined) throw new ConfigError(problem.variable, problem.reason);
    }
  } catch (error) {
    await opened.release();
    throw error;
  }
}

function startDispatcher(
  deps: Omit<DispatcherDeps, 'delivered' | 'passFailed'>,
  metrics: Metrics,
  config: Config,
  overrides: ServiceOverrides,
): Dispatcher {
  const dispatcher = new Dispatcher(
    {
      ...deps,
      delivered: (channel, outcome, message) =>
        metrics.deliveries.inc({
          channel,
          outcome,
          store: metrics.storeLabels.of(message.store_id, message.store_slug),
        }),
      passFailed: () => metrics.passFailures.inc({ loop: 'dispatcher' }),
    },
    {
      retryBaseSeconds: config.delivery.retryBaseSeconds,
      deliveryWindowSeconds: config.delivery.windowSeconds,
      budgetPerHour: config.delivery.budgetPerHour,
      smsBudgetPerCountryPerHour: config.delivery.smsBudgetPerCountryPerHour,
      ...overrides.dispatcher,
    },
  );
  if (overrides.manualDispatch !== true) dispatcher.start();
  return dispatcher;
}

function startJanitor(
  deps: Pick<JanitorDeps, 'db' | 'clock' | 'logger'>,
  metrics: Metrics,
  config: Config,
  overrides: ServiceOverrides,
): Janitor {
  const janitor = new Janitor(
    {
      ...deps,
      retention: config.retention,
      removed: (table, rows) => metrics.janitorRemoved.inc({ table }, rows),
      passFailed: () => metrics.passFailures.inc({ loop: 'janitor' }),
    },
    config.janitorIntervalSeconds,
  );
  if (overrides.manualJanitor !== true) janitor.start();
  return janitor;
}

/** The audit trail, written as background work; what it drops is counted, and logged now and then. */
function openAuditTrail(
  { db, clock, logger }: { db: Database; clock: Clock; logger: FastifyBaseLogger },
  background: BackgroundWork,
  metrics: Metrics,
): AuditTrail {
  let lastWarningMs = -Infinity;
  return new AuditTrail(db, clock, (write) => background.run('audit', write), {
    dropped: (count, reason) => {
      metrics.auditDropped.inc({ reason }, count);
      // One line per ten seconds: while the database is away every request would log one.
      const nowMs = performance.now();
      if (nowMs - lastWarningMs < 10_000) return;
      lastWarningMs = nowMs;
      logger.error({ reason, count }, 'audit entries dropped (see storefront_audit_entries_dropped_total)');
    },
  });
}

/** Stops the work first and the connections last; a step that fails never leaves the pools or the embedded server running. */
async function closeServices(
  parts: Pick<Services, 'background' | 'dispatcher' | 'webhooks' | 'janitor' | 'transports' | 'counters' | 'logger'> & {
    auditTrail: AuditTrail;
    storeFeed: PeriodicTask;
  },
  opened: OpenedDatabase,
): Promise<void> {
  try {
    await parts.background.drain();
    // Entries whose flush was refused wait in the trail's queue; write them before the pool goes.
    await parts.auditTrail.flush().catch((error: unknown) => parts.logger.error({ err: error }, 'audit flush failed'));
    await parts.dispatcher.stop();
    await parts.webhooks.stop();
    await parts.janitor.stop();
    await parts.storeFeed.stop();
    await Promise.all(Object.values(parts.transports).map((transport) => transport.close?.()));
  } finally {
    try {
      await parts.counters.close();
    } finally {
      await opened.release();
    }
  }
}
