import type { FastifyBaseLogger } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config, LogLevel } from './config.js';
import { sharedHashPool } from './auth/rules/hash-pool.js';
import { createArgon2Hasher, productionArgon2, type PasswordHasher } from './auth/rules/password.js';
import type { Transports } from './delivery/message.js';
import { createLogTransport } from './delivery/transports/log.js';
import { createSmsWebhookTransport } from './delivery/transports/sms-webhook.js';
import { createSmtpTransport } from './delivery/transports/smtp.js';
import { createUnconfiguredTransport } from './delivery/transports/unconfigured.js';
import { MemoryCounterStore, type CounterStore } from './storage/counters.js';
import { certificateFailure } from './tls.js';

/** The parts of the service the configuration chooses: the logger, the transports, the hasher, the counters. */

/**
 * The one way a logger is made: by the service, the command line and the tests alike, so every line
 * has the same shape. Standard output unless told: the command line logs to standard error, beside
 * the JSON answer it prints, and a test hands in a stream it reads.
 */
export function createLogger({
  level,
  destination = 'stdout',
}: {
  level: LogLevel;
  destination?: 'stdout' | 'stderr' | DestinationStream;
}): Logger {
  const options = { level, base: { service: 'storefront-auth' } };
  if (destination === 'stdout') return pino(options);
  return pino(options, destination === 'stderr' ? pino.destination(2) : destination);
}

export function configuredTransports(config: Config, logger: FastifyBaseLogger): Transports {
  // Where the log may not stand in, a missing transport refuses to send: a store switched to the
  // other channel behind this instance's back gets retries and failures, never codes in the log.
  // In development the code is also a plain line on stderr, where a person at the terminal spots it
  // among the JSON lines on stdout; in production the JSON line alone goes to the log collector.
  const highlight = config.development ? (line: string) => void process.stderr.write(line) : undefined;
  const fallback = (variable: string) =>
    config.deliveryLogAllowed ? createLogTransport(logger, highlight) : createUnconfiguredTransport(variable);
  return {
    email:
      config.mail.kind === 'smtp'
        ? createSmtpTransport(config.mail.url, config.mail.from, { ca: config.mail.ca })
        : fallback('SMTP_URL'),
    sms:
      config.smsWebhook === undefined
        ? fallback('SMS_WEBHOOK_URL')
        : createSmsWebhookTransport(config.smsWebhook.url, config.smsWebhook.secret),
  };
}

/** argon2id with the production parameters on HASH_THREADS threads, that many hashes at a time. */
export function configuredHasher(config: Pick<Config, 'hashThreads'>): PasswordHasher {
  return createArgon2Hasher(productionArgon2, {
    concurrency: config.hashThreads,
    pool: sharedHashPool(config.hashThreads),
  });
}

/** Redis when configured, with this instance's memory standing in while Redis is unreachable. */
export async function configuredCounterStore(
  config: Pick<Config, 'counters'>,
  logger: FastifyBaseLogger,
): Promise<CounterStore> {
  const { counters } = config;
  if (counters.kind === 'memory') return new MemoryCounterStore();
  // Loaded only here: ioredis is 0.1–0.25 s of a start that would not use it.
  const { FallbackCounterStore, RedisCounterStore } = await import('./storage/redis.js');
  const redis = new RedisCounterStore(counters.url, { keyPrefix: counters.keyPrefix, ca: counters.tls?.ca });
  // The client retries by itself and its errors are otherwise swallowed; the start says why it failed.
  let connectError: unknown;
  const recordError = (error: unknown) => (connectError = error);
  redis.client.on('error', recordError);
  const connected = await redis.connected();
  redis.client.off('error', recordError);
  if (!connected) {
    const refused = certificateFailure(connectError);
    logger.warn(
      { err: connectError },
      refused === undefined
        ? 'Redis not reachable at start: counting in this instance until it is'
        : `Redis not reachable at start: its TLS ${refused} (check REDIS_CA_FILE and the host name in REDIS_URL); counting in this instance until it is`,
    );
  }
  let lastWarningMs = -Infinity;
  return new FallbackCounterStore(redis, new MemoryCounterStore(), (error) => {
    const nowMs = performance.now();
    if (nowMs - lastWarningMs < 10_000) return;
    lastWarningMs = nowMs;
    logger.warn({ err: error }, 'Redis unreachable: rate limits are counted in this instance until it returns');
  });
}
