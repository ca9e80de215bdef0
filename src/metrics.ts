import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export type DeliveryOutcome = 'sent' | 'retry' | 'failed' | 'dropped';

/**
 * Reads the outbox's messages by status at scrape time (countByStatus of src/delivery/outbox.ts).
 * Handed in because delivery reports to metrics, never the other way round.
 */
export type OutboxCounts = () => Promise<readonly { status: string; n: number }[]>;

/**
 * Prometheus metrics, one registry per service instance (tests build many). Served on a port of
 * their own (METRICS_PORT) so they never share the public listener.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: 'storefront_http_requests_total',
    help: 'HTTP requests answered, by route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly requestDuration = new Histogram({
    name: 'storefront_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly logins = new Counter({
    name: 'storefront_login_attempts_total',
    help: 'Login attempts by outcome.',
    labelNames: ['outcome'] as const,
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

  readonly deliveries = new Counter({
    name: 'storefront_message_deliveries_total',
    help: 'Outbox delivery attempts by channel and outcome.',
    labelNames: ['channel', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'storefront_webhook_deliveries_total',
    help: 'Webhook delivery attempts by event type and outcome (sent, retry, failed).',
    labelNames: ['type', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookLag = new Histogram({
    name: 'storefront_webhook_lag_seconds',
    help: 'Seconds from an event (the commit of its change) to the 2xx of the endpoint that received it.',
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

  constructor(outboxCounts: OutboxCounts, webhookCounts?: OutboxCounts) {
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
