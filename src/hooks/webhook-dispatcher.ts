import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Keys } from '../keys.js';
import { PeriodicTask } from '../periodic.js';
import type { Database } from '../storage/database.js';
import { webhookHeaders } from './standard-webhooks.js';
import { endpointFailed, endpointSucceeded, signingKeys } from './webhook-endpoints.js';
import {
  claimDueDeliveries,
  hurryEndpointDeliveries,
  settleDelivery,
  type AttemptRecord,
  type ClaimedDelivery,
} from './webhook-outbox.js';
import { postWebhook, type PostOutcome, type TargetRules } from './webhook-target.js';

/** The gaps between attempts: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h; then failed. */
export const webhookRetrySeconds: readonly number[] = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400];

export interface WebhookDispatcherOptions {
  /** How often to look for due deliveries when nothing nudges the dispatcher. */
  pollIntervalMs: number;
  /** Deliveries in flight from this instance at once. */
  inFlight: number;
  /** Deliveries in flight to one endpoint at once, across instances. */
  perEndpoint: number;
  /** A 2xx within this long is a success. */
  timeoutMs: number;
  /** A claimed delivery is left alone by other instances this long; after it, a crash's delivery is sent again. */
  leaseSeconds: number;
}

export const defaultWebhookDispatcherOptions: WebhookDispatcherOptions = {
  pollIntervalMs: 1_000,
  inFlight: 64,
  perEndpoint: 8,
  timeoutMs: 10_000,
  leaseSeconds: 60,
};

export type WebhookOutcome = 'sent' | 'retry' | 'failed';

export interface WebhookDispatcherDeps {
  db: Database;
  clock: Clock;
  keys: Pick<Keys, 'hooks' | 'previous'>;
  logger: FastifyBaseLogger;
  rules: TargetRules;
  /**
   * Told each attempt's outcome and store, and for a success the seconds from the event to its 2xx
   * (for metrics).
   */
  delivered?: (attempt: {
    type: string;
    outcome: WebhookOutcome;
    lagSeconds?: number;
    storeId: string;
    storeSlug: string;
  }) => void;
  passFailed?: () => void;
}

/**
 * Sends webhook deliveries behind the answers. A pass claims what fits in the free slots and
 * starts it without waiting: a slow endpoint holds its own slots (`perEndpoint`), never the
 * others'. Each finished delivery wakes the loop for the next. At least once: a crash between the
 * receiver's 2xx and the row's update sends the event again after the lease, with the same
 * `webhook-id`.
 */
export class WebhookDispatcher {
  private readonly options: WebhookDispatcherOptions;
  private readonly loop: PeriodicTask;
  private readonly sending = new Set<Promise<void>>();
  /** Deliveries finished so far: one that finishes during a pass may make another due (the next of its customer). */
  private finished = 0;

  constructor(
    private readonly deps: WebhookDispatcherDeps,
    options: Partial<WebhookDispatcherOptions> = {},
  ) {
    this.options = { ...defaultWebhookDispatcherOptions, ...options };
    this.loop = new PeriodicTask(async (stopping) => void (await this.pass(stopping)), {
      intervalMs: this.options.pollIntervalMs,
      logger: deps.logger,
      failureMessage: 'webhook dispatch failed; will retry',
      failed: deps.passFailed,
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops claiming, and waits for the deliveries in flight. */
  async stop(): Promise<void> {
    await this.loop.stop();
    await Promise.all([...this.sending]);
  }

  /** Look now: an event was just committed. */
  nudge(): void {
    this.loop.wake();
  }

  /**
   * Sends everything due, and waits for it, until a pass finds nothing; returns how many attempts
   * were made. For tests and the command line (the loop itself never waits for a delivery).
   */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const finishedBefore = this.finished;
      const started = await this.pass(() => false);
      total += started;
      if (started > 0 || this.finished !== finishedBefore) continue;
      if (this.sending.size === 0) return total;
      await Promise.race([...this.sending]);
    }
  }

  /** Claims what the free slots allow and starts sending it; returns how many it started. */
  private async pass(stopping: () => boolean): Promise<number> {
    const free = this.options.inFlight - this.sending.size;
    if (stopping() || free <= 0) return 0;
    const now = this.deps.clock.now();
    const leaseEnd = new Date(now.getTime() + this.options.leaseSeconds * 1000);
    const claimed = await claimDueDeliveries(this.deps.db, now, leaseEnd, {
      limit: free,
      perEndpoint: this.options.perEndpoint,
    });
    for (const delivery of claimed) {
      const sending: Promise<void> = this.deliver(delivery, leaseEnd)
        .catch((error: unknown) =>
          this.deps.logger.error(
            { err: error, store: delivery.store_slug, delivery_id: delivery.id },
            'webhook delivery failed to settle',
          ),
        )
        .finally(() => {
          this.finished += 1;
          this.sending.delete(sending);
          this.loop.wake();
        });
      this.sending.add(sending);
    }
    return claimed.length;
  }

  private async deliver(delivery: ClaimedDelivery, leaseEnd: Date): Promise<void> {
    const { clock } = this.deps;
    const startedMs = performance.now();
    const outcome = await this.send(delivery);
    const now = clock.now();
    const attempt: AttemptRecord = {
      at: now.toISOString(),
      status: 'status' in outcome ? outcome.status : null,
      error: 'error' in outcome ? outcome.error.slice(0, 300) : null,
      duration_ms: Math.round(performance.now() - startedMs),
    };
    if (attempt.status !== null && attempt.status >= 200 && attempt.status < 300) {
      await this.succeeded(delivery, leaseEnd, attempt, now);
    } else {
      await this.failed(delivery, leaseEnd, attempt, now);
    }
  }

  private async send(delivery: ClaimedDelivery): Promise<PostOutcome> {
    if (delivery.body === null) return { error: 'the event was erased with its customer' };
    let keys: Buffer[];
    try {
      keys = signingKeys(
        this.deps.keys,
        {
          current: delivery.sealed_secret,
          previous: delivery.sealed_previous_secret,
          previousUntil: delivery.previous_secret_until,
        },
        this.deps.clock.now(),
      );
    } catch (error) {
      return { error: (error as Error).message };
    }
    // Signed at the wall clock's time, whatever clock schedules the retries: a receiver refuses a
    // timestamp more than 5 minutes from its own clock (replay protection), so it must be now.
    const headers = webhookHeaders(keys, delivery.body, { id: delivery.event_id });
    return postWebhook(delivery.url, headers, delivery.body, this.deps.rules, this.options.timeoutMs);
  }

  private log(delivery: ClaimedDelivery) {
    return this.deps.logger.child({
      store: delivery.store_slug,
      webhook_id: delivery.endpoint_id,
      event_id: delivery.event_id,
      event_type: delivery.type,
      delivery_id: delivery.id,
      attempts: delivery.attempts,
    });
  }

  private async succeeded(delivery: ClaimedDelivery, leaseEnd: Date, attempt: AttemptRecord, now: Date): Promise<void> {
    const { db } = this.deps;
    await settleDelivery(db, delivery, leaseEnd, attempt, { status: 'sent' });
    const endpoint = { storeId: delivery.store_id, endpointId: delivery.endpoint_id };
    if (await endpointSucceeded(db, endpoint))
      await hurryEndpointDeliveries(db, delivery.store_id, delivery.endpoint_id, now, { unreachable: true });
    const lagSeconds = (now.getTime() - new Date(delivery.event_created_at).getTime()) / 1000;
    this.deps.delivered?.({
      type: delivery.type,
      outcome: 'sent',
      lagSeconds,
      storeId: delivery.store_id,
      storeSlug: delivery.store_slug,
    });
    this.log(delivery).info({ status: attempt.status, duration_ms: attempt.duration_ms }, 'webhook delivered');
  }

  private async failed(delivery: ClaimedDelivery, leaseEnd: Date, attempt: AttemptRecord, now: Date): Promise<void> {
    const { db } = this.deps;
    const gone = attempt.status === 410;
    const gap = webhookRetrySeconds[delivery.attempts - 1];
    const final = gone || gap === undefined || delivery.body === null;
    await settleDelivery(
      db,
      delivery,
      leaseEnd,
      attempt,
      final ? { status: 'failed' } : { status: 'pending', nextAttempt: new Date(now.getTime() + gap * 1000) },
    );
    const disabled = await endpointFailed(
      db,
      { storeId: delivery.store_id, endpointId: delivery.endpoint_id },
      now,
      gone,
    );
    this.deps.delivered?.({
      type: delivery.type,
      outcome: final ? 'failed' : 'retry',
      storeId: delivery.store_id,
      storeSlug: delivery.store_slug,
    });
    const log = this.log(delivery);
    const reason = attempt.status === null ? attempt.error : `answered ${attempt.status}`;
    if (final) log.error({ reason }, 'webhook failed: no more attempts');
    else log.warn({ reason, retry_in_seconds: gap }, 'webhook not delivered; will retry');
    if (disabled !== null) log.error({ reason: disabled }, 'webhook endpoint disabled');
  }
}
