import { createRequire } from 'node:module';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type AbstractConnector, type ClusterOptions, type RedisOptions } from 'ioredis';
import { MemoryCounterStore, type CounterStore, type WindowCount } from './counters.js';
import { isRedisClusterUrl, parseRedisClusterUrl, type RedisClusterAddress } from './redis-address.js';

// Count and window end live in one hash, so one script call is one atomic step. The window is
// decided by the caller's clock like the memory store's; the key's TTL only collects garbage.
const incrementScript = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local amount = tonumber(ARGV[3])
local reset = tonumber(redis.call('HGET', KEYS[1], 'r'))
if reset == nil or reset <= now then
  reset = now + window
  redis.call('HSET', KEYS[1], 'c', amount, 'r', reset)
  redis.call('PEXPIRE', KEYS[1], window)
  return {amount, reset}
end
return {redis.call('HINCRBY', KEYS[1], 'c', amount), reset}
`;

export interface RedisCounterOptions {
  /** Prepended to every key, so deployments (or test runs) sharing a server never meet. */
  keyPrefix: string;
  /** PEM CA bundle that verifies a rediss:// server's certificate (REDIS_CA_FILE). */
  ca?: string | undefined;
}

/**
 * The ioredis `tls` option for a URL: none for plain redis://; for rediss:// (and rediss+cluster://,
 * for every node) a connection whose
 * certificate chain and host name are verified (never `rejectUnauthorized: false`), against `ca`
 * when given, in place of Node's public roots.
 */
export function redisTls(url: string, ca: string | undefined): ConnectionOptions | undefined {
  return /^rediss(\+cluster)?:/i.test(url) ? verifiedTls(ca) : undefined;
}

function verifiedTls(ca: string | undefined): ConnectionOptions {
  return { rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) };
}

type Connector = AbstractConnector & { connect(...args: unknown[]): ReturnType<AbstractConnector['connect']> };
const { default: StandaloneConnector } = createRequire(import.meta.url)(
  'ioredis/built/connectors/StandaloneConnector',
) as {
  default: new (options: unknown) => Connector;
};

/**
 * ioredis's own connector (what `new Redis` uses; its index does not export it), with a lasting
 * error listener on each connection. ioredis listens for a connection's errors with `once` (its
 * connector and its client, one each), so a socket that errs twice throws the second error as an
 * uncaught exception, which ends the process. A TLS socket does that when it refuses the server's
 * certificate and the server's alert is read before the socket is gone. The first error still
 * reaches ioredis, which reports it and reconnects.
 */
class SteadyConnector extends StandaloneConnector {
  override async connect(...args: unknown[]) {
    const stream = await super.connect(...args);
    stream.on('error', () => {});
    return stream;
  }
}

// Fail fast instead of queueing or retrying for long: the caller falls back to memory, and a
// request should not wait on Redis longer than half a second.
const failFast = {
  connectTimeout: 1_000,
  commandTimeout: 500,
  maxRetriesPerRequest: 1,
  Connector: SteadyConnector,
} as const;
const reconnectDelay = (attempt: number) => Math.min(attempt * 200, 2_000);

/** The options of the client for one server (`redis://`, `rediss://`). */
export function singleServerOptions(url: string, { keyPrefix, ca }: RedisCounterOptions): RedisOptions {
  const tls = redisTls(url, ca);
  return {
    ...failFast,
    keyPrefix,
    ...(tls === undefined ? {} : { tls }),
    enableOfflineQueue: false,
    retryStrategy: reconnectDelay,
    // Commands issued in the same tick share one socket write: under load every request's
    // limit check is one script call, and the writes, not Redis, were the cost.
    enableAutoPipelining: true,
  };
}

/**
 * The options of the client for a Redis Cluster, the same fail-fast choices mapped onto ioredis's
 * Cluster: everything about a node's connection (timeouts, credentials, TLS) goes in
 * `redisOptions`; reconnecting, queueing and redirections belong to the cluster client.
 */
export function clusterOptions(address: RedisClusterAddress, { keyPrefix, ca }: RedisCounterOptions): ClusterOptions {
  return {
    // ioredis hashes the prefixed key, as the cluster does: the prefix is part of every slot.
    keyPrefix,
    enableOfflineQueue: false,
    enableAutoPipelining: true,
    clusterRetryStrategy: reconnectDelay,
    // CLUSTERDOWN means a slot has no master; retrying within one request will not bring it back.
    retryDelayOnClusterDown: 0,
    // A node's connection closed: at most four retries 100 ms apart, each after re-reading the
    // topology, for a failover that has already happened. MOVED and ASK share the same budget.
    retryDelayOnFailover: 100,
    maxRedirections: 4,
    slotsRefreshTimeout: 1_000,
    // Re-read the topology now and then, so a restarted or promoted node is used without waiting
    // for an error to point at it (ioredis's default is never).
    slotsRefreshInterval: 5_000,
    redisOptions: {
      ...failFast,
      ...(address.username === undefined ? {} : { username: address.username }),
      ...(address.password === undefined ? {} : { password: address.password }),
      ...(address.tls ? { tls: verifiedTls(ca) } : {}),
    },
  };
}

/** The client REDIS_URL names: one server, or a Redis Cluster (`redis+cluster://…`). */
export function createRedisClient(url: string, options: RedisCounterOptions): Redis | Cluster {
  if (!isRedisClusterUrl(url)) return new Redis(url, singleServerOptions(url, options));
  const address = parseRedisClusterUrl(url);
  return new Cluster(address.nodes, clusterOptions(address, options));
}

/** Counters in Redis (or Valkey), one server or a cluster: shared by every instance of the deployment. */
export class RedisCounterStore implements CounterStore {
  readonly client: Redis | Cluster;

  constructor(url: string, options: RedisCounterOptions) {
    this.client = createRedisClient(url, options);
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

  // Without a connection a command is refused at once (no offline queue). The cluster client
  // would instead hold a command until its first topology read succeeds or fails, seconds later.
  private usable(): void {
    if (this.client.status !== 'ready') throw new Error(`Redis is not connected (${this.client.status})`);
  }

  async increment(key: string, windowSeconds: number, nowMs: number, amount = 1): Promise<WindowCount> {
    this.usable();
    const [count, resetAtMs] = (await (
      this.client as unknown as {
        windowIncrement(key: string, now: number, window: number, amount: number): Promise<[number, number]>;
      }
    ).windowIncrement(key, nowMs, windowSeconds * 1000, amount)) as [number, number];
    return { count: Number(count), resetAtMs: Number(resetAtMs) };
  }

  async peek(key: string, nowMs: number): Promise<WindowCount> {
    this.usable();
    const [count, reset] = await this.client.hmget(key, 'c', 'r');
    const resetAtMs = Number(reset ?? 0);
    if (count === null || resetAtMs <= nowMs) return { count: 0, resetAtMs: nowMs };
    return { count: Number(count), resetAtMs };
  }

  async delete(key: string): Promise<void> {
    this.usable();
    await this.client.del(key);
  }

  async ping(): Promise<boolean> {
    if (this.client instanceof Cluster) return servesEverySlot(this.client);
    return (await this.client.ping()) === 'PONG';
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

const slotCount = 16_384;

/**
 * Whether every one of the cluster's slots has a master that answers and sees the cluster as ok.
 * A PING goes to any one node, so it would call a cluster that lost a master, and with it a share
 * of the counters, healthy; and a node answers PING even while the cluster refuses every key.
 */
async function servesEverySlot(cluster: Cluster): Promise<boolean> {
  // Asked afresh (the client's own copy is up to 5 s old): [first, last, [host, port, id], …replicas].
  const ranges = (await cluster.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
  let covered = 0;
  const masters = new Set<string>();
  for (const [first, last, [host, port]] of ranges) {
    covered += last - first + 1;
    masters.add(`${host}:${port}`);
  }
  if (covered < slotCount) return false;
  const connections = new Map(cluster.nodes('all').map((node) => [`${node.options.host}:${node.options.port}`, node]));
  const healthy = await Promise.all(
    [...masters].map(async (address) => {
      const node = connections.get(address);
      if (node === undefined) return false;
      const info = await node.cluster('INFO').catch(() => '');
      return /^cluster_state:ok\r?$/m.test(String(info));
    }),
  );
  return healthy.every(Boolean);
}

/**
 * Redis while it answers, this instance's memory while it does not. Limits never fail open: an
 * instance cut off from Redis keeps counting on its own, bounded in memory, until Redis returns.
 */
export class FallbackCounterStore implements CounterStore {
  // After a failure the primary is left alone for a moment, so a hanging Redis costs one
  // timeout now and then instead of one per request.
  private primaryResumesAtMs = 0;

  constructor(
    private readonly primary: CounterStore,
    private readonly fallback: CounterStore = new MemoryCounterStore(),
    private readonly onFallback: (error: unknown) => void = () => {},
    private readonly pauseAfterFailureMs = 1_000,
  ) {}

  private async either<T>(work: (store: CounterStore) => Promise<T>): Promise<T> {
    if (performance.now() < this.primaryResumesAtMs) return work(this.fallback);
    try {
      return await work(this.primary);
    } catch (error) {
      this.primaryResumesAtMs = performance.now() + this.pauseAfterFailureMs;
      this.onFallback(error);
      return work(this.fallback);
    }
  }

  increment(key: string, windowSeconds: number, nowMs: number, amount?: number) {
    return this.either((store) => store.increment(key, windowSeconds, nowMs, amount));
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
