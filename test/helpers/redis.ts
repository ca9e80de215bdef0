import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/**
 * The Redis of the suites that need one in every pass: REDIS_URL, else the machine's own (`.ci/run`
 * makes sure it answers before the first pass). Each suite keeps to a key prefix of its own, never a
 * database number of its own: there are only 16 of those, and files of parallel runs would share
 * them, while a random prefix is never shared.
 */
export const testRedisUrl = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/** A fresh key prefix (`sfa-test-<label>:<random>:`), valid as REDIS_KEY_PREFIX. */
export function testKeyPrefix(label: string): string {
  return `sfa-test-${label}:${randomBytes(6).toString('hex')}:`;
}

/**
 * A client that gives up on the first failed connection, where ioredis would keep reconnecting
 * (and queueing commands) for as long as the server stays away, holding the test open.
 */
function oneShotClient(url: string): Redis & { lastError?: Error } {
  const redis: Redis & { lastError?: Error } = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 5_000,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  // The cause (ECONNREFUSED, …) comes as an event, while the command only fails with "Connection is
  // closed"; without a listener ioredis would also print it as an unhandled error event.
  redis.on('error', (error: Error) => (redis.lastError = error));
  return redis;
}

/**
 * Throws, naming the Redis, when it does not answer a PING: a suite that needs Redis fails
 * rather than skips.
 */
export async function requireRedis(url = testRedisUrl): Promise<void> {
  const redis = oneShotClient(url);
  try {
    await redis.connect();
    const answer = await redis.ping();
    if (answer !== 'PONG') throw new Error(`PING answered ${answer}`);
  } catch (error) {
    throw new Error(
      `this suite needs the Redis at ${url} (REDIS_URL, else the machine's own), which does not answer: ${String(redis.lastError ?? error)}`,
    );
  } finally {
    redis.disconnect();
  }
}

/** Deletes every key under `prefix` (a test's own), so a run leaves nothing behind. */
export async function deleteKeys(prefix: string, url = testRedisUrl): Promise<void> {
  const redis = oneShotClient(url);
  try {
    await redis.connect();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
