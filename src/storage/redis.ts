import type { ConnectionOptions } from 'node:tls';
import { Redis } from 'ioredis';
import { MemoryKeyValueStore, type KeyValueStore, type WindowCount } from './key-value.js';

// Count and window end live in one hash, so one script call is one atomic step. The window is
// decided by the caller's clock like the memory store's; the key's TTL only collects garbage.
const incrementScript = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local reset = tonumber(redis.call('HGET', KEYS[1], 'r'))
if reset == nil or reset <= now then
  reset = now + window
  redis.call('HSET', KEYS[1], 'c', 1, 'r', reset)
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, reset}
end
return {redis.call('HINCRBY', KEYS[1], 'c', 1), reset}
`;

export interface RedisKeyValueOptions {
  /** Prepended to every key, so deployments (or test runs) sharing a server never meet. */
  keyPrefix: string;
  /** PEM CA bundle that verifies a rediss:// server's certificate (REDIS_CA_FILE). */
  ca?: string | undefined;
}

/**
 * The ioredis `tls` option for a URL: none for plain redis://; for rediss:// a connection whose
 * certificate chain and host name are verified (never `rejectUnauthorized: false`), against `ca`
 * when given, in place of Node's public roots.
 */
export function redisTls(url: string, ca: string | undefined): ConnectionOptions | undefined {
  if (!new URL(url).protocol.startsWith('rediss')) return undefined;
  return { rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) };
}

/** Counters in Redis (or Valkey): shared by every instance of the deployment. */
export class RedisKeyValueStore implements KeyValueStore {
  readonly client: Redis;

  constructor(url: string, { keyPrefix, ca }: RedisKeyValueOptions) {
    const tls = redisTls(url, ca);
    this.client = new Redis(url, {
      keyPrefix,
      ...(tls === undefined ? {} : { tls }),
      // Fail fast while disconnected instead of queueing: the caller falls back to memory.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 1_000,
      commandTimeout: 500,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
      // Commands issued in the same tick share one socket write: under load every request's
      // limit check is one script call, and the writes, not Redis, were the cost.
      enableAutoPipelining: true,
    });
    this.client.on('error', () => {}); // reported through ping() and readiness, not as crashes
    this.client.defineCommand('windowIncrement', { numberOfKeys: 1, lua: incrementScript });
  }

  /** Waits until the first connection is up (or `timeoutMs` passes: then the caller's fallback serves). */
  async connected(timeoutMs = 2_000): Promise<boolean> {
    if (this.client.status === 'ready') return true;
    return new Promise((resolve) => {
      const done = (ready: boolean) => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(ready);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.client.once('ready', onReady);
    });
  }

  async increment(key: string, windowSeconds: number, nowMs: number): Promise<WindowCount> {
    const [count, resetAtMs] = (await (
      this.client as unknown as {
        windowIncrement(key: string, now: number, window: number): Promise<[number, number]>;
      }
    ).windowIncrement(key, nowMs, windowSeconds * 1000)) as [number, number];
    return { count: Number(count), resetAtMs: Number(resetAtMs) };
  }

  async peek(key: string, nowMs: number): Promise<WindowCount> {
    const [count, reset] = await this.client.hmget(key, 'c', 'r');
    const resetAtMs = Number(reset ?? 0);
    if (count === null || resetAtMs <= nowMs) return { count: 0, resetAtMs: nowMs };
    return { count: Number(count), resetAtMs };
  }

  async delete(key: string): Promise<void> {
    await this.client.del(key);
  }

  async ping(): Promise<boolean> {
    return (await this.client.ping()) === 'PONG';
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

/**
 * Redis while it answers, this instance's memory while it does not. Limits never fail open: an
 * instance cut off from Redis keeps counting on its own, bounded in memory, until Redis returns.
 */
export class FallbackKeyValueStore implements KeyValueStore {
  // After a failure the primary is left alone for a moment, so a hanging Redis costs one
  // timeout now and then instead of one per request.
  private primaryResumesAtMs = 0;

  constructor(
    private readonly primary: KeyValueStore,
    private readonly fallback: KeyValueStore = new MemoryKeyValueStore(),
    private readonly onFallback: (error: unknown) => void = () => {},
    private readonly pauseAfterFailureMs = 1_000,
  ) {}

  private async either<T>(work: (store: KeyValueStore) => Promise<T>): Promise<T> {
    if (performance.now() < this.primaryResumesAtMs) return work(this.fallback);
    try {
      return await work(this.primary);
    } catch (error) {
      this.primaryResumesAtMs = performance.now() + this.pauseAfterFailureMs;
      this.onFallback(error);
      return work(this.fallback);
    }
  }

  increment(key: string, windowSeconds: number, nowMs: number) {
    return this.either((store) => store.increment(key, windowSeconds, nowMs));
  }

  peek(key: string, nowMs: number) {
    return this.either((store) => store.peek(key, nowMs));
  }

  async delete(key: string) {
    await Promise.allSettled([this.primary.delete(key), this.fallback.delete(key)]);
  }

  async ping() {
    return this.primary.ping().catch(() => false);
  }

  async close() {
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }
}
