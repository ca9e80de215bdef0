import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { serverAccount } from '../src/storage/embedded-postgres-folder.js';

/**
 * The servers scaled mode starts for itself: a PgBouncer in transaction mode and a Redis Cluster,
 * each on spare loopback ports in a temporary folder, so the machine's own servers are never touched.
 */

export const pgbouncerBinary = '/usr/sbin/pgbouncer';

export interface StartedServers {
  stop(): Promise<void>;
}

function sparePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Polls `ready` until it resolves true; throws when `child` exits first or after `timeoutMs`. */
async function waitFor(what: string, child: ChildProcess, ready: () => Promise<boolean>, timeoutMs = 15_000) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (!alive(child)) throw new Error(`${what} exited while starting`);
    if (await ready().catch(() => false)) return;
    if (performance.now() > deadline) throw new Error(`${what} did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function kill(child: ChildProcess): Promise<void> {
  if (!alive(child)) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

// A run that ends without stopping its servers (an error, Ctrl-C) still takes them with it.
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** A spare port can be taken between finding it and binding it: then the start is tried again. */
async function withRetries<T>(attempts: number, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
  }
}

export interface PgBouncer extends StartedServers {
  /** A database of the upstream server, through the pooler. */
  url(database: string): string;
}

/**
 * PgBouncer in transaction mode in front of `upstream`'s server (its user is the one clients log in
 * as). It refuses to run as root: then it runs as the embedded server's `postgres` account.
 */
export async function startPgBouncer(upstream: string): Promise<PgBouncer> {
  const server = new URL(upstream);
  const user = decodeURIComponent(server.username) || 'postgres';
  const socketFolder = server.searchParams.get('host');
  const host = socketFolder?.startsWith('/') ? socketFolder : server.hostname || '127.0.0.1';
  const account = await serverAccount();
  return withRetries(3, async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-bench-pgbouncer-'));
    const port = await sparePort();
    const settings = {
      listen_addr: '127.0.0.1',
      listen_port: String(port),
      unix_socket_dir: '',
      pidfile: path.join(folder, 'pgbouncer.pid'),
      // Trust still wants the user in the auth file; its password is not checked.
      auth_type: 'trust',
      auth_file: path.join(folder, 'userlist.txt'),
      admin_users: user,
      pool_mode: 'transaction',
      default_pool_size: '20',
      max_client_conn: '1000',
      log_connections: '0',
      log_disconnections: '0',
    };
    const config = path.join(folder, 'pgbouncer.ini');
    fs.writeFileSync(
      config,
      `[databases]\n* = host=${host} port=${server.port || '5432'}\n\n[pgbouncer]\n${Object.entries(settings)
        .map(([name, value]) => `${name} = ${value}`)
        .join('\n')}\n`,
      { mode: 0o600 },
    );
    fs.writeFileSync(settings.auth_file, `"${user}" ""\n`, { mode: 0o600 });
    if (account !== undefined)
      for (const entry of [folder, config, settings.auth_file]) fs.chownSync(entry, account.uid, account.gid);
    const child = track(
      spawn(pgbouncerBinary, [config], {
        ...(account === undefined ? {} : { uid: account.uid, gid: account.gid }),
        cwd: folder,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C' },
        stdio: 'ignore',
      }),
    );
    const stop = async () => {
      await kill(child);
      fs.rmSync(folder, { recursive: true, force: true });
    };
    try {
      await waitFor('PgBouncer', child, async () => {
        const admin = new pg.Client({
          connectionString: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/pgbouncer`,
        });
        admin.on('error', () => {});
        try {
          await admin.connect();
          await admin.query('SHOW VERSION');
          return true;
        } finally {
          await admin.end().catch(() => {});
        }
      });
    } catch (error) {
      await stop();
      throw error;
    }
    return {
      url: (database) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
      stop,
    };
  });
}

export interface RedisCluster extends StartedServers {
  /** `redis+cluster://127.0.0.1:p1,…/`, for REDIS_URL. */
  url: string;
  nodes: Array<{ host: string; port: number }>;
}

/** One short-lived connection to a node, for the start's own checks. */
async function onNode<T>(port: number, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

/** A Redis Cluster of `masters` masters and no replicas; nothing is persisted. */
export async function startRedisCluster(masters: number): Promise<RedisCluster> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-bench-redis-cluster-'));
  const nodes: Array<{ port: number; child: ChildProcess }> = [];
  const stop = async () => {
    await Promise.all(nodes.map(({ child }) => kill(child)));
    fs.rmSync(folder, { recursive: true, force: true });
  };
  try {
    for (let index = 0; index < masters; index += 1) {
      const node = await withRetries(5, async () => {
        const [port, busPort] = [await sparePort(), await sparePort()];
        // `--save ''` and no AOF: nothing is written but the cluster's own configuration.
        const child = track(
          spawn(
            'redis-server',
            [
              ...['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes'],
              ...['--cluster-port', String(busPort), '--cluster-config-file', path.join(folder, `nodes-${index}.conf`)],
              ...['--save', '', '--appendonly', 'no', '--dir', folder],
            ],
            { stdio: 'ignore' },
          ),
        );
        // Its own process must answer, not another server that had the port first.
        const ownAnswer = async () =>
          /^process_id:(\d+)/m.exec(await onNode(port, (redis) => redis.info('server')))?.[1] === String(child.pid);
        await waitFor(`redis-server on port ${port}`, child, ownAnswer).catch(async (error: unknown) => {
          await kill(child);
          throw error;
        });
        return { port, child };
      });
      nodes.push(node);
    }
    const addresses = nodes.map(({ port }) => `127.0.0.1:${port}`);
    await promisify(execFile)('redis-cli', [
      ...['--cluster', 'create', ...addresses],
      ...['--cluster-replicas', '0', '--cluster-yes'],
    ]);
    for (const { port, child } of nodes)
      await waitFor('the cluster', child, async () =>
        /^cluster_state:ok\r?$/m.test(String(await onNode(port, (redis) => redis.cluster('INFO')))),
      );
    return {
      url: `redis+cluster://${addresses.join(',')}/`,
      nodes: nodes.map(({ port }) => ({ host: '127.0.0.1', port })),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
