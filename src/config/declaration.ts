import { defaultDatabasePoolSize } from '../storage/postgres.js';
import { deliveryDefaults, defaultRetention } from './types.js';

/** Enough for a rotation in progress and the ones before it; more means old secrets are never dropped. */
export const maxPreviousSecrets = 5;
export const minSecretLength = 32;
/** Each thread holds 19 MiB while it hashes; past this many, hashes only wait longer for a core. */
export const maxHashThreads = 64;

// Node fires a timer of more than 2^31 - 1 ms at once, so settings that become timers stay well below.
const maxTimerSeconds = 24 * 60 * 60;

// A century. Each retention becomes a cutoff of now minus that many days, and one far past this
// (3,000,000 days) falls before PostgreSQL's earliest timestamp: every janitor pass would fail.
const maxRetentionDays = 36_500;

// The dispatcher waits at most 10 minutes between retries (maxRetryDelaySeconds in
// delivery/dispatcher.ts), so a longer first delay would mean nothing.
const maxRetryBaseSeconds = 10 * 60;
// A week: a code in a message is useless after minutes, and a notice weeks late only confuses.
const maxDeliveryWindowSeconds = 7 * 24 * 60 * 60;
// The budget is a brake on SMS pumping and mail bombing; past this many an hour it brakes nothing.
const maxDeliveryBudgetPerHour = 1_000_000;
export const maxPort = 65_535;
// Each store with a label of its own adds its series to every per-store metric (a request
// histogram's buckets for each route and status among them); past this many, one scrape holds
// more than Prometheus should be asked to keep per instance.
const maxMetricsStoreLabels = 1_000;

// One event loop keeps only so many statements in flight; far more connections than this is a typo,
// and would take a PostgreSQL server's default 100 slots from every other client.
const maxDatabasePoolSize = 200;

/**
 * One environment variable: how it is read (`kind`, with its default and limits) and what the
 * configuration table says of it. `shownDefault` describes a default that is not a plain value
 * (computed, or "unset" meaning something); `allowed` describes values the kind alone does not.
 */
export type Setting = { description: string; shownDefault?: string; allowed?: string } & (
  | { kind: 'text'; default?: string }
  | { kind: 'list' }
  | { kind: 'boolean'; default?: boolean }
  | { kind: 'number'; default?: number; min: number; max: number; integer?: boolean }
  | { kind: 'port'; default: number }
  | { kind: 'choice'; choices: readonly string[]; default: string }
  | { kind: 'url'; protocols: readonly string[] }
  | { kind: 'caFile' }
);

const port = { kind: 'number', min: 0, max: maxPort, integer: true } as const;
const timer = { kind: 'number', min: 0, max: maxTimerSeconds } as const;
const days = { kind: 'number', min: 0, max: maxRetentionDays } as const;
const budget = { kind: 'number', max: maxDeliveryBudgetPerHour, integer: true } as const;
const caFile = { kind: 'caFile', shownDefault: "unset: Node's public roots" } as const;

/**
 * Every variable the service reads, in the order the near-miss check prefers them on a tie. The
 * readers in read.ts accept only these names, and scripts/config-table.ts writes the table in
 * docs/guides/production.md from them.
 */
export const settings = {
  PORT: { kind: 'port', default: 3000, description: 'where the HTTP server listens; `0` picks a free port' },
  HOST: { kind: 'text', default: '127.0.0.1', description: 'the address the HTTP server listens on' },
  NODE_ENV: {
    kind: 'text',
    allowed: '`production`, or any other value',
    description:
      '`production` makes cookies `Secure` by default, refuses to send codes to the log without `DELIVERY_LOG_IN_PRODUCTION`, and stops printing codes as plain lines',
  },
  DATA_DIR: {
    kind: 'text',
    default: './data',
    description:
      'the embedded PostgreSQL server (`DATA_DIR/postgres`, its socket inside) and the generated secret; the socket path must fit 107 bytes, so `DATA_DIR` may be at most 82 bytes long',
  },
  DATABASE_URL: {
    kind: 'url',
    protocols: ['postgres:', 'postgresql:'],
    shownDefault: 'unset: the embedded server in `DATA_DIR`',
    description:
      'a PostgreSQL server (15 or newer), or PgBouncer in transaction mode in front of one (see [Behind a connection pooler](encryption-redis-and-pgbouncer.md#behind-a-connection-pooler)); add `?sslmode=verify-full` (or `require`, `verify-ca`) for TLS, with the meanings under [Encryption in transit](encryption-redis-and-pgbouncer.md#encryption-in-transit); `prefer`, `allow` and `no-verify` are refused',
  },
  DATABASE_CA_FILE: {
    ...caFile,
    description:
      "PEM CA bundle that verifies the PostgreSQL server's certificate, read once at start (in place of the public roots); needs a `DATABASE_URL` with an `sslmode` other than `disable`; required by `verify-ca`",
  },
  DATABASE_POOL_SIZE: {
    kind: 'number',
    default: defaultDatabasePoolSize,
    min: 1,
    max: maxDatabasePoolSize,
    integer: true,
    description:
      'database connections one instance opens at most; behind PgBouncer these are connections to PgBouncer. In embedded mode the server gets 20 more connection slots than this, at least 30',
  },
  REDIS_URL: {
    kind: 'text',
    shownDefault: 'unset: in-process',
    allowed: '`redis://`, `rediss://`, `redis+cluster://`, `rediss+cluster://`',
    description:
      '`redis://…` (or `rediss://…` for TLS) for one Redis or Valkey server; `redis+cluster://[user:password@]host:port,host:port/` (or `rediss+cluster://…` for TLS) for a Redis Cluster, naming one or more of its nodes; a cluster has only database 0, so a cluster URL names no other (see "Redis Cluster")',
  },
  REDIS_KEY_PREFIX: {
    kind: 'text',
    default: 'storefront-auth:',
    allowed: 'up to 64 of `A-Z a-z 0-9 . _ - { } :`, ending in `:`; no `{` with a Redis Cluster',
    description:
      "prepended to every Redis key, so deployments sharing one Redis never count each other's calls; with a Redis Cluster a `{` would decide every key's hash slot. Keys used to live under a fixed `sfa:`: those are only rate-limit counters that expire within the hour, so the new default loses nothing that matters",
  },
  REDIS_CA_FILE: {
    ...caFile,
    description:
      "PEM CA bundle that verifies a `rediss://` or `rediss+cluster://` (TLS) server's certificate, read once at start; `rediss://` always verifies the chain and the host name",
  },
  SEARCH_URL: {
    kind: 'url',
    protocols: ['http:', 'https:'],
    description:
      'search engine whose `GET /health` readiness reports (a redirect counts as unhealthy); unset counts as healthy',
  },
  APP_SECRET: {
    kind: 'text',
    shownDefault: 'generated into `DATA_DIR/secret`',
    allowed: `at least ${minSecretLength} characters`,
    description: 'keys code HMACs, CSRF tokens, outbox sealing; required with `DATABASE_URL`',
  },
  APP_SECRET_PREVIOUS: {
    kind: 'list',
    shownDefault: 'empty',
    allowed: `up to ${maxPreviousSecrets} comma-separated secrets, each at least ${minSecretLength} characters, none equal to \`APP_SECRET\``,
    description:
      'secrets still accepted when checking a code, a CSRF token or a sealed message, never used to make one: how `APP_SECRET` is rotated without refusing what the old one made (see [Running at scale](../running-at-scale.md#rotating-app_secret))',
  },
  HASH_THREADS: {
    kind: 'number',
    min: 1,
    max: maxHashThreads,
    integer: true,
    shownDefault: 'the number of cores the process may use (`os.availableParallelism()`)',
    description:
      'argon2 hashing threads in each instance, and how many hashes run at once. A thread starts with the first hash and ends after 5 minutes without one',
  },
  PLATFORM_NAME: { kind: 'text', default: 'Storefront', description: '`name` in `GET /platform`' },
  STORE_NAME: {
    kind: 'text',
    default: 'My Store',
    allowed: 'at most 120 characters',
    description: 'the name of the first store (`default`), made on first start',
  },
  STORE_IDENTITY_MODE: {
    kind: 'choice',
    choices: ['email', 'phone'],
    default: 'email',
    description: "the first store's identity mode, on first start",
  },
  STORE_VERIFICATION_REQUIRED: {
    kind: 'boolean',
    default: false,
    description: "whether the first store's unverified customers may log in, on first start",
  },
  SMTP_URL: {
    kind: 'url',
    protocols: ['smtp:', 'smtps:'],
    shownDefault: 'unset: email to the log (outside production)',
    description:
      '`smtps://user:pass@host:465` (TLS from the first byte) or `smtp://user:pass@host:587` (STARTTLS, required when the URL carries credentials or `SMTP_CA_FILE` is set), no query parameters',
  },
  MAIL_FROM: {
    kind: 'text',
    default: 'Storefront <no-reply@localhost>',
    description:
      "the sender of every store without a `mail_from` of its own: with a display name it is used as written, a bare address is sent under each store's name ([mail and SMS](many-stores.md#mail-and-sms-of-each-store))",
  },
  SMTP_CA_FILE: {
    ...caFile,
    description:
      "PEM CA bundle that verifies the SMTP server's certificate (either scheme), read once at start; with `smtp://` it also makes STARTTLS required; needs `SMTP_URL`",
  },
  SMS_WEBHOOK_URL: {
    kind: 'url',
    protocols: ['https:', 'http:'],
    shownDefault: 'unset: SMS to the log (outside production)',
    allowed: '`https://`, or `http://` on a loopback address',
    description: 'the SMS provider hook; a redirect from it is a failed attempt, never followed',
  },
  SMS_WEBHOOK_SECRET: {
    kind: 'text',
    description: "the HMAC secret that signs the SMS hook's requests; required with `SMS_WEBHOOK_URL`",
  },
  BREACHED_PASSWORDS_URL: {
    kind: 'url',
    protocols: ['https:', 'http:'],
    shownDefault: 'unset: the local copy when loaded, else no check',
    allowed: '`https://`, or `http://` on a loopback address; no `?` or `#`',
    description:
      'a Pwned-Passwords-compatible range API (`https://api.pwnedpasswords.com`) new passwords are checked against ([breached passwords](protecting-accounts.md#breached-passwords)); when set, the local copy is not read',
  },
  DELIVERY_LOG_IN_PRODUCTION: {
    kind: 'boolean',
    default: false,
    description:
      "with `NODE_ENV=production`, the service refuses to start when the store's channel has no transport (`SMTP_URL` for an email store, `SMS_WEBHOOK_URL` for a phone store), and `store set --identity-mode` refuses to switch to such a channel; `true` lets codes go to the log on purpose (a trial, a demo). Ignored outside production",
  },
  SMS_ALLOWED_COUNTRY_CODES: {
    kind: 'list',
    shownDefault: 'empty: all',
    allowed: 'comma-separated country calling codes such as `44,33`',
    description: 'the calling codes a phone store registers; others get a 422 on `phone`',
  },
  DELIVERY_BUDGET_PER_HOUR: {
    ...budget,
    min: 1,
    default: deliveryDefaults.budgetPerHour,
    description:
      "messages each store sends in any hour; past it that store's messages wait in the outbox and an error is logged",
  },
  DELIVERY_SMS_BUDGET_PER_COUNTRY_PER_HOUR: {
    ...budget,
    min: 0,
    default: deliveryDefaults.smsBudgetPerCountryPerHour,
    shownDefault: '`0`: off',
    description:
      "SMS each store sends to one country calling code in any hour (`+1` counts as one country); past it those messages wait in the outbox while the store's others go out ([phone countries](protecting-accounts.md#phone-countries))",
  },
  DELIVERY_RETRY_BASE_SECONDS: {
    kind: 'number',
    default: deliveryDefaults.retryBaseSeconds,
    min: 0.001,
    max: maxRetryBaseSeconds,
    description: 'first retry delay of a failed message; doubled each time, at most 10 minutes',
  },
  DELIVERY_WINDOW_SECONDS: {
    kind: 'number',
    default: deliveryDefaults.windowSeconds,
    min: 1,
    max: maxDeliveryWindowSeconds,
    description: 'how long a message is retried before it is marked failed; at most a week',
  },
  WEBHOOK_ALLOW_PRIVATE: {
    kind: 'boolean',
    default: false,
    description:
      '`true` lets webhook endpoints be loopback, private or link-local addresses (tests, a private network); otherwise such an endpoint is refused when added and at every delivery (see [webhooks](webhooks.md))',
  },
  COOKIE_SECURE: {
    kind: 'boolean',
    shownDefault: '`true` when `NODE_ENV=production`, else `false`',
    description: '`Secure` cookies; turn off only for plain-HTTP development',
  },
  COOKIE_DOMAIN: {
    kind: 'text',
    shownDefault: 'unset: host-only cookies',
    allowed: 'a domain of at least two labels, without scheme, port or path',
    description:
      "the parent domain of the storefront and the service (`shop.example` for a page on `shop.example` calling `auth.shop.example`): the session and `XSRF-TOKEN` cookies are set for it, so the storefront's script can read the token; see [a frontend on another host](frontend-on-another-host.md). The default of every store without a `cookie_domain` of its own: each such store must answer under it, and they share the browser's cookies ([cookies across stores](many-stores.md#cookies-across-stores))",
  },
  SESSION_COOKIE_NAME: {
    kind: 'text',
    shownDefault:
      '`__Host-storefront_session` when secure (`__Secure-storefront_session` with `COOKIE_DOMAIN`), else `storefront_session`',
    allowed: 'a cookie name; `__Host-` and `__Secure-` need `COOKIE_SECURE=true`, and `__Host-` no `COOKIE_DOMAIN`',
    description: 'the name of the session cookie',
  },
  CORS_ALLOWED_ORIGINS: {
    kind: 'list',
    shownDefault: 'empty',
    allowed: 'comma-separated origins such as `https://shop.example`',
    description:
      'origins allowed to call with credentials (CORS and the CSRF origin check) by every store; a store adds its own (`https://` and each of its hosts, and its allowed origins); a storefront on a sibling host also needs `COOKIE_DOMAIN`',
  },
  WEBAUTHN_RP_ID: {
    kind: 'text',
    shownDefault: 'the host of the first allowed CORS origin named by a domain, else `localhost`',
    allowed: 'a lowercase domain name: no scheme, port or IP address',
    description:
      'the domain passkeys are bound to, for a store without hosts or a `webauthn_rp_id` of its own (a store with hosts is its own relying party, [what a store is](many-stores.md#what-a-store-is)); see [Passkeys](your-own-sign-in-pages.md#passkeys)',
  },
  WEBAUTHN_ORIGINS: {
    kind: 'list',
    shownDefault:
      'unset: the `CORS_ALLOWED_ORIGINS` that are `https://` on the RP ID, plus the origin each request was addressed to when its host is on the RP ID',
    allowed: 'comma-separated origins, each on the RP ID and `https://` (`http://` only for `localhost`)',
    description: 'page origins whose passkey ceremonies are accepted',
  },
  TRUST_PROXY: {
    kind: 'boolean',
    default: false,
    description:
      '`true`: take the client address from `X-Forwarded-For`, the scheme the CSRF origin check expects from `X-Forwarded-Proto` and the host that names the store from `X-Forwarded-Host`, trusting only the proxy next to the service',
  },
  SIGN_IN_PAGE: { kind: 'boolean', default: true, description: 'serve the sign-in page at `/`' },
  METRICS_PORT: {
    ...port,
    shownDefault: 'unset: off',
    description: 'serve Prometheus metrics at `http://METRICS_HOST:METRICS_PORT/metrics`',
  },
  METRICS_HOST: { kind: 'text', default: '127.0.0.1', description: 'the address the metrics are served on' },
  METRICS_STORE_LABELS: {
    kind: 'number',
    default: 100,
    min: 0,
    max: maxMetricsStoreLabels,
    integer: true,
    description:
      'how many stores get a `store` label of their own (their slug) on the request, login, message and webhook metrics: the first that many this process sees; every further store shares `store="_other"`, and a request of no store has `store=""`; `0`: every store is `_other` (see [metrics and logs](metrics-and-logs.md))',
  },
  ADMIN_PORT: {
    ...port,
    default: 3001,
    description:
      'where the admin listener listens (`0` picks a free port); never the customer or metrics port; set without a token, the start stops',
  },
  ADMIN_HOST: {
    kind: 'text',
    default: '127.0.0.1',
    description: 'the address the admin listener listens on; set without a token, the start stops',
  },
  ADMIN_TOKENS: {
    kind: 'list',
    allowed: `comma-separated tokens, each at least ${minSecretLength} of \`A-Z a-z 0-9 - . _ ~ + /\`, \`=\` at the end`,
    description:
      'bearer tokens that may make every call of the admin listener; several, so one can be rotated out. Set, it (or `INTROSPECTION_TOKENS`) starts the admin listener',
  },
  INTROSPECTION_TOKENS: {
    kind: 'list',
    allowed: 'as `ADMIN_TOKENS`; a token may not be in both',
    description: 'as `ADMIN_TOKENS`, but may make only the session introspection (and read the admin API document)',
  },
  LOG_LEVEL: {
    kind: 'choice',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
    description: 'the least severe level logged; `silent` logs nothing',
  },
  SESSION_RETENTION_DAYS: {
    ...days,
    default: defaultRetention.sessionDays,
    description: 'days an ended session (idle timeout or absolute lifetime) is kept before the janitor deletes it',
  },
  CODE_RETENTION_DAYS: {
    ...days,
    default: defaultRetention.codeDays,
    description: 'days a finished code (used, replaced, expired, or dead after five wrong tries) is kept',
  },
  MESSAGE_RETENTION_DAYS: {
    ...days,
    // The hourly delivery budget counts the last hour's sent messages in the outbox.
    min: 1 / 24,
    default: defaultRetention.messageDays,
    allowed: `a number from 1/24 (an hour) to ${maxRetentionDays}`,
    description: 'days a sent or dropped message is kept',
  },
  FAILED_MESSAGE_RETENTION_DAYS: {
    ...days,
    default: defaultRetention.failedMessageDays,
    description: 'days a failed message is kept (for `outbox list` and `outbox retry`)',
  },
  AUDIT_RETENTION_DAYS: {
    ...days,
    default: defaultRetention.auditDays,
    description: 'days an audit event is kept',
  },
  JANITOR_INTERVAL_SECONDS: {
    ...timer,
    integer: true,
    default: 300,
    description:
      "seconds between the janitor's passes in each instance; `0`: no janitor in this instance (run `prune` yourself; a deleted store is erased only by an instance whose janitor runs)",
  },
  SHUTDOWN_DELAY_SECONDS: {
    ...timer,
    default: 5,
    description:
      'after SIGTERM, how long readiness answers `503` while requests are still served, so a load balancer stops sending first; set `0` in development (SIGINT never waits); less than `SHUTDOWN_TIMEOUT_SECONDS`',
  },
  SHUTDOWN_TIMEOUT_SECONDS: {
    ...timer,
    min: 1,
    default: 25,
    description: 'the whole shutdown, delay included, is cut after this long (what was cut is logged, exit code 1)',
  },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof settings;
