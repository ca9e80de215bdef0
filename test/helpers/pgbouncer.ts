import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { serverAccount } from '../../src/storage/embedded-postgres-folder.js';
import { sparePort } from './ports.js';

/**
 * A PgBouncer of its own in front of a PostgreSQL server, in transaction mode, for tests and the
 * benchmark: Debian's `pgbouncer` binary with a configuration in a temporary folder, on a spare
 * loopback port, removed with its folder by stop().
 */

export const pgbouncerBinary = '/usr/sbin/pgbouncer';

/** Set by `npm run test:pgbouncer` for the test files: its PgBouncer's admin console. */
export const testPoolerAdminVariable = 'STOREFRONT_TEST_PGBOUNCER_ADMIN_URL';
const readyTimeoutMs = 15_000;
const stopTimeoutMs = 10_000;
const pollIntervalMs = 25;

/**
 * What docs/guides/encryption-redis-and-pgbouncer.md ("Behind a connection pooler") asks of a
 * production PgBouncer so that a PostgreSQL gone behind it is answered 503 within two seconds, as
 * without a pooler: a client waits at most a second for a server connection, a server connection
 * attempt gives up after a second and is retried a second later.
 * PgBouncer's defaults (120 s, 15 s, 15 s) hold each call for the service's whole 12 s query timeout.
 */
export const failFastSettings: Readonly<Record<string, string>> = {
  query_wait_timeout: '1',
  server_connect_timeout: '1',
  server_login_retry: '1',
};

export interface PgBouncerOptions {
  /**
   * Any database URL of the server behind it: TCP host and port, or a socket folder in `?host=`
   * (the embedded test server). Its user is the one clients log in as.
   */
  upstream: string;
  /** Server connections per database and user (default_pool_size). */
  poolSize?: number;
  /** More [pgbouncer] settings, replacing the ones made here. */
  settings?: Record<string, string>;
}

export interface PgBouncer {
  port: number;
  /** A database of the server behind, through the pooler. */
  url(database: string): string;
  /** The admin console (SHOW POOLS, SHOW CLIENTS, KILL db …). */
  adminUrl: string;
  /** Runs one admin console command and returns its rows. */
  admin<Row = Record<string, unknown>>(command: string): Promise<Row[]>;
  stop(): Promise<void>;
}

/** `* = host=… port=…`: every database name the clients ask for, on the upstream server. */
function upstreamEntry(upstream: URL): string {
  const socketFolder = upstream.searchParams.get('host');
  const host = socketFolder !== null && socketFolder.startsWith('/') ? socketFolder : upstream.hostname || '127.0.0.1';
  if (/[\s']/.test(host)) throw new Error(`the upstream host ${host} holds a space or quote`);
  return `* = host=${host} port=${upstream.port || '5432'}`;
}

function configuration(folder: string, port: number, user: string, options: PgBouncerOptions): string {
  const settings: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    // No Unix socket: nothing to clash with the packaged PgBouncer's or a server's socket.
    unix_socket_dir: '',
    pidfile: path.join(folder, 'pgbouncer.pid'),
    // Trust still wants the user in the auth file; the password there is not checked.
    auth_type: 'trust',
    auth_file: path.join(folder, 'userlist.txt'),
    admin_users: user,
    stats_users: user,
    pool_mode: 'transaction',
    default_pool_size: String(options.poolSize ?? 20),
    max_client_conn: '1000',
    // Test databases come and go: server connections to one are not kept long after its last use.
    server_idle_timeout: '30',
    log_connections: '0',
    log_disconnections: '0',
    ...options.settings,
  };
  return [
    '[databases]',
    upstreamEntry(new URL(options.upstream)),
    '',
    '[pgbouncer]',
    ...Object.entries(settings).map(([name, value]) => `${name} = ${value}`),
    '',
  ].join('\n');
}

function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Runs one command on a PgBouncer admin console and returns its rows. */
export async function pgbouncerAdmin<Row = Record<string, unknown>>(adminUrl: string, command: string): Promise<Row[]> {
  // The console speaks the simple protocol only: a query without parameters uses it.
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query(command)).rows as Row[];
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Starts PgBouncer in transaction mode in front of `upstream` and resolves once its admin console
 * answers. PgBouncer refuses to run as root: as root it runs as the `postgres` account (made when
 * missing, as for the embedded server), which owns the temporary folder.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  if (!fs.existsSync(pgbouncerBinary)) {
    throw new Error(`PgBouncer is not installed (${pgbouncerBinary} is missing): apt-get install pgbouncer`);
  }
  const user = decodeURIComponent(new URL(options.upstream).username) || 'postgres';
  const account = await serverAccount();
  let lastError: Error | undefined;
  // A spare port can be taken between finding it and PgBouncer binding it: then try another.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-pgbouncer-'));
    try {
      return await startIn(folder, user, account, options);
    } catch (error) {
      fs.rmSync(folder, { recursive: true, force: true });
      lastError = error as Error;
      if (!/Address already in use/i.test(lastError.message)) throw lastError;
    }
  }
  throw lastError!;
}

async function startIn(
  folder: string,
  user: string,
  account: Awaited<ReturnType<typeof serverAccount>>,
  options: PgBouncerOptions,
): Promise<PgBouncer> {
  const port = await sparePort();
  const configPath = path.join(folder, 'pgbouncer.ini');
  fs.writeFileSync(configPath, configuration(folder, port, user, options), { mode: 0o600 });
  fs.writeFileSync(path.join(folder, 'userlist.txt'), `"${user}" ""\n`, { mode: 0o600 });
  if (account !== undefined) {
    for (const entry of [folder, configPath, path.join(folder, 'userlist.txt')])
      fs.chownSync(entry, account.uid, account.gid);
  }
  const child = spawn(pgbouncerBinary, [configPath], {
    ...(account === undefined ? {} : { uid: account.uid, gid: account.gid }),
    cwd: folder,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnFailed = new Promise<never>((_, reject) => child.once('error', reject));
  // A test process that ends without stop() still takes its PgBouncer with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const adminUrl = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/pgbouncer`;
  const stop = async () => {
    process.off('exit', killOnExit);
    // SIGTERM is an immediate shutdown up to PgBouncer 1.22 (from 1.23 it waits for clients to
    // leave); a PgBouncer still there at the deadline is killed.
    if (isAlive(child)) child.kill('SIGTERM');
    const deadline = performance.now() + stopTimeoutMs;
    while (isAlive(child) && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
    if (isAlive(child)) child.kill('SIGKILL');
    await exited;
    fs.rmSync(folder, { recursive: true, force: true });
  };

  try {
    const ready = (async () => {
      const deadline = performance.now() + readyTimeoutMs;
      for (;;) {
        if (!isAlive(child)) throw new Error(`PgBouncer exited while starting: ${output.trim()}`);
        try {
          await pgbouncerAdmin(adminUrl, 'SHOW VERSION');
          return;
        } catch (error) {
          if (performance.now() > deadline) {
            throw new Error(`PgBouncer did not answer within ${readyTimeoutMs} ms: ${output.trim()}`, {
              cause: error,
            });
          }
        }
        await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
      }
    })();
    await Promise.race([ready, spawnFailed]);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    port,
    url(database: string) {
      return `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
    },
    adminUrl,
    admin: <Row>(command: string) => pgbouncerAdmin<Row>(adminUrl, command),
    stop,
  };
}

/**
 * Backends on `database` that PgBouncer did not open: each one is a connection that bypassed the
 * pooler. Read from the server through `directUrl` (a connection of its own, left out) and compared
 * with the pooler's server connections; a connection that opens or closes between the reads counts
 * only when both reads of pg_stat_activity saw it.
 */
export async function backendsBypassing(adminUrl: string, directUrl: string, database: string) {
  const client = new pg.Client({ connectionString: directUrl });
  await client.connect();
  try {
    const backends = async () =>
      (
        await client.query<{ pid: number; application_name: string }>(
          'SELECT pid, application_name FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [database],
        )
      ).rows;
    const before = await backends();
    const pooled = new Set(
      (await pgbouncerAdmin<{ database: string; remote_pid: string }>(adminUrl, 'SHOW SERVERS'))
        .filter((server) => server.database === database)
        .map((server) => Number(server.remote_pid)),
    );
    const after = new Set((await backends()).map((backend) => backend.pid));
    const seen = before.filter((backend) => after.has(backend.pid));
    return { seen, bypassing: seen.filter((backend) => !pooled.has(backend.pid)) };
  } finally {
    await client.end();
  }
}
