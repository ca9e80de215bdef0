import type { FastifyBaseLogger } from 'fastify';
import { secondsBefore, type Clock } from '../clock.js';
import { deliveryDefaults } from '../config.js';
import { acceptedKeys, type Keys } from '../keys.js';
import type { DeliveryOutcome } from '../metrics.js';
import { PeriodicTask } from '../periodic.js';
import type { Database } from '../storage/database.js';
import type { Channel, Transports } from './message.js';
import {
  claimDueMessages,
  countSentSince,
  countSmsSentSince,
  markDropped,
  markFailed,
  markSent,
  releaseMessages,
  scheduleNextAttempt,
  type ClaimedMessage,
} from './outbox.js';
import { unsealContent } from './seal.js';
import { inPhoneCountries, smsDestination } from './sms-countries.js';

export interface DispatcherOptions {
  /** How often to look for due messages when nothing nudges the dispatcher. */
  pollIntervalMs: number;
  batchSize: number;
  /** First retry delay; each further retry doubles it, up to maxRetryDelaySeconds. */
  retryBaseSeconds: number;
  maxRetryDelaySeconds: number;
  /** After this long without success a message is marked failed. */
  deliveryWindowSeconds: number;
  /** A claimed message is left alone by other dispatchers for this long. */
  leaseSeconds: number;
  /**
   * Messages each store may send in any hour. A brake on SMS pumping and mail bombing: past it,
   * the store's messages wait in the outbox (and an error is logged) while answers stay the same,
   * and other stores' messages go out as before.
   */
  budgetPerHour: number;
  /**
   * SMS each store may send to one country calling code in any hour, on top of `budgetPerHour`;
   * 0: none. Pumping sends to ranges of one or two countries: past it, the store's SMS to that
   * country wait like messages past the store's budget, and the rest go out.
   */
  smsBudgetPerCountryPerHour: number;
}

export const defaultDispatcherOptions: DispatcherOptions = {
  pollIntervalMs: 1_000,
  batchSize: 20,
  retryBaseSeconds: deliveryDefaults.retryBaseSeconds,
  maxRetryDelaySeconds: 10 * 60,
  deliveryWindowSeconds: deliveryDefaults.windowSeconds,
  leaseSeconds: 60,
  budgetPerHour: deliveryDefaults.budgetPerHour,
  smsBudgetPerCountryPerHour: deliveryDefaults.smsBudgetPerCountryPerHour,
};

export interface DispatcherDeps {
  db: Database;
  clock: Clock;
  keys: Pick<Keys, 'outbox' | 'previous'>;
  transports: Transports;
  logger: FastifyBaseLogger;
  /** Told the outcome of every delivery attempt, and the store of its message (for metrics). */
  delivered?: (
    channel: Channel,
    outcome: DeliveryOutcome,
    message: Pick<ClaimedMessage, 'store_id' | 'store_slug'>,
  ) => void;
  /** Told each pass over the outbox that failed (for metrics). */
  passFailed?: () => void;
}

/**
 * Sends outbox messages behind the HTTP answers. Rows are claimed with FOR UPDATE SKIP LOCKED plus
 * a lease, so several instances share one outbox without sending a message twice in the normal
 * case; delivery is at least once (a crash between sending and marking resends after the lease).
 */
export class Dispatcher {
  private readonly options: DispatcherOptions;
  private readonly loop: PeriodicTask;
  private lastBudgetWarningMs = -Infinity;
  /** Set by a pass that found the hourly budget spent, cleared by one that found it not. */
  private budgetSpent = false;

  constructor(
    private readonly deps: DispatcherDeps,
    options: Partial<DispatcherOptions> = {},
  ) {
    this.options = { ...defaultDispatcherOptions, ...options };
    this.loop = new PeriodicTask(async (stopping) => void (await this.drain(stopping)), {
      intervalMs: this.options.pollIntervalMs,
      logger: deps.logger,
      failureMessage: 'outbox dispatch failed; will retry',
      failed: deps.passFailed,
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Resolves when the pass in progress, or else the next one, has ended. For tests. */
  nextPass(): Promise<void> {
    return this.loop.nextPass();
  }

  /**
   * Look now: a message was just committed. Not while the hourly budget is spent: the pass would
   * only count the outbox again and send nothing, once for every message queued (during SMS
   * pumping, once for every request the attacker sends). The regular pass, every
   * `pollIntervalMs`, counts again and sends what the budget allows.
   */
  nudge(): void {
    if (!this.budgetSpent) this.loop.wake();
  }

  /**
   * Sends every due message, batch after batch, until none is left or `stopping()` says to leave
   * the rest in the outbox (for another instance, or the next start); returns how many were
   * handled. For the loop, tests and the CLI.
   */
  async drain(stopping: () => boolean = () => false): Promise<number> {
    let total = 0;
    while (!stopping()) {
      const handled = await this.runBatch();
      total += handled;
      if (handled === 0) break;
    }
    return total;
  }

  /** How many more messages each store that sent any this hour may send now. */
  private async remainingBudgets(now: Date): Promise<Map<string, number>> {
    const sent = await countSentSince(this.deps.db, secondsBefore(now, 60 * 60));
    return new Map([...sent].map(([storeId, n]) => [storeId, this.options.budgetPerHour - n]));
  }

  /** How many more SMS each store may send to each calling code (`<store id> <code>`) now; empty without a per-country budget. */
  private async remainingSmsBudgets(now: Date): Promise<Map<string, number>> {
    const budget = this.options.smsBudgetPerCountryPerHour;
    const remaining = new Map<string, number>();
    if (budget === 0) return remaining;
    for (const row of await countSmsSentSince(this.deps.db, secondsBefore(now, 60 * 60))) {
      const key = smsDestination(row.store_id, row.recipient);
      if (key !== null) remaining.set(key, (remaining.get(key) ?? budget) - row.n);
    }
    return remaining;
  }

  private warnBudgetSpent(stores: string[]): void {
    if (performance.now() - this.lastBudgetWarningMs <= 60_000) return;
    this.lastBudgetWarningMs = performance.now();
    this.deps.logger.error(
      {
        budget_per_hour: this.options.budgetPerHour,
        sms_budget_per_country_per_hour: this.options.smsBudgetPerCountryPerHour,
        store_ids: stores,
      },
      'hourly message budget spent: messages wait in the outbox (raise DELIVERY_BUDGET_PER_HOUR, or DELIVERY_SMS_BUDGET_PER_COUNTRY_PER_HOUR, if this is real traffic)',
    );
  }

  /**
   * Sends one batch within every store's budget; returns how many messages it handled. A message
   * claimed beyond its store's remaining budget (one store had many due at once) is given back.
   */
  private async runBatch(): Promise<number> {
    const { db, clock } = this.deps;
    const now = clock.now();
    const remaining = await this.remainingBudgets(now);
    const spent = [...remaining].filter(([, n]) => n <= 0).map(([storeId]) => storeId);
    const smsRemaining = await this.remainingSmsBudgets(now);
    const smsSpent = [...smsRemaining].filter(([, n]) => n <= 0).map(([key]) => `${key.replace(' ', ' +')}%`);
    const leaseEnd = new Date(now.getTime() + this.options.leaseSeconds * 1000);
    const claimed = await claimDueMessages(db, now, leaseEnd, this.options.batchSize, spent, smsSpent);
    const sending: ClaimedMessage[] = [];
    const over: ClaimedMessage[] = [];
    for (const row of claimed) {
      const left = remaining.get(row.store_id) ?? this.options.budgetPerHour;
      const perCountry = this.options.smsBudgetPerCountryPerHour;
      const country = row.channel === 'sms' && perCountry > 0 ? smsDestination(row.store_id, row.recipient) : null;
      const countryLeft = country === null ? Infinity : (smsRemaining.get(country) ?? perCountry);
      const allowed = left > 0 && countryLeft > 0;
      if (allowed) {
        remaining.set(row.store_id, left - 1);
        if (country !== null) smsRemaining.set(country, countryLeft - 1);
      }
      (allowed ? sending : over).push(row);
    }
    await releaseMessages(db, over);
    if (spent.length > 0 || over.length > 0 || smsSpent.length > 0) {
      const stores = [...spent, ...over.map((row) => row.store_id), ...smsSpent.map((prefix) => prefix.split(' ')[0]!)];
      this.warnBudgetSpent([...new Set(stores)]);
    }
    // Nudges wait for the regular pass while what is due belongs to spent budgets only.
    this.budgetSpent = sending.length === 0 && (spent.length > 0 || over.length > 0 || smsSpent.length > 0);
    await Promise.all(sending.map((row) => this.deliver(row)));
    return sending.length;
  }

  private async deliver(row: ClaimedMessage): Promise<void> {
    const { db, clock, logger } = this.deps;
    const log = logger.child({ store: row.store_slug, message_id: row.id, channel: row.channel, purpose: row.purpose });
    if (row.channel === 'sms' && !inPhoneCountries(row.recipient, row.phone_countries)) {
      // The store stopped serving the number's country (`auth.phone_countries`) since it was queued,
      // or it came some way that does not check (an import): sent nothing, like any brake on pumping.
      await markDropped(db, row, clock.now());
      this.deps.delivered?.(row.channel, 'dropped', row);
      log.warn('message dropped: the number is outside the store’s phone countries');
      return;
    }
    if (row.pointless === true || row.sealed_body === null) {
      // Its code was used, replaced or expired: sending it now would only confuse the customer.
      await markDropped(db, row, clock.now());
      this.deps.delivered?.(row.channel, 'dropped', row);
      log.info('message dropped: its code is no longer usable');
      return;
    }
    const transport = this.deps.transports[row.channel];
    try {
      const content = unsealContent(acceptedKeys(this.deps.keys, 'outbox'), row.sealed_body);
      const from = {
        storeId: row.store_id,
        storeName: row.store_name,
        mailFrom: row.mail_from,
        smsSender: row.sms_sender,
      };
      await transport.send({
        id: row.id,
        from,
        channel: row.channel,
        purpose: row.purpose,
        to: row.recipient,
        content,
      });
    } catch (error) {
      await this.scheduleRetry(row, error);
      return;
    }
    await markSent(db, row, clock.now());
    this.deps.delivered?.(row.channel, 'sent', row);
    log.info({ transport: transport.name, attempts: row.attempts }, 'message sent');
  }

  private async scheduleRetry(row: ClaimedMessage, error: unknown): Promise<void> {
    const { db, clock, logger } = this.deps;
    const now = clock.now();
    const reason = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    const windowEnd = new Date(row.window_started_at).getTime() + this.options.deliveryWindowSeconds * 1000;
    const delaySeconds = Math.min(
      this.options.retryBaseSeconds * 2 ** (row.attempts - 1),
      this.options.maxRetryDelaySeconds,
    );
    const nextAttempt = now.getTime() + delaySeconds * 1000;
    const log = logger.child({
      store: row.store_slug,
      message_id: row.id,
      channel: row.channel,
      attempts: row.attempts,
    });
    if (nextAttempt >= windowEnd) {
      await markFailed(db, row, reason, now);
      this.deps.delivered?.(row.channel, 'failed', row);
      log.error({ reason }, 'message failed: delivery window over');
      return;
    }
    await scheduleNextAttempt(db, row, new Date(nextAttempt), reason, now);
    this.deps.delivered?.(row.channel, 'retry', row);
    log.warn({ reason, retry_in_seconds: delaySeconds }, 'message not delivered; will retry');
  }
}
