import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { sparePort } from './ports.js';

/**
 * A throwaway Redis Cluster of `redis-server` processes on spare loopback ports, in a temporary
 * folder: for the tests and the benchmark. Nothing is persisted (`--save ''`, no AOF), and the
 * machine's own Redis is never touched.
 */
export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…/`, for REDIS_URL. */
  url: string;
  nodes: Array<{ host: string; port: number }>;
  /** The index of the node that was given `slot` when the cluster was made. */
  ownerOf(slot: number): number;
  /** SIGKILLs node `index` (a master: the cluster has no replicas) and waits until it is gone. */
  killMaster(index: number): Promise<void>;
  /** Starts node `index` again on its port and configuration file; it rejoins with its slots. */
  restartNode(index: number): Promise<void>;
  /** `cluster_state` as node `index` sees it: `ok`, or `fail` once it has given up on a lost master. */
  clusterState(index: number): Promise<string>;
  /** Resolves once every running node reports `cluster_state:ok`, or throws after `timeoutMs`. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  masters?: number;
  /**
   * How long the survivors wait before marking a silent node as failed (cluster-node-timeout).
   * Short here so a test sees the whole cluster go down without waiting Redis's default 15 s.
   */
  nodeTimeoutMs?: number;
}

async function poll(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One short-lived connection to one node, for the helper's own checks. */
async function onNode<T>(port: number, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 1_000,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${output}`)),
    );
  });
}

// Every cluster this process started, so an aborted test run does not leave servers behind.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startRedisCluster({
  masters = 3,
  nodeTimeoutMs = 1_000,
}: RedisClusterOptions = {}): Promise<RedisCluster> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-redis-cluster-'));
  const nodes: Array<{ port: number; busPort: number; child: ChildProcess | undefined }> = [];

  const spawnNode = async (index: number): Promise<void> => {
    const node = nodes[index]!;
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(node.port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(node.busPort),
        '--cluster-config-file',
        path.join(folder, `nodes-${index}.conf`),
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        folder,
        '--logfile',
        path.join(folder, `node-${index}.log`),
      ],
      { stdio: 'ignore' },
    );
    running.add(child);
    child.once('exit', () => running.delete(child));
    node.child = child;
    const deadline = performance.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        const logFile = path.join(folder, `node-${index}.log`);
        const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-3) : [];
        throw new Error(`redis-server on port ${node.port} exited: ${log.join(' / ')}`);
      }
      // Its own process must answer, not another server that had the port first.
      const answering = await onNode(
        node.port,
        async (r) => /^process_id:(\d+)/m.exec(await r.info('server'))?.[1],
      ).catch(() => undefined);
      if (answering === String(child.pid)) return;
      if (performance.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`redis-server on port ${node.port} did not answer within 10 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const stopAll = async () => {
    await Promise.all(
      nodes.map(async ({ child }) => {
        if (child === undefined) return;
        child.kill('SIGKILL');
        await exited(child);
      }),
    );
  };

  try {
    for (let index = 0; index < masters; index += 1) {
      // A spare port can be taken between the check and redis-server's bind: try fresh ones then.
      for (let attempt = 1; ; attempt += 1) {
        nodes[index] = { port: await sparePort(), busPort: await sparePort(), child: undefined };
        try {
          await spawnNode(index);
          break;
        } catch (error) {
          if (attempt >= 5) throw error;
        }
      }
    }
    const addresses = nodes.map(({ port }) => `127.0.0.1:${port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes']);

    const waitUntilOk = (timeoutMs = 20_000) =>
      poll(
        'cluster_state:ok on every node',
        async () => {
          const states = await Promise.all(
            nodes
              .filter(({ child }) => child !== undefined && child.exitCode === null && child.signalCode === null)
              .map(({ port }) => onNode(port, async (r) => String(await r.cluster('INFO')))),
          );
          return states.every((info) => /^cluster_state:ok\r?$/m.test(info));
        },
        timeoutMs,
      );
    await waitUntilOk();

    // Which node serves which slots, read once the cluster agrees.
    const ranges = (await onNode(nodes[0]!.port, (r) => r.cluster('SLOTS'))) as unknown as Array<
      [number, number, [string, number]]
    >;

    return {
      url: `redis+cluster://${addresses.join(',')}/`,
      nodes: nodes.map(({ port }) => ({ host: '127.0.0.1', port })),
      ownerOf(slot) {
        const range = ranges.find(([first, last]) => first <= slot && slot <= last);
        const index = nodes.findIndex(({ port }) => port === range?.[2][1]);
        if (index === -1) throw new Error(`no node served slot ${slot}`);
        return index;
      },
      async killMaster(index) {
        const child = nodes[index]?.child;
        if (child === undefined) throw new Error(`no node ${index}`);
        child.kill('SIGKILL');
        await exited(child);
      },
      async restartNode(index) {
        await spawnNode(index);
      },
      clusterState: (index) =>
        onNode(
          nodes[index]!.port,
          async (r) => /^cluster_state:(\w+)/m.exec(String(await r.cluster('INFO')))?.[1] ?? '?',
        ),
      waitUntilOk,
      async stop() {
        await stopAll();
        fs.rmSync(folder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopAll();
    fs.rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}
