import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export type DeliveryOutcome = 'sent' | 'retry' | 'failed' | 'dropped';

/** The `store` label of what belongs to no store: the admin listener, the probes, a platform call, an unknown host. */
export const noStoreLabel = '';
/** The `store` label every store past the first METRICS_STORE_LABELS seen shares. */
export const otherStoresLabel = '_other';

/**
 * Which `store` label value each store's series carry in this process: the first `limit` stores
 * seen get their slug, every further one `_other`, so 10,000 stores never make 10,000 sets of
 * series, and a store's label never changes while the process lives (its series stay one series).
 * One Map read per call, nothing allocated: a store past the bound is not remembered, it is simply
 * not among the first.
 */
export class StoreLabels {
  /** Store id → its slug, for the first `limit` stores seen. */
  private readonly labels = new Map<string, string>();

  constructor(private readonly limit: number) {}

  /** The label of the store of this id (and slug): its slug if it is among the first `limit` seen, else `_other`. */
  of(id: string, slug: string): string {
    const known = this.labels.get(id);
    if (known !== undefined) return known;
    if (this.labels.size >= this.limit) return otherStoresLabel;
    this.labels.set(id, slug);
    return slug;
  }
}

/**
 * A metric's labels with none left out. prom-client's own types let any label be omitted, and a
 * series without `store` would stand beside the labelled ones: with these, every count names its store.
 */
type AllLabels<L extends string> = Record<L, string | number>;
export type StoreCounter<L extends string> = Omit<Counter<L>, 'inc'> & {
  inc(labels: AllLabels<L>, value?: number): void;
};
export type StoreHistogram<L extends string> = Omit<Histogram<L>, 'observe'> & {
  observe(labels: AllLabels<L>, value: number): void;
};

/**
 * Reads the outbox's messages by status at scrape time (countByStatus of src/delivery/outbox.ts).
 * Handed in because delivery reports to metrics, never the other way round.
 */
export type OutboxCounts = () => Promise<readonly { status: string; n: number }[]>;

/**
 * Prometheus metrics, one registry per service instance (tests build many). Served on a port of
 * their own (METRICS_PORT) so they never share the public listener. The request, login, message
 * and webhook metrics carry `store` (see StoreLabels): `""` for what belongs to no store.
 */
export class Metrics {
  readonly registry = new Registry();

  /** The `store` label of each store, bounded by METRICS_STORE_LABELS. */
  readonly storeLabels: StoreLabels;

  readonly requests: StoreCounter<'method' | 'route' | 'status' | 'store'> = new Counter({
    name: 'storefront_http_requests_total',
    help: 'HTTP requests answered, by route, status and store.',
    labelNames: ['method', 'route', 'status', 'store'] as const,
    registers: [this.registry],
  });

  readonly requestDuration: StoreHistogram<'method' | 'route' | 'status' | 'store'> = new Histogram({
    name: 'storefront_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route, status and store.',
    labelNames: ['method', 'route', 'status', 'store'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly logins: StoreCounter<'outcome' | 'store'> = new Counter({
    name: 'storefront_login_attempts_total',
    help: 'Login attempts by outcome and store.',
    labelNames: ['outcome', 'store'] as const,
    registers: [this.registry],
  });

  readonly signInNotices = new Counter({
    name: 'storefront_sign_in_notices_total',
    help: 'What each successful login made of the new sign-in notice: sent, known_device, first_sign_in, off or failed.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly accountRequests = new Counter({
    name: 'storefront_account_requests_total',
    help: 'Data exports and account deletions done by customers, by operation.',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly passwordChanges = new Counter({
    name: 'storefront_password_changes_total',
    help: 'Password changes by signed-in customers, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly breachedPasswordChecks = new Counter({
    name: 'storefront_breached_password_checks_total',
    help: 'New passwords checked against the breach corpus, by source (range_api, local) and outcome (breached, clean, failed_open).',
    labelNames: ['source', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly identityChanges = new Counter({
    name: 'storefront_identity_changes_total',
    help: 'Changes of email or phone by signed-in customers, by step (request, confirm) and outcome.',
    labelNames: ['step', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly sessionsRevoked = new Counter({
    name: 'storefront_sessions_revoked_total',
    help: 'Sessions a customer revoked from the account area: one by its id, or the others at once.',
    labelNames: ['scope'] as const,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'storefront_rate_limited_total',
    help: 'Requests answered 429, by the limit that was hit.',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly deliveries: StoreCounter<'channel' | 'outcome' | 'store'> = new Counter({
    name: 'storefront_message_deliveries_total',
    help: 'Outbox delivery attempts by channel, outcome and store.',
    labelNames: ['channel', 'outcome', 'store'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveries: StoreCounter<'type' | 'outcome' | 'store'> = new Counter({
    name: 'storefront_webhook_deliveries_total',
    help: 'Webhook delivery attempts by event type, outcome (sent, retry, failed) and store.',
    labelNames: ['type', 'outcome', 'store'] as const,
    registers: [this.registry],
  });

  readonly webhookLag: StoreHistogram<'store'> = new Histogram({
    name: 'storefront_webhook_lag_seconds',
    help: 'Seconds from an event (the commit of its change) to the 2xx of the endpoint that received it, by store.',
    labelNames: ['store'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 3600, 86400],
    registers: [this.registry],
  });

  readonly janitorRemoved = new Counter({
    name: 'storefront_janitor_removed_rows_total',
    help: 'Rows the janitor deleted after their retention, by table.',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });

  readonly passFailures = new Counter({
    name: 'storefront_background_pass_failures_total',
    help: 'Passes of a background loop (dispatcher, janitor) that failed and were logged; the loop goes on.',
    labelNames: ['loop'] as const,
    registers: [this.registry],
  });

  readonly auditDropped = new Counter({
    name: 'storefront_audit_entries_dropped_total',
    help: 'Audit entries lost: the in-memory queue was full, or their write failed.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly dependencyUp = new Gauge({
    name: 'storefront_dependency_up',
    help: 'Result of the last readiness check of each dependency (1 up, 0 down).',
    labelNames: ['dependency'] as const,
    registers: [this.registry],
  });

  /** `storeLabels`: METRICS_STORE_LABELS, how many stores get a label value of their own. */
  constructor(
    outboxCounts: OutboxCounts,
    webhookCounts: OutboxCounts | undefined,
    { storeLabels }: { storeLabels: number },
  ) {
    this.storeLabels = new StoreLabels(storeLabels);
    collectDefaultMetrics({ register: this.registry, prefix: 'storefront_' });
    statusGauge(
      this.registry,
      'storefront_outbox_messages',
      'Messages in the outbox by status (read at scrape time).',
      outboxCounts,
    );
    if (webhookCounts !== undefined)
      statusGauge(
        this.registry,
        'storefront_webhook_deliveries',
        'Webhook deliveries by status (read at scrape time): pending ones wait for their endpoint.',
        webhookCounts,
      );
  }
}

/** A gauge of rows by status, counted when scraped. */
function statusGauge(registry: Registry, name: string, help: string, counts: OutboxCounts): void {
  new Gauge({
    name,
    help,
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const row of await counts()) this.set({ status: row.status }, row.n);
    },
  });
}
