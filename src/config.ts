import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { maxSocketPathBytes, socketPathFits } from './storage/embedded-postgres-folder.js';
import { defaultDatabasePoolSize } from './storage/postgres.js';
import { sslModeOf } from './storage/postgres-tls.js';
import { isRedisClusterUrl, parseRedisClusterUrl, RedisAddressError } from './storage/redis-address.js';

/** The delivery settings' defaults, which the dispatcher also starts from when built directly. */
export const deliveryDefaults: {
  retryBaseSeconds: number;
  windowSeconds: number;
  budgetPerHour: number;
  /** SMS each store may send to one country calling code in any hour; 0: no such budget. */
  smsBudgetPerCountryPerHour: number;
} = {
  retryBaseSeconds: 5,
  windowSeconds: 60 * 60,
  budgetPerHour: 1000,
  smsBudgetPerCountryPerHour: 0,
};

export type IdentityMode = 'email' | 'phone';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * The embedded server in DATA_DIR, or a PostgreSQL server at DATABASE_URL. APP_SECRET goes with
 * the mode: a server deployment must name it (instances share it), while the embedded mode may
 * leave it to the secret it generates into DATA_DIR on first start. Both modes have a pool
 * (the embedded server's connection slots are sized from it); only a server has a CA to check.
 */
export type DatabaseConfig =
  | {
      mode: 'embedded';
      dataDir: string;
      appSecret: string | undefined;
      /** Database connections this instance opens at most (the pg pool's size). */
      poolSize: number;
    }
  | {
      mode: 'server';
      url: string;
      appSecret: string;
      /** Database connections this instance opens at most (the pg pool's size). */
      poolSize: number;
      /** PEM CA bundle (DATABASE_CA_FILE, read at start) that verifies the server's certificate. */
      ca: string | undefined;
    };

/**
 * Where the rate-limit counters live: this instance's memory, or a Redis (REDIS_URL) that every
 * instance shares, with this instance's memory standing in while it is unreachable.
 */
export type CountersConfig =
  | { kind: 'memory' }
  | {
      kind: 'redis';
      /** `redis://` or `rediss://` for one server, `redis+cluster://` or `rediss+cluster://` for a Redis Cluster. */
      url: string;
      /** A Redis Cluster: the key prefix then holds no "{", which would pick every key's hash slot. */
      cluster: boolean;
      /** A `rediss` URL: TLS, the certificate verified against `ca` (REDIS_CA_FILE) or the system's CAs. */
      tls: { ca: string | undefined } | undefined;
      /** Prepended to every Redis key, so deployments sharing one Redis never count each other's calls. */
      keyPrefix: string;
    };

/**
 * How email leaves: through an SMTP server (SMTP_URL), or nowhere, where the log stands in when
 * `deliveryLogAllowed` and email is refused otherwise.
 */
export type MailConfig =
  | { kind: 'none' }
  | {
      kind: 'smtp';
      /** `smtps://` (implicit TLS) or `smtp://` (STARTTLS), without query parameters. */
      url: string;
      /** MAIL_FROM. */
      from: string;
      /** PEM CA bundle (SMTP_CA_FILE) for the SMTP server's certificate, implicit TLS or STARTTLS. */
      ca: string | undefined;
    };

export interface Config {
  port: number;
  host: string;
  /** Which PostgreSQL the service uses, and the secret that goes with it. */
  database: DatabaseConfig;
  counters: CountersConfig;
  searchUrl: string | undefined;
  /**
   * Secrets accepted when checking a code MAC, a CSRF token or a sealed body, but never used to
   * make one: APP_SECRET's predecessors during a rotation (or its successor just before one).
   */
  appSecretPrevious: string[];
  /** argon2 hashing threads, and hashes run at once. */
  hashThreads: number;
  platformName: string;
  initialStore: { name: string; identityMode: IdentityMode; verificationRequired: boolean };
  mail: MailConfig;
  /** The SMS hook and the secret that signs its requests: both or neither. */
  smsWebhook: { url: string; secret: string } | undefined;
  /** Calling codes (without '+') a phone store accepts at registration; empty means all. */
  smsAllowedCallingCodes: string[];
  /**
   * BREACHED_PASSWORDS_URL: a Pwned-Passwords-compatible range API new passwords are checked
   * against; undefined: the local copy (`breached load`) when it has rows, else no check.
   */
  breachedPasswordsUrl: string | undefined;
  delivery: typeof deliveryDefaults;
  /**
   * Where webhooks may go: `https://` only in production; private, loopback and link-local
   * addresses only with WEBHOOK_ALLOW_PRIVATE=true.
   */
  webhooks: { httpsOnly: boolean; allowPrivate: boolean };
  retention: RetentionSettings;
  /** Seconds between the janitor's passes; 0: no janitor in this instance. */
  janitorIntervalSeconds: number;
  /**
   * Whether a channel without its transport may fall back to the log, codes included: always
   * outside production, in production only when DELIVERY_LOG_IN_PRODUCTION=true.
   */
  deliveryLogAllowed: boolean;
  /** NODE_ENV is not production: the log transport also prints each message's subject as a plain line. */
  development: boolean;
  cookieSecure: boolean;
  /**
   * COOKIE_DOMAIN: the parent domain the session and XSRF-TOKEN cookies are set for, so a
   * frontend on a sibling host can read the token; undefined: host-only cookies.
   */
  cookieDomain: string | undefined;
  sessionCookieName: string;
  corsAllowedOrigins: string[];
  webauthn: WebAuthnSettings;
  /** Where Prometheus metrics are served; undefined: not served. */
  metrics: { port: number; host: string } | undefined;
  /**
   * METRICS_STORE_LABELS: how many stores get a `store` label value of their own (their slug) in
   * this process, the first ones seen; every further store shares `_other`. 0: all share it.
   */
  metricsStoreLabels: number;
  /** The admin listener; undefined (not started) without ADMIN_TOKENS or INTROSPECTION_TOKENS. */
  admin: AdminListenerConfig | undefined;
  /** Serve the sign-in page at `/`. */
  signInPage: boolean;
  trustProxy: boolean;
  logLevel: LogLevel;
  /**
   * SIGTERM: readiness answers 503 at once while requests are still served for `delaySeconds`,
   * so load balancers stop sending before the listener closes; all of it ends by `timeoutSeconds`.
   */
  shutdown: { delaySeconds: number; timeoutSeconds: number };
  /** Variables set that are no setting but look like a mistyped one: warned of at start, else ignored. */
  nearMisses: NearMiss[];
}

/** Every variable loadConfig reads. */
export const configurationVariables: readonly string[] = [
  'PORT',
  'HOST',
  'NODE_ENV',
  'DATA_DIR',
  'DATABASE_URL',
  'DATABASE_CA_FILE',
  'DATABASE_POOL_SIZE',
  'REDIS_URL',
  'REDIS_KEY_PREFIX',
  'REDIS_CA_FILE',
  'SEARCH_URL',
  'APP_SECRET',
  'APP_SECRET_PREVIOUS',
  'HASH_THREADS',
  'PLATFORM_NAME',
  'STORE_NAME',
  'STORE_IDENTITY_MODE',
  'STORE_VERIFICATION_REQUIRED',
  'SMTP_URL',
  'MAIL_FROM',
  'SMTP_CA_FILE',
  'SMS_WEBHOOK_URL',
  'SMS_WEBHOOK_SECRET',
  'BREACHED_PASSWORDS_URL',
  'DELIVERY_LOG_IN_PRODUCTION',
  'SMS_ALLOWED_COUNTRY_CODES',
  'DELIVERY_BUDGET_PER_HOUR',
  'DELIVERY_SMS_BUDGET_PER_COUNTRY_PER_HOUR',
  'DELIVERY_RETRY_BASE_SECONDS',
  'DELIVERY_WINDOW_SECONDS',
  'WEBHOOK_ALLOW_PRIVATE',
  'COOKIE_SECURE',
  'COOKIE_DOMAIN',
  'SESSION_COOKIE_NAME',
  'CORS_ALLOWED_ORIGINS',
  'WEBAUTHN_RP_ID',
  'WEBAUTHN_ORIGINS',
  'TRUST_PROXY',
  'SIGN_IN_PAGE',
  'METRICS_PORT',
  'METRICS_HOST',
  'METRICS_STORE_LABELS',
  'ADMIN_PORT',
  'ADMIN_HOST',
  'ADMIN_TOKENS',
  'INTROSPECTION_TOKENS',
  'LOG_LEVEL',
  'SESSION_RETENTION_DAYS',
  'CODE_RETENTION_DAYS',
  'MESSAGE_RETENTION_DAYS',
  'FAILED_MESSAGE_RETENTION_DAYS',
  'AUDIT_RETENTION_DAYS',
  'JANITOR_INTERVAL_SECONDS',
  'SHUTDOWN_DELAY_SECONDS',
  'SHUTDOWN_TIMEOUT_SECONDS',
];

/**
 * The admin listener (ADMIN_PORT, ADMIN_HOST): a port of its own, never the customer's, and the
 * bearer tokens that may call it, several per variable so one can be rotated out.
 */
export interface AdminListenerConfig {
  port: number;
  host: string;
  /** ADMIN_TOKENS: may call every admin route. */
  adminTokens: string[];
  /** INTROSPECTION_TOKENS: may call only the session introspection (and read the admin API document). */
  introspectionTokens: string[];
}

/** A variable that is no setting, and the setting it is one or two letters away from. */
export interface NearMiss {
  variable: string;
  resembles: string;
}

/**
 * Edits (insertions, deletions, substitutions, swaps of two neighbours) from `a` to `b`, counting
 * only up to `limit`: anything further is `limit + 1`. Damerau–Levenshtein, optimal string alignment.
 */
export function editDistance(a: string, b: string, limit = 2): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, before[j - 2]! + 1);
      current.push(value);
    }
    [before, previous] = [previous, current];
  }
  return Math.min(previous[b.length]!, limit + 1);
}

/** What the start says of a near miss, naming the setting it resembles. */
export function nearMissWarning({ variable, resembles }: NearMiss): string {
  const fallback =
    resembles === 'DATABASE_URL' ? ' (without DATABASE_URL the embedded PostgreSQL server in DATA_DIR is used)' : '';
  return `${variable} is not a setting of storefront-auth and is ignored: did you mean ${resembles}?${fallback}`;
}

// Shorter names are too near too much else (PORT and HOST are four letters from many a word).
const minNearMissLength = 6;

/**
 * The variables that are not settings but one or two edits from one (`DATABSE_URL`,
 * `REDIS_ULR`, `database_url`), each with the setting it resembles most. Without it the mistake
 * is silent: a mistyped DATABASE_URL starts the embedded server instead. Only names of six
 * characters or more made like ours (letters, digits, `_`) are compared, so a machine's usual
 * variables (PATH, HOME, HOSTNAME, …) pass unremarked.
 */
export function nearMissVariables(env: Env): NearMiss[] {
  const known = new Set(configurationVariables);
  const candidates = configurationVariables.filter((name) => name.length >= minNearMissLength);
  const found: NearMiss[] = [];
  for (const variable of Object.keys(env).sort()) {
    if (known.has(variable) || variable.length < minNearMissLength || !/^[A-Za-z][A-Za-z0-9_]*$/.test(variable))
      continue;
    const name = variable.toUpperCase();
    let nearest: { resembles: string; distance: number } | undefined;
    for (const candidate of candidates) {
      const distance = editDistance(name, candidate);
      if (distance <= 2 && (nearest === undefined || distance < nearest.distance))
        nearest = { resembles: candidate, distance };
    }
    if (nearest !== undefined) found.push({ variable, resembles: nearest.resembles });
  }
  return found;
}

/** The relying party passkeys are made for, and the pages allowed to use them. */
export interface WebAuthnSettings {
  /** WEBAUTHN_RP_ID: the domain passkeys are bound to (the RP ID). */
  rpId: string;
  /** Origins whose ceremonies are accepted: WEBAUTHN_ORIGINS, or the allowed CORS origins on the RP ID. */
  origins: string[];
  /**
   * WEBAUTHN_ORIGINS unset: the origin a request was addressed to is accepted too, when its host is
   * on the RP ID (see relyingParty in http/passkey-support.ts).
   */
  includeOwnOrigin: boolean;
}

/** How long dead rows are kept before the janitor deletes them, in days (fractions allowed). */
export interface RetentionSettings {
  /** Sessions, counted from their end (absolute lifetime or idle timeout). */
  sessionDays: number;
  /** Codes, counted from their end (expiry, use or replacement). */
  codeDays: number;
  /** Sent and dropped messages. */
  messageDays: number;
  /** Failed messages, kept longer so an operator can look at them and retry. */
  failedMessageDays: number;
  auditDays: number;
}

export const defaultRetention: RetentionSettings = {
  sessionDays: 1,
  codeDays: 1,
  messageDays: 7,
  failedMessageDays: 30,
  auditDays: 400,
};

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if (['true', '1', 'yes', 'on'].includes(value.toLowerCase())) return true;
  if (['false', '0', 'no', 'off'].includes(value.toLowerCase())) return false;
  throw new ConfigError(name, `expected true or false, got "${value}"`);
}

function readChoice<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if ((choices as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(name, `expected one of ${choices.join(', ')}, got "${value}"`);
}

function readUrl(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const value = read(env, name);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, 'not a valid URL');
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `expected a ${protocols.join(' or ')} URL`);
  }
  return value;
}

/**
 * A PEM CA bundle named by a variable, read once here so a missing or mistaken file stops the start
 * instead of failing every connection later. Only its certificates are kept.
 */
function readCaFile(env: Env, name: string): string | undefined {
  const file = read(env, name);
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(name, `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const certificates = text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (certificates.length === 0) throw new ConfigError(name, `${file} holds no PEM certificate`);
  certificates.forEach((pem, index) => {
    try {
      new X509Certificate(pem);
    } catch {
      throw new ConfigError(name, `certificate ${index + 1} in ${file} is not a valid X.509 certificate`);
    }
  });
  return certificates.join('\n');
}

/**
 * A number setting within its bounds. The maximum is required: a value that passes this check must
 * work everywhere it is used (a cutoff PostgreSQL can store, a timer Node keeps), so a typo stops
 * the start, naming the variable, instead of failing later at every use.
 */
function readNumber(
  env: Env,
  name: string,
  fallback: number,
  { min, max, integer = false }: { min: number; max: number; integer?: boolean },
): number {
  const text = read(env, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new ConfigError(
      name,
      `expected ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, got "${text}"`,
    );
  }
  return value;
}

/** Enough for a rotation in progress and the ones before it; more means old secrets are never dropped. */
export const maxPreviousSecrets = 5;
export const minSecretLength = 32;
/** Each thread holds 19 MiB while it hashes; past this many, hashes only wait longer for a core. */
export const maxHashThreads = 64;

function readPreviousSecrets(env: Env, name: string, current: string | undefined): string[] {
  const text = read(env, name);
  if (text === undefined) return [];
  const secrets = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (secrets.length > maxPreviousSecrets) {
    throw new ConfigError(name, `at most ${maxPreviousSecrets} comma-separated secrets, got ${secrets.length}`);
  }
  // Errors name an entry by its place, never by its value: it is a secret.
  secrets.forEach((secret, index) => {
    const which = `secret ${index + 1} of ${secrets.length}`;
    if (secret.length < minSecretLength) {
      throw new ConfigError(name, `${which} must be at least ${minSecretLength} characters, like APP_SECRET`);
    }
    if (secret === current) {
      throw new ConfigError(name, `${which} is APP_SECRET itself; list only the secrets it replaces`);
    }
  });
  return secrets;
}

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
const maxPort = 65_535;
// Each store with a label of its own adds its series to every per-store metric (a request
// histogram's buckets for each route and status among them); past this many, one scrape holds
// more than Prometheus should be asked to keep per instance.
const maxMetricsStoreLabels = 1_000;

// One event loop keeps only so many statements in flight; far more connections than this is a typo,
// and would take a PostgreSQL server's default 100 slots from every other client.
const maxDatabasePoolSize = 200;

function readCallingCodes(env: Env, name: string): string[] {
  const text = read(env, name);
  if (text === undefined) return [];
  return text.split(',').map((entry) => {
    const code = entry.trim().replace(/^\+/, '');
    if (!/^[1-9][0-9]{0,2}$/.test(code))
      throw new ConfigError(name, `"${entry.trim()}" is not a country calling code such as 44`);
    return code;
  });
}

/** localhost, 127.x.x.x or [::1]: where plain http:// is allowed (a test, a neighbour on the same machine). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

function readOrigins(env: Env, name: string): string[] {
  const value = read(env, name);
  if (value === undefined) return [];
  return value.split(',').map((entry) => {
    const trimmed = entry.trim();
    let url: URL;
    try {
      url = new URL(trimmed);
    } catch {
      throw new ConfigError(name, `"${trimmed}" is not an origin such as https://shop.example`);
    }
    if (url.origin !== trimmed.replace(/\/$/, '')) {
      throw new ConfigError(name, `"${trimmed}" is not an origin such as https://shop.example`);
    }
    return url.origin;
  });
}

/** Whether `hostname` is the RP ID or one of its subdomains: where a browser lets a page use its passkeys. */
export function isOnRpId(hostname: string, rpId: string): boolean {
  return hostname === rpId || hostname.endsWith(`.${rpId}`);
}

/** Browsers run WebAuthn in secure contexts only: https, or plain http on localhost. */
function isSecureContextOrigin(url: URL): boolean {
  return (
    url.protocol === 'https:' ||
    (url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname.endsWith('.localhost')))
  );
}

const domainNamePattern =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

function readWebAuthn(env: Env, corsOrigins: string[]): WebAuthnSettings {
  const given = read(env, 'WEBAUTHN_RP_ID');
  // An IP address cannot be an RP ID, so an allowed origin named by address gives no default.
  const fromCors = corsOrigins
    .map((origin) => new URL(origin).hostname)
    .find((host) => net.isIP(host.replace(/^\[|\]$/g, '')) === 0);
  const rpId = given ?? fromCors ?? 'localhost';
  if (given !== undefined && (!domainNamePattern.test(given) || net.isIP(given) !== 0)) {
    throw new ConfigError(
      'WEBAUTHN_RP_ID',
      `expected a lowercase domain name such as shop.example (no scheme, port or IP address), got "${given}"`,
    );
  }
  if (read(env, 'WEBAUTHN_ORIGINS') === undefined) {
    // Only the allowed origins a browser would let use passkeys of this RP ID: others (another
    // domain, plain http) could never complete a ceremony, and must not stop a start that does not use passkeys.
    const usable = corsOrigins.filter((origin) => {
      const url = new URL(origin);
      return isOnRpId(url.hostname, rpId) && isSecureContextOrigin(url);
    });
    return { rpId, origins: usable, includeOwnOrigin: true };
  }
  const origins = readOrigins(env, 'WEBAUTHN_ORIGINS');
  for (const origin of origins) {
    const url = new URL(origin);
    if (!isOnRpId(url.hostname, rpId)) {
      throw new ConfigError(
        'WEBAUTHN_ORIGINS',
        `"${origin}" is not on the RP ID ${rpId} (WEBAUTHN_RP_ID): its host must be ${rpId} or a subdomain of it`,
      );
    }
    if (!isSecureContextOrigin(url)) {
      throw new ConfigError(
        'WEBAUTHN_ORIGINS',
        `"${origin}" is plain http: browsers offer passkeys only to https origins and http://localhost`,
      );
    }
  }
  return { rpId, origins, includeOwnOrigin: false };
}

function readRedisUrl(env: Env, name: string): string | undefined {
  const value = read(env, name);
  if (value === undefined) return undefined;
  if (isRedisClusterUrl(value)) {
    try {
      parseRedisClusterUrl(value);
    } catch (error) {
      if (error instanceof RedisAddressError) throw new ConfigError(name, error.message);
      throw error;
    }
    return value;
  }
  const expected = 'expected a redis:// or rediss:// URL, or redis+cluster://host:port,host:port/ for a Redis Cluster';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `not a valid URL: ${expected}`);
  }
  if (!['redis:', 'rediss:'].includes(url.protocol)) throw new ConfigError(name, expected);
  return value;
}

function readRedisKeyPrefix(env: Env, name: string, cluster: boolean): string {
  const value = read(env, name) ?? 'storefront-auth:';
  // Ending in a separator keeps one prefix from running into another's keys ("shop" + "a:…").
  if (!/^[A-Za-z0-9._{}-][A-Za-z0-9._:{}-]{0,62}:$/.test(value)) {
    throw new ConfigError(name, `expected up to 64 letters, digits or ._-{}: ending in ":", got "${value}"`);
  }
  // Redis Cluster hashes a key by the text after its first "{": one in the prefix would put every
  // key in one slot, or void the hash tags that keep a command's keys together (counters.ts).
  if (cluster && value.includes('{')) {
    throw new ConfigError(name, `may not contain "{" with a Redis Cluster: it would decide every key's hash slot`);
  }
  return value;
}

/**
 * Redis when REDIS_URL names one. A bad REDIS_KEY_PREFIX stops the start even without it, so the
 * mistake shows before the day Redis is added.
 */
function readCounters(env: Env): CountersConfig {
  const ca = readCaFile(env, 'REDIS_CA_FILE');
  if (ca !== undefined && !/^rediss/i.test(read(env, 'REDIS_URL') ?? '')) {
    throw new ConfigError('REDIS_CA_FILE', 'is set but REDIS_URL is not a rediss:// (TLS) URL');
  }
  const url = readRedisUrl(env, 'REDIS_URL');
  const cluster = url !== undefined && isRedisClusterUrl(url);
  const keyPrefix = readRedisKeyPrefix(env, 'REDIS_KEY_PREFIX', cluster);
  if (url === undefined) return { kind: 'memory' };
  return { kind: 'redis', url, cluster, tls: /^rediss/i.test(url) ? { ca } : undefined, keyPrefix };
}

function readMail(env: Env): MailConfig {
  const url = readUrl(env, 'SMTP_URL', ['smtp:', 'smtps:']);
  // nodemailer would read options from the query (tls.rejectUnauthorized=false among them); the
  // transport takes none, so one given would be silently ignored.
  if (url !== undefined && new URL(url).search !== '') {
    throw new ConfigError(
      'SMTP_URL',
      'takes no query parameters: TLS follows the scheme (smtps:// or smtp:// with STARTTLS) and SMTP_CA_FILE',
    );
  }
  const ca = readCaFile(env, 'SMTP_CA_FILE');
  if (ca !== undefined && url === undefined) throw new ConfigError('SMTP_CA_FILE', 'is set without SMTP_URL');
  if (url === undefined) return { kind: 'none' };
  return { kind: 'smtp', url, from: read(env, 'MAIL_FROM') ?? 'Storefront <no-reply@localhost>', ca };
}

/**
 * Why a store of this identity mode cannot run on this configuration, or undefined when it can.
 * A channel without its transport writes every message, code included, to the log; production
 * allows that only when the operator asked for it.
 */
export function deliveryProblem(
  config: Pick<Config, 'mail' | 'smsWebhook' | 'deliveryLogAllowed'>,
  mode: IdentityMode,
): { variable: string; reason: string } | undefined {
  if (config.deliveryLogAllowed) return undefined;
  const variable = mode === 'email' ? 'SMTP_URL' : 'SMS_WEBHOOK_URL';
  if (mode === 'email' ? config.mail.kind === 'smtp' : config.smsWebhook !== undefined) return undefined;
  return {
    variable,
    reason: `is not set, so the ${mode} store's codes would be written to the log; in production set it, or set DELIVERY_LOG_IN_PRODUCTION=true to log them on purpose`,
  };
}

export function loadConfig(env: Env = process.env): Config {
  const port = readListenPort(env, 'PORT');
  const databaseServer = readDatabaseServer(env);
  const counters = readCounters(env);
  const mail = readMail(env);
  const appSecret = read(env, 'APP_SECRET');
  if (appSecret !== undefined && appSecret.length < minSecretLength) {
    throw new ConfigError('APP_SECRET', `must be at least ${minSecretLength} characters`);
  }
  const appSecretPrevious = readPreviousSecrets(env, 'APP_SECRET_PREVIOUS', appSecret);
  const smsWebhook = readSmsWebhook(env);
  const production = read(env, 'NODE_ENV') === 'production';
  const { cookieSecure, cookieDomain, sessionCookieName } = readSessionCookie(env, production);
  const shutdown = readShutdown(env);
  const database = readDatabase(env, databaseServer, appSecret);
  // Read in development too, so a mistyped value is found before production.
  const deliveryLogInProduction = readBoolean(env, 'DELIVERY_LOG_IN_PRODUCTION', false);
  const corsAllowedOrigins = readOrigins(env, 'CORS_ALLOWED_ORIGINS');
  const webauthn = readWebAuthn(env, corsAllowedOrigins);
  const initialStore = readInitialStore(env);
  const metrics = readMetricsAddress(env);

  return {
    port,
    host: read(env, 'HOST') ?? '127.0.0.1',
    database,
    counters,
    searchUrl: readUrl(env, 'SEARCH_URL', ['http:', 'https:']),
    appSecretPrevious,
    hashThreads: readNumber(env, 'HASH_THREADS', os.availableParallelism(), {
      min: 1,
      max: maxHashThreads,
      integer: true,
    }),
    platformName: read(env, 'PLATFORM_NAME') ?? 'Storefront',
    initialStore,
    mail,
    smsWebhook,
    smsAllowedCallingCodes: readCallingCodes(env, 'SMS_ALLOWED_COUNTRY_CODES'),
    breachedPasswordsUrl: readBreachedPasswordsUrl(env),
    delivery: readDelivery(env),
    webhooks: { httpsOnly: production, allowPrivate: readBoolean(env, 'WEBHOOK_ALLOW_PRIVATE', false) },
    retention: readRetention(env),
    janitorIntervalSeconds: readNumber(env, 'JANITOR_INTERVAL_SECONDS', 300, {
      min: 0,
      max: maxTimerSeconds,
      integer: true,
    }),
    deliveryLogAllowed: !production || deliveryLogInProduction,
    development: !production,
    cookieSecure,
    cookieDomain,
    sessionCookieName,
    corsAllowedOrigins,
    webauthn,
    signInPage: readBoolean(env, 'SIGN_IN_PAGE', true),
    metrics,
    metricsStoreLabels: readNumber(env, 'METRICS_STORE_LABELS', 100, {
      min: 0,
      max: maxMetricsStoreLabels,
      integer: true,
    }),
    admin: readAdminListener(env, port, metrics),
    trustProxy: readBoolean(env, 'TRUST_PROXY', false),
    logLevel: readChoice(
      env,
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
    ),
    shutdown,
    nearMisses: nearMissVariables(env),
  };
}

function readListenPort(env: Env, name: string): number {
  const text = read(env, name) ?? '3000';
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > maxPort) {
    throw new ConfigError(name, `expected a port number, got "${text}"`);
  }
  return port;
}

function readMetricsAddress(env: Env): Config['metrics'] {
  if (read(env, 'METRICS_PORT') === undefined) return undefined;
  return {
    port: readNumber(env, 'METRICS_PORT', 0, { min: 0, max: maxPort, integer: true }),
    host: read(env, 'METRICS_HOST') ?? '127.0.0.1',
  };
}

/**
 * A comma-separated list of bearer tokens, several so one can be rotated out. Each is a secret at
 * least as long as APP_SECRET, in the characters an `Authorization: Bearer` header carries (RFC
 * 6750's token68); errors name a token by its place, never by its value.
 */
function readTokens(env: Env, name: string): string[] {
  const text = read(env, name);
  if (text === undefined) return [];
  const tokens = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  tokens.forEach((token, index) => {
    const which = `token ${index + 1} of ${tokens.length}`;
    if (token.length < minSecretLength) {
      throw new ConfigError(name, `${which} must be at least ${minSecretLength} characters`);
    }
    if (!/^[A-Za-z0-9._~+/-]+=*$/.test(token)) {
      throw new ConfigError(name, `${which} may hold only letters, digits and -._~+/ (and = at its end)`);
    }
  });
  return tokens;
}

/**
 * The admin listener, started only when a token may call it. Its address is read even without
 * one, so a mistyped port stops the start before the day tokens are added; set without any token,
 * it is a mistake, since nothing would listen there.
 */
function readAdminListener(env: Env, servicePort: number, metrics: Config['metrics']): Config['admin'] {
  const port = readNumber(env, 'ADMIN_PORT', 3001, { min: 0, max: maxPort, integer: true });
  const host = read(env, 'ADMIN_HOST') ?? '127.0.0.1';
  const adminTokens = readTokens(env, 'ADMIN_TOKENS');
  const introspectionTokens = readTokens(env, 'INTROSPECTION_TOKENS');
  if (adminTokens.length === 0 && introspectionTokens.length === 0) {
    for (const name of ['ADMIN_PORT', 'ADMIN_HOST']) {
      if (read(env, name) !== undefined) {
        throw new ConfigError(
          name,
          'is set, but the admin listener starts only with ADMIN_TOKENS or INTROSPECTION_TOKENS',
        );
      }
    }
    return undefined;
  }
  // A token in both lists would have two roles; the narrower one would be a promise not kept.
  const both = introspectionTokens.findIndex((token) => adminTokens.includes(token));
  if (both >= 0) {
    throw new ConfigError(
      'INTROSPECTION_TOKENS',
      `token ${both + 1} is also in ADMIN_TOKENS: give each token one role`,
    );
  }
  // The admin routes are never served where shoppers reach the service (0 is a free port each).
  if (port !== 0 && port === servicePort) {
    throw new ConfigError(
      'ADMIN_PORT',
      `is the customer port (PORT=${port}): the admin listener needs a port of its own`,
    );
  }
  if (port !== 0 && port === metrics?.port) {
    throw new ConfigError('ADMIN_PORT', `is the metrics port (METRICS_PORT=${port}): choose another`);
  }
  return { port, host, adminTokens, introspectionTokens };
}

/** https://, or http:// on a loopback address (a local mirror, a test): the prefixes must not travel in clear. */
function readBreachedPasswordsUrl(env: Env): string | undefined {
  const url = readUrl(env, 'BREACHED_PASSWORDS_URL', ['https:', 'http:']);
  if (url === undefined) return undefined;
  const { protocol, hostname, search, hash } = new URL(url);
  if (protocol === 'http:' && !isLoopbackHost(hostname)) {
    throw new ConfigError('BREACHED_PASSWORDS_URL', 'plain http:// is allowed only for a loopback address');
  }
  if (search !== '' || hash !== '') {
    throw new ConfigError('BREACHED_PASSWORDS_URL', 'expected the base URL the range API is under, without ? or #');
  }
  return url;
}

/** The SMS hook and the secret that signs its requests: both or neither. */
function readSmsWebhook(env: Env): Config['smsWebhook'] {
  const url = readUrl(env, 'SMS_WEBHOOK_URL', ['https:', 'http:']);
  if (url !== undefined) {
    const { protocol, hostname } = new URL(url);
    if (protocol === 'http:' && !isLoopbackHost(hostname)) {
      throw new ConfigError('SMS_WEBHOOK_URL', 'plain http:// is allowed only for a loopback address');
    }
  }
  const secret = read(env, 'SMS_WEBHOOK_SECRET');
  if (url === undefined) return undefined;
  if (secret === undefined) throw new ConfigError('SMS_WEBHOOK_SECRET', 'is required when SMS_WEBHOOK_URL is set');
  return { url, secret };
}

function readSessionCookie(
  env: Env,
  production: boolean,
): Pick<Config, 'cookieSecure' | 'cookieDomain' | 'sessionCookieName'> {
  const cookieSecure = readBoolean(env, 'COOKIE_SECURE', production);
  const cookieDomain = readCookieDomain(env);
  // A __Host- cookie may not name a Domain, so a cookie for a parent domain is __Secure- instead.
  const securePrefix = cookieDomain === undefined ? '__Host-' : '__Secure-';
  const sessionCookieName =
    read(env, 'SESSION_COOKIE_NAME') ?? (cookieSecure ? `${securePrefix}storefront_session` : 'storefront_session');
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(sessionCookieName)) {
    throw new ConfigError('SESSION_COOKIE_NAME', 'is not a valid cookie name');
  }
  // Browsers match the prefixes whatever their case, and drop a cookie that breaks their rules.
  if (/^__(host|secure)-/i.test(sessionCookieName) && !cookieSecure) {
    throw new ConfigError('SESSION_COOKIE_NAME', 'a __Host- or __Secure- cookie needs COOKIE_SECURE=true');
  }
  if (/^__host-/i.test(sessionCookieName) && cookieDomain !== undefined) {
    throw new ConfigError(
      'SESSION_COOKIE_NAME',
      'a __Host- cookie cannot be set for COOKIE_DOMAIN; use a __Secure- name',
    );
  }
  return { cookieSecure, cookieDomain, sessionCookieName };
}

/** A host name such as shop.example (a leading dot is dropped): no scheme, port, path or wildcard. */
function readCookieDomain(env: Env): string | undefined {
  const value = read(env, 'COOKIE_DOMAIN')?.toLowerCase().replace(/^\./, '');
  if (value === undefined) return undefined;
  const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
  if (value.length > 253 || !new RegExp(`^${label}(?:\\.${label})*$`).test(value)) {
    throw new ConfigError(
      'COOKIE_DOMAIN',
      'must be a domain of at least two labels such as shop.example, without scheme, port or path',
    );
  }
  // Browsers refuse a cookie whose Domain is a single label, so every sign-in would quietly fail.
  if (!value.includes('.')) {
    throw new ConfigError(
      'COOKIE_DOMAIN',
      `must be a domain of at least two labels such as shop.example; browsers refuse a cookie Domain of a single label like ${value} (locally: COOKIE_DOMAIN=shop.localhost, the service on auth.shop.localhost)`,
    );
  }
  // A browser keeps a Domain cookie only for a name, never for an address.
  if (/^[\d.]+$/.test(value)) throw new ConfigError('COOKIE_DOMAIN', 'must be a domain name, not an IP address');
  return value;
}

function readShutdown(env: Env): Config['shutdown'] {
  const timeoutSeconds = readNumber(env, 'SHUTDOWN_TIMEOUT_SECONDS', 25, { min: 1, max: maxTimerSeconds });
  const delaySeconds = readNumber(env, 'SHUTDOWN_DELAY_SECONDS', 5, { min: 0, max: maxTimerSeconds });
  if (delaySeconds >= timeoutSeconds) {
    // The delay is part of the bounded wait; the requests still in flight after it need time too.
    throw new ConfigError('SHUTDOWN_DELAY_SECONDS', 'must be less than SHUTDOWN_TIMEOUT_SECONDS');
  }
  return { delaySeconds, timeoutSeconds };
}

function readInitialStore(env: Env): Config['initialStore'] {
  const name = read(env, 'STORE_NAME') ?? 'My Store';
  if ([...name].length > 120) throw new ConfigError('STORE_NAME', 'must be at most 120 characters');
  return {
    name,
    identityMode: readChoice(env, 'STORE_IDENTITY_MODE', ['email', 'phone'] as const, 'email'),
    verificationRequired: readBoolean(env, 'STORE_VERIFICATION_REQUIRED', false),
  };
}

function readDelivery(env: Env): Config['delivery'] {
  return {
    retryBaseSeconds: readNumber(env, 'DELIVERY_RETRY_BASE_SECONDS', deliveryDefaults.retryBaseSeconds, {
      min: 0.001,
      max: maxRetryBaseSeconds,
    }),
    windowSeconds: readNumber(env, 'DELIVERY_WINDOW_SECONDS', deliveryDefaults.windowSeconds, {
      min: 1,
      max: maxDeliveryWindowSeconds,
    }),
    budgetPerHour: readNumber(env, 'DELIVERY_BUDGET_PER_HOUR', deliveryDefaults.budgetPerHour, {
      min: 1,
      max: maxDeliveryBudgetPerHour,
      integer: true,
    }),
    smsBudgetPerCountryPerHour: readNumber(
      env,
      'DELIVERY_SMS_BUDGET_PER_COUNTRY_PER_HOUR',
      deliveryDefaults.smsBudgetPerCountryPerHour,
      { min: 0, max: maxDeliveryBudgetPerHour, integer: true },
    ),
  };
}

function readRetention(env: Env): RetentionSettings {
  const days = (name: string, fallback: number, min = 0) =>
    readNumber(env, name, fallback, { min, max: maxRetentionDays });
  return {
    sessionDays: days('SESSION_RETENTION_DAYS', defaultRetention.sessionDays),
    codeDays: days('CODE_RETENTION_DAYS', defaultRetention.codeDays),
    // The hourly delivery budget counts the last hour's sent messages in the outbox.
    messageDays: days('MESSAGE_RETENTION_DAYS', defaultRetention.messageDays, 1 / 24),
    failedMessageDays: days('FAILED_MESSAGE_RETENTION_DAYS', defaultRetention.failedMessageDays),
    auditDays: days('AUDIT_RETENTION_DAYS', defaultRetention.auditDays),
  };
}

/** DATABASE_URL with the CA that verifies it, checked together; undefined for the embedded server. */
function readDatabaseServer(env: Env): { url: string; ca: string | undefined } | undefined {
  const url = readUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  let sslMode = 'disable';
  try {
    if (url !== undefined) sslMode = sslModeOf(url);
  } catch (error) {
    throw new ConfigError('DATABASE_URL', (error as Error).message);
  }
  const ca = readCaFile(env, 'DATABASE_CA_FILE');
  if (ca !== undefined && url === undefined) {
    throw new ConfigError(
      'DATABASE_CA_FILE',
      'is set without DATABASE_URL: the embedded server is reached through its socket',
    );
  }
  // A CA bundle that nothing uses would only look like protection.
  if (ca !== undefined && sslMode === 'disable') {
    throw new ConfigError('DATABASE_CA_FILE', 'is set but DATABASE_URL asks for no TLS: add sslmode=verify-full to it');
  }
  if (sslMode === 'verify-ca' && ca === undefined) {
    // Without the host name check, any certificate a public CA signed for anyone would pass.
    throw new ConfigError('DATABASE_CA_FILE', 'is required with sslmode=verify-ca (or use sslmode=verify-full)');
  }
  return url === undefined ? undefined : { url, ca };
}

function readDatabase(
  env: Env,
  server: { url: string; ca: string | undefined } | undefined,
  appSecret: string | undefined,
): DatabaseConfig {
  const poolSize = readNumber(env, 'DATABASE_POOL_SIZE', defaultDatabasePoolSize, {
    min: 1,
    max: maxDatabasePoolSize,
    integer: true,
  });
  if (server !== undefined) {
    if (appSecret === undefined) throw new ConfigError('APP_SECRET', 'is required when DATABASE_URL is set');
    return { mode: 'server', url: server.url, appSecret, poolSize, ca: server.ca };
  }
  const dataDir = path.resolve(read(env, 'DATA_DIR') ?? './data');
  // The embedded server's socket lives in DATA_DIR, and a Unix socket path has a hard size limit.
  const { fits, bytes } = socketPathFits(dataDir);
  if (!fits)
    throw new ConfigError(
      'DATA_DIR',
      `is too long for the embedded server's socket (${bytes} bytes with its file name, at most ${maxSocketPathBytes}): choose a shorter path`,
    );
  return { mode: 'embedded', dataDir, appSecret, poolSize };
}
