import type { FastifyBaseLogger } from 'fastify';
import { deleteOldAuditEvents, deleteStoreAudit } from './audit.js';
import { deleteStoreImports } from './auth/tables/customer-imports.js';
import { deleteFinishedChallenges } from './auth/tables/codes.js';
import { deleteStorePasswordHooks } from './hooks/password-hooks.js';
import { deleteStoreWebhookEndpoints } from './hooks/webhook-endpoints.js';
import { deleteFinishedEvents, deleteStoreWebhookEvents } from './hooks/webhook-outbox.js';
import { deleteOldKnownDevices, knownDeviceDays } from './auth/tables/known-devices.js';
import { deleteExpiredPasskeyChallenges, deleteStorePasskeyChallenges } from './auth/tables/passkey-challenges.js';
import { deleteExpiredPendingSignIns } from './auth/tables/pending-sign-ins.js';
import { deleteStoreCustomers } from './auth/tables/customers.js';
import { deleteExpiredSessions } from './auth/tables/sessions.js';
import type { Clock } from './clock.js';
import type { RetentionSettings } from './config.js';
import { deleteFinishedMessages, deleteStoreMessages } from './delivery/outbox.js';
import { PeriodicTask } from './periodic.js';
import type { Queryable } from './storage/database.js';
import { deleteStoreProviders } from './providers/configured.js';
import { deleteExpiredProviderStates, deleteStoreProviderStates } from './providers/states.js';
import { deleteExpiredIdempotencyKeys } from './store/idempotency.js';
import { deletedStores, dropStoreRow } from './store/store.js';

export const janitorTables = [
  'sessions',
  'challenges',
  'outbox',
  'webhook_events',
  'audit_events',
  'known_devices',
  'passkey_challenges',
  'pending_sign_ins',
  'idempotency_keys',
  'provider_states',
] as const;
export type JanitorTable = (typeof janitorTables)[number];
export type RemovedRows = Record<JanitorTable, number>;

export interface PruneLimits {
  /** Rows per DELETE: small, so no statement holds its row locks for long. */
  batchSize: number;
  /** Batches per table in one pass; a bigger backlog is left for the next pass. */
  maxBatchesPerTable: number;
}

export const defaultPruneLimits: PruneLimits = { batchSize: 500, maxBatchesPerTable: 100 };

export interface PruneDeps {
  db: Queryable;
  clock: Clock;
  retention: RetentionSettings;
  /** Told each batch's count (for metrics). */
  removed?: (table: JanitorTable, rows: number) => void;
}

const secondsPerDay = 24 * 60 * 60;

/** A pass in which some tables could not be pruned: each with its cause, and what the others gave up. */
export class PruneError extends AggregateError {
  constructor(
    readonly failures: Array<{ table: JanitorTable; error: unknown }>,
    readonly removed: RemovedRows,
  ) {
    const causes = failures.map(
      ({ table, error }) => `${table} (${error instanceof Error ? error.message : String(error)})`,
    );
    super(
      failures.map(({ error }) => error),
      `could not prune ${causes.join(', ')}`,
    );
    this.name = 'PruneError';
  }
}

/**
 * One pass over every table: deletes what has outlived its retention, batch after batch, until a
 * table is clean, the per-pass bound is hit or `stopping()` says to give up. Each batch is one
 * statement of its own that skips rows locked by another janitor, so instances never wait for
 * each other or delete a row twice, and nothing here needs a session-level lock (PgBouncer in
 * transaction mode is fine).
 *
 * Tables are pruned independently: one whose delete fails (a lock, a bad cutoff, a lost
 * connection) does not keep the others growing. The pass goes on to the end, then throws a
 * PruneError naming each failed table.
 */
export async function prune(
  deps: PruneDeps,
  limits: PruneLimits = defaultPruneLimits,
  stopping: () => boolean = () => false,
): Promise<RemovedRows> {
  const { db, clock, retention } = deps;
  const days = (value: number) => value * secondsPerDay;
  // Messages and webhook events share one retention: sent ones a week by default, failed ones a month.
  const messageRetention = {
    deliveredRetentionSeconds: days(retention.messageDays),
    failedRetentionSeconds: days(retention.failedMessageDays),
  };
  const deleters: Record<JanitorTable, (limit: number) => Promise<number>> = {
    sessions: (limit) => deleteExpiredSessions(db, clock, days(retention.sessionDays), limit),
    challenges: (limit) => deleteFinishedChallenges(db, clock, days(retention.codeDays), limit),
    outbox: (limit) => deleteFinishedMessages(db, clock, messageRetention, limit),
    // Kept as long as messages are: an endpoint's deliveries list shows a week of them by default.
    webhook_events: (limit) => deleteFinishedEvents(db, clock, messageRetention, limit),
    audit_events: (limit) => deleteOldAuditEvents(db, clock, days(retention.auditDays), limit),
    // Fixed, not configurable: the new sign-in notice looks back exactly this far.
    known_devices: (limit) => deleteOldKnownDevices(db, clock, days(knownDeviceDays), limit),
    // Nothing to look back on: a passkey challenge is useless once expired, so it goes at once.
    passkey_challenges: (limit) => deleteExpiredPasskeyChallenges(db, clock, limit),
    // Likewise a sign-in that waited five minutes for its second step.
    pending_sign_ins: (limit) => deleteExpiredPendingSignIns(db, clock, limit),
    // A retry's answer is kept 24 hours, as the admin API promises; after that the key is free.
    idempotency_keys: (limit) => deleteExpiredIdempotencyKeys(db, clock, limit),
    // A spent state is kept only while its cookie could still be replayed.
    provider_states: (limit) => deleteExpiredProviderStates(db, clock, limit),
  };
  const removed = Object.fromEntries(janitorTables.map((table) => [table, 0])) as RemovedRows;
  const failures: PruneError['failures'] = [];
  // Outbox rows go before codes: a failed message past its retention frees the code it held.
  for (const table of [
    'sessions',
    'outbox',
    'webhook_events',
    'challenges',
    'audit_events',
    'known_devices',
    'passkey_challenges',
    'pending_sign_ins',
    'idempotency_keys',
    'provider_states',
  ] as const) {
    try {
      for (let batch = 0; batch < limits.maxBatchesPerTable && !stopping(); batch += 1) {
        const rows = await deleters[table](limits.batchSize);
        removed[table] += rows;
        if (rows > 0) deps.removed?.(table, rows);
        if (rows < limits.batchSize) break;
      }
    } catch (error) {
      failures.push({ table, error });
    }
  }
  if (failures.length > 0) throw new PruneError(failures, removed);
  return removed;
}

/** The erasure's steps: messages first (they name customers), then the rest, then the customers with what cascades. */
const steps: Array<[string, (db: Queryable, storeId: string, limit: number) => Promise<number>]> = [
  ['outbox', deleteStoreMessages],
  ['webhook_events', deleteStoreWebhookEvents],
  ['webhook_endpoints', deleteStoreWebhookEndpoints],
  ['audit_events', deleteStoreAudit],
  ['customer_imports', deleteStoreImports],
  ['passkey_challenges', deleteStorePasskeyChallenges],
  ['provider_states', deleteStoreProviderStates],
  ['store_providers', deleteStoreProviders],
  ['store_password_hooks', deleteStorePasswordHooks],
  ['customers', deleteStoreCustomers],
];

/**
 * Erases what deleted stores held, batch after batch, and then their rows. Every batch is a
 * statement of its own and the store's row goes last, so a crash or a restart anywhere leaves a
 * store still marked deleted, and the next pass takes up where this one stopped. Returns the rows
 * removed per table.
 */
export async function eraseDeletedStores(
  db: Queryable,
  { batchSize, stopping }: { batchSize: number; stopping: () => boolean },
): Promise<Record<string, number>> {
  const removed: Record<string, number> = {};
  for (const storeId of await deletedStores(db)) {
    for (const [table, erase] of steps) {
      for (;;) {
        if (stopping()) return removed;
        const rows = await erase(db, storeId, batchSize);
        removed[table] = (removed[table] ?? 0) + rows;
        if (rows < batchSize) break;
      }
    }
    await dropStoreRow(db, storeId);
  }
  return removed;
}

export interface JanitorDeps extends PruneDeps {
  logger: FastifyBaseLogger;
  /** Told each pass that failed (for metrics). */
  passFailed?: () => void;
}

/** After a failed pass the next comes this long after it, doubling with each failure in a row. */
const janitorRetryMs = 5_000;

/** Runs `prune` in the background every `intervalSeconds`, the first time right after start. */
export class Janitor {
  private readonly loop: PeriodicTask;

  constructor(
    deps: JanitorDeps,
    private readonly intervalSeconds: number,
    limits: PruneLimits = defaultPruneLimits,
  ) {
    const logRemoved = (removed: RemovedRows) => {
      if (Object.values(removed).some((rows) => rows > 0))
        deps.logger.info({ removed }, 'janitor removed expired rows');
    };
    this.loop = new PeriodicTask(
      async (stopping) => {
        // Deleted stores first: their hosts are already free, and what they held should not wait.
        const erased = await eraseDeletedStores(deps.db, { batchSize: limits.batchSize, stopping });
        if (Object.keys(erased).length > 0) deps.logger.info({ erased }, 'janitor erased deleted stores');
        try {
          logRemoved(await prune(deps, limits, stopping));
        } catch (error) {
          // What the other tables gave up is still logged; the loop logs and counts the failure.
          if (error instanceof PruneError) logRemoved(error.removed);
          throw error;
        }
      },
      {
        intervalMs: intervalSeconds * 1000,
        // A pass that failed (a connection slow to open while the host is busy) is tried again in
        // seconds, not minutes: a deleted store's erasure should not wait out the interval.
        retryMs: janitorRetryMs,
        logger: deps.logger,
        failureMessage: 'janitor pass failed; will try again',
        failed: deps.passFailed,
      },
    );
  }

  start(): void {
    if (this.intervalSeconds > 0) this.loop.start();
  }

  /** Runs a pass now (or after the one in progress): a store was deleted and its erasure should not wait. */
  wake(): void {
    this.loop.wake();
  }

  /** Cancels the next pass and ends the current one after its batch in flight. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Resolves when the pass in progress, or else the next one, has ended. For tests. */
  nextPass(): Promise<void> {
    return this.loop.nextPass();
  }
}
