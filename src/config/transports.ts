// The settings that name another system (PostgreSQL, Redis, SMTP, the SMS hook, a range API) and
// the rules that tie each address to its CA file and secret.
import path from 'node:path';
import { maxSocketPathBytes, socketPathFits } from '../storage/embedded-postgres-folder.js';
import { sslModeOf } from '../storage/postgres-tls.js';
import { isRedisClusterUrl, parseRedisClusterUrl, RedisAddressError } from '../storage/redis-address.js';
import { caFile, ConfigError, isSet, list, number, text, url, type Env } from './read.js';
import type { Config, CountersConfig, DatabaseConfig, MailConfig } from './types.js';

/** localhost, 127.x.x.x or [::1]: where plain http:// is allowed (a test, a neighbour on the same machine). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** DATABASE_URL with the CA that verifies it, checked together; undefined for the embedded server. */
export function readDatabaseServer(env: Env): { url: string; ca: string | undefined } | undefined {
  const databaseUrl = url(env, 'DATABASE_URL');
  let sslMode = 'disable';
  try {
    if (databaseUrl !== undefined) sslMode = sslModeOf(databaseUrl);
  } catch (error) {
    throw new ConfigError('DATABASE_URL', (error as Error).message);
  }
  const ca = caFile(env, 'DATABASE_CA_FILE');
  if (ca !== undefined && databaseUrl === undefined) {
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
  return databaseUrl === undefined ? undefined : { url: databaseUrl, ca };
}

export function readDatabase(
  env: Env,
  server: { url: string; ca: string | undefined } | undefined,
  appSecret: string | undefined,
): DatabaseConfig {
  const poolSize = number(env, 'DATABASE_POOL_SIZE');
  if (server !== undefined) {
    if (appSecret === undefined) throw new ConfigError('APP_SECRET', 'is required when DATABASE_URL is set');
    return { mode: 'server', url: server.url, appSecret, poolSize, ca: server.ca };
  }
  const dataDir = path.resolve(text(env, 'DATA_DIR'));
  // The embedded server's socket lives in DATA_DIR, and a Unix socket path has a hard size limit.
  const { fits, bytes } = socketPathFits(dataDir);
  if (!fits)
    throw new ConfigError(
      'DATA_DIR',
      `is too long for the embedded server's socket (${bytes} bytes with its file name, at most ${maxSocketPathBytes}): choose a shorter path`,
    );
  return { mode: 'embedded', dataDir, appSecret, poolSize };
}

function readRedisUrl(env: Env): string | undefined {
  const name = 'REDIS_URL';
  const value = text(env, name);
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
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, `not a valid URL: ${expected}`);
  }
  if (!['redis:', 'rediss:'].includes(parsed.protocol)) throw new ConfigError(name, expected);
  return value;
}

function readRedisKeyPrefix(env: Env, cluster: boolean): string {
  const name = 'REDIS_KEY_PREFIX';
  const value = text(env, name);
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
export function readCounters(env: Env): CountersConfig {
  const ca = caFile(env, 'REDIS_CA_FILE');
  if (ca !== undefined && !/^rediss/i.test(text(env, 'REDIS_URL') ?? '')) {
    throw new ConfigError('REDIS_CA_FILE', 'is set but REDIS_URL is not a rediss:// (TLS) URL');
  }
  const redisUrl = readRedisUrl(env);
  const cluster = redisUrl !== undefined && isRedisClusterUrl(redisUrl);
  const keyPrefix = readRedisKeyPrefix(env, cluster);
  if (redisUrl === undefined) return { kind: 'memory' };
  return { kind: 'redis', url: redisUrl, cluster, tls: /^rediss/i.test(redisUrl) ? { ca } : undefined, keyPrefix };
}

export function readMail(env: Env): MailConfig {
  const smtpUrl = url(env, 'SMTP_URL');
  // nodemailer would read options from the query (tls.rejectUnauthorized=false among them); the
  // transport takes none, so one given would be silently ignored.
  if (smtpUrl !== undefined && new URL(smtpUrl).search !== '') {
    throw new ConfigError(
      'SMTP_URL',
      'takes no query parameters: TLS follows the scheme (smtps:// or smtp:// with STARTTLS) and SMTP_CA_FILE',
    );
  }
  const ca = caFile(env, 'SMTP_CA_FILE');
  if (ca !== undefined && smtpUrl === undefined) throw new ConfigError('SMTP_CA_FILE', 'is set without SMTP_URL');
  if (smtpUrl === undefined) return { kind: 'none' };
  return { kind: 'smtp', url: smtpUrl, from: text(env, 'MAIL_FROM'), ca };
}

/** The SMS hook and the secret that signs its requests: both or neither. */
export function readSmsWebhook(env: Env): Config['smsWebhook'] {
  const hook = url(env, 'SMS_WEBHOOK_URL');
  if (hook !== undefined) {
    const { protocol, hostname } = new URL(hook);
    if (protocol === 'http:' && !isLoopbackHost(hostname)) {
      throw new ConfigError('SMS_WEBHOOK_URL', 'plain http:// is allowed only for a loopback address');
    }
  }
  const secret = text(env, 'SMS_WEBHOOK_SECRET');
  if (hook === undefined) return undefined;
  if (secret === undefined) throw new ConfigError('SMS_WEBHOOK_SECRET', 'is required when SMS_WEBHOOK_URL is set');
  return { url: hook, secret };
}

export function readCallingCodes(env: Env): string[] {
  const name = 'SMS_ALLOWED_COUNTRY_CODES';
  const value = list(env, name);
  if (value === undefined) return [];
  return value.split(',').map((entry) => {
    const code = entry.trim().replace(/^\+/, '');
    if (!/^[1-9][0-9]{0,2}$/.test(code))
      throw new ConfigError(name, `"${entry.trim()}" is not a country calling code such as 44`);
    return code;
  });
}

/** https://, or http:// on a loopback address (a local mirror, a test): the prefixes must not travel in clear. */
export function readBreachedPasswordsUrl(env: Env): string | undefined {
  const rangeApi = url(env, 'BREACHED_PASSWORDS_URL');
  if (rangeApi === undefined) return undefined;
  const { protocol, hostname, search, hash } = new URL(rangeApi);
  if (protocol === 'http:' && !isLoopbackHost(hostname)) {
    throw new ConfigError('BREACHED_PASSWORDS_URL', 'plain http:// is allowed only for a loopback address');
  }
  if (search !== '' || hash !== '') {
    throw new ConfigError('BREACHED_PASSWORDS_URL', 'expected the base URL the range API is under, without ? or #');
  }
  return rangeApi;
}

/** The metrics listener, only when METRICS_PORT is set. */
export function readMetricsAddress(env: Env): Config['metrics'] {
  if (!isSet(env, 'METRICS_PORT')) return undefined;
  return { port: number(env, 'METRICS_PORT'), host: text(env, 'METRICS_HOST') };
}
