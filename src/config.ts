import path from 'node:path';

export type IdentityMode = 'email' | 'phone';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  searchUrl: string | undefined;
  /** Undefined means: generate one into DATA_DIR on first start (embedded mode only). */
  appSecret: string | undefined;
  platformName: string;
  initialStore: { name: string; identityMode: IdentityMode; verificationRequired: boolean };
  smtpUrl: string | undefined;
  mailFrom: string;
  smsWebhookUrl: string | undefined;
  smsWebhookSecret: string | undefined;
  /** Calling codes (without '+') a phone store accepts at registration; empty means all. */
  smsAllowedCallingCodes: string[];
  delivery: { retryBaseSeconds: number; windowSeconds: number; budgetPerHour: number };
  cookieSecure: boolean;
  sessionCookieName: string;
  corsAllowedOrigins: string[];
  /** Where Prometheus metrics are served; undefined: not served. */
  metrics: { port: number; host: string } | undefined;
  /** Serve the sign-in page at `/`. */
  signInPage: boolean;
  trustProxy: boolean;
  logLevel: LogLevel;
}

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

function readNumber(
  env: Env,
  name: string,
  fallback: number,
  { min, integer = false }: { min: number; integer?: boolean },
): number {
  const text = read(env, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new ConfigError(
      name,
      `expected ${integer ? 'a whole number' : 'a number'} of at least ${min}, got "${text}"`,
    );
  }
  return value;
}

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

function isLoopbackHost(hostname: string): boolean {
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

export function loadConfig(env: Env = process.env): Config {
  const portText = read(env, 'PORT') ?? '3000';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError('PORT', `expected a port number, got "${portText}"`);
  }

  const databaseUrl = readUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const appSecret = read(env, 'APP_SECRET');
  if (appSecret !== undefined && appSecret.length < 32) {
    throw new ConfigError('APP_SECRET', 'must be at least 32 characters');
  }
  if (databaseUrl !== undefined && appSecret === undefined) {
    throw new ConfigError('APP_SECRET', 'is required when DATABASE_URL is set');
  }

  const smsWebhookUrl = readUrl(env, 'SMS_WEBHOOK_URL', ['https:', 'http:']);
  if (smsWebhookUrl !== undefined) {
    const url = new URL(smsWebhookUrl);
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
      throw new ConfigError('SMS_WEBHOOK_URL', 'plain http:// is allowed only for a loopback address');
    }
  }
  const smsWebhookSecret = read(env, 'SMS_WEBHOOK_SECRET');
  if (smsWebhookUrl !== undefined && smsWebhookSecret === undefined) {
    throw new ConfigError('SMS_WEBHOOK_SECRET', 'is required when SMS_WEBHOOK_URL is set');
  }

  const nodeEnv = read(env, 'NODE_ENV');
  const cookieSecure = readBoolean(env, 'COOKIE_SECURE', nodeEnv === 'production');
  const sessionCookieName =
    read(env, 'SESSION_COOKIE_NAME') ?? (cookieSecure ? '__Host-storefront_session' : 'storefront_session');
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(sessionCookieName)) {
    throw new ConfigError('SESSION_COOKIE_NAME', 'is not a valid cookie name');
  }
  if (sessionCookieName.startsWith('__Host-') && !cookieSecure) {
    throw new ConfigError('SESSION_COOKIE_NAME', 'a __Host- cookie needs COOKIE_SECURE=true');
  }

  const storeName = read(env, 'STORE_NAME') ?? 'My Store';
  if ([...storeName].length > 120) throw new ConfigError('STORE_NAME', 'must be at most 120 characters');

  return {
    port,
    host: read(env, 'HOST') ?? '127.0.0.1',
    dataDir: path.resolve(read(env, 'DATA_DIR') ?? './data'),
    databaseUrl,
    redisUrl: readUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    searchUrl: readUrl(env, 'SEARCH_URL', ['http:', 'https:']),
    appSecret,
    platformName: read(env, 'PLATFORM_NAME') ?? 'Storefront',
    initialStore: {
      name: storeName,
      identityMode: readChoice(env, 'STORE_IDENTITY_MODE', ['email', 'phone'] as const, 'email'),
      verificationRequired: readBoolean(env, 'STORE_VERIFICATION_REQUIRED', false),
    },
    smtpUrl: readUrl(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: read(env, 'MAIL_FROM') ?? 'Storefront <no-reply@localhost>',
    smsWebhookUrl,
    smsWebhookSecret,
    smsAllowedCallingCodes: readCallingCodes(env, 'SMS_ALLOWED_COUNTRY_CODES'),
    delivery: {
      retryBaseSeconds: readNumber(env, 'DELIVERY_RETRY_BASE_SECONDS', 5, { min: 0.001 }),
      windowSeconds: readNumber(env, 'DELIVERY_WINDOW_SECONDS', 60 * 60, { min: 1 }),
      budgetPerHour: readNumber(env, 'DELIVERY_BUDGET_PER_HOUR', 1000, { min: 1, integer: true }),
    },
    cookieSecure,
    sessionCookieName,
    corsAllowedOrigins: readOrigins(env, 'CORS_ALLOWED_ORIGINS'),
    signInPage: readBoolean(env, 'SIGN_IN_PAGE', true),
    metrics:
      read(env, 'METRICS_PORT') === undefined
        ? undefined
        : {
            port: readNumber(env, 'METRICS_PORT', 0, { min: 0, integer: true }),
            host: read(env, 'METRICS_HOST') ?? '127.0.0.1',
          },
    trustProxy: readBoolean(env, 'TRUST_PROXY', false),
    logLevel: readChoice(
      env,
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
    ),
  };
}
