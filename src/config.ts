/**
 * The configuration, read once at start from the environment. Each variable is declared once in
 * config/declaration.ts (kind, default, limits, description); the generic readers in
 * config/read.ts read it from there, and the rules between variables follow here and in
 * config/transports.ts and config/web.ts.
 */
import os from 'node:os';
import { minSecretLength, settings } from './config/declaration.js';
import { choice, ConfigError, flag, listenPort, number, text, url, type Env } from './config/read.js';
import {
  isLoopbackHost,
  readBreachedPasswordsUrl,
  readCallingCodes,
  readCounters,
  readDatabase,
  readDatabaseServer,
  readMail,
  readMetricsAddress,
  readSmsWebhook,
} from './config/transports.js';
import type { Config, IdentityMode, NearMiss, RetentionSettings } from './config/types.js';
import {
  isOnRpId,
  readAdminListener,
  readOrigins,
  readPreviousSecrets,
  readSessionCookie,
  readWebAuthn,
} from './config/web.js';

export { ConfigError, isLoopbackHost, isOnRpId };
export { maxHashThreads, maxPreviousSecrets, minSecretLength } from './config/declaration.js';
export { defaultRetention, deliveryDefaults } from './config/types.js';
export type {
  AdminListenerConfig,
  Config,
  CountersConfig,
  DatabaseConfig,
  IdentityMode,
  LogLevel,
  MailConfig,
  NearMiss,
  RetentionSettings,
  WebAuthnSettings,
} from './config/types.js';

/** Every variable loadConfig reads. */
export const configurationVariables: readonly string[] = Object.keys(settings);

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
  const port = listenPort(env, 'PORT');
  const databaseServer = readDatabaseServer(env);
  const counters = readCounters(env);
  const mail = readMail(env);
  const appSecret = text(env, 'APP_SECRET');
  if (appSecret !== undefined && appSecret.length < minSecretLength) {
    throw new ConfigError('APP_SECRET', `must be at least ${minSecretLength} characters`);
  }
  const appSecretPrevious = readPreviousSecrets(env, appSecret);
  const smsWebhook = readSmsWebhook(env);
  const production = text(env, 'NODE_ENV') === 'production';
  const { cookieSecure, cookieDomain, sessionCookieName } = readSessionCookie(env, production);
  const shutdown = readShutdown(env);
  const database = readDatabase(env, databaseServer, appSecret);
  // Read in development too, so a mistyped value is found before production.
  const deliveryLogInProduction = flag(env, 'DELIVERY_LOG_IN_PRODUCTION');
  const corsAllowedOrigins = readOrigins(env, 'CORS_ALLOWED_ORIGINS');
  const webauthn = readWebAuthn(env, corsAllowedOrigins);
  const initialStore = readInitialStore(env);
  const metrics = readMetricsAddress(env);

  return {
    port,
    host: text(env, 'HOST'),
    database,
    counters,
    searchUrl: url(env, 'SEARCH_URL'),
    appSecretPrevious,
    hashThreads: number(env, 'HASH_THREADS', os.availableParallelism()),
    platformName: text(env, 'PLATFORM_NAME'),
    initialStore,
    mail,
    smsWebhook,
    smsAllowedCallingCodes: readCallingCodes(env),
    breachedPasswordsUrl: readBreachedPasswordsUrl(env),
    delivery: readDelivery(env),
    webhooks: { httpsOnly: production, allowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE') },
    retention: readRetention(env),
    janitorIntervalSeconds: number(env, 'JANITOR_INTERVAL_SECONDS'),
    deliveryLogAllowed: !production || deliveryLogInProduction,
    development: !production,
    cookieSecure,
    cookieDomain,
    sessionCookieName,
    corsAllowedOrigins,
    webauthn,
    signInPage: flag(env, 'SIGN_IN_PAGE'),
    metrics,
    metricsStoreLabels: number(env, 'METRICS_STORE_LABELS'),
    admin: readAdminListener(env, port, metrics),
    trustProxy: flag(env, 'TRUST_PROXY'),
    logLevel: choice(env, 'LOG_LEVEL'),
    shutdown,
    nearMisses: nearMissVariables(env),
  };
}

function readShutdown(env: Env): Config['shutdown'] {
  const timeoutSeconds = number(env, 'SHUTDOWN_TIMEOUT_SECONDS');
  const delaySeconds = number(env, 'SHUTDOWN_DELAY_SECONDS');
  if (delaySeconds >= timeoutSeconds) {
    // The delay is part of the bounded wait; the requests still in flight after it need time too.
    throw new ConfigError('SHUTDOWN_DELAY_SECONDS', 'must be less than SHUTDOWN_TIMEOUT_SECONDS');
  }
  return { delaySeconds, timeoutSeconds };
}

function readInitialStore(env: Env): Config['initialStore'] {
  const name = text(env, 'STORE_NAME');
  if ([...name].length > 120) throw new ConfigError('STORE_NAME', 'must be at most 120 characters');
  return {
    name,
    identityMode: choice(env, 'STORE_IDENTITY_MODE'),
    verificationRequired: flag(env, 'STORE_VERIFICATION_REQUIRED'),
  };
}

function readDelivery(env: Env): Config['delivery'] {
  return {
    retryBaseSeconds: number(env, 'DELIVERY_RETRY_BASE_SECONDS'),
    windowSeconds: number(env, 'DELIVERY_WINDOW_SECONDS'),
    budgetPerHour: number(env, 'DELIVERY_BUDGET_PER_HOUR'),
    smsBudgetPerCountryPerHour: number(env, 'DELIVERY_SMS_BUDGET_PER_COUNTRY_PER_HOUR'),
  };
}

function readRetention(env: Env): RetentionSettings {
  return {
    sessionDays: number(env, 'SESSION_RETENTION_DAYS'),
    codeDays: number(env, 'CODE_RETENTION_DAYS'),
    messageDays: number(env, 'MESSAGE_RETENTION_DAYS'),
    failedMessageDays: number(env, 'FAILED_MESSAGE_RETENTION_DAYS'),
    auditDays: number(env, 'AUDIT_RETENTION_DAYS'),
  };
}
