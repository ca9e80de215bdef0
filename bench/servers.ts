import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { descendantsPssMb, listeningPorts, residentMb } from './proc.js';
import { defaultHashThreads } from '../src/auth/rules/hash-pool.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The built command, as `npm start` and the package run it (bench/run.ts builds it first). */
const cliEntry = path.join(repoRoot, 'dist/cli/main.js');
const bareEntry = path.join(repoRoot, 'bench/bare-fastify.ts');

export interface MemoryReading {
  /** serviceMb + databaseMb */
  mb: number;
  serviceMb: number;
  databaseMb: number;
}

export interface Server {
  name: string;
  url: string;
  /** The service's admin listener, when it was started with one (`startService`'s `adminPort`). */
  adminUrl?: string;
  pid: number;
  child: ChildProcess;
  /** Log lines at warn or above the service wrote, by level name, and the last few of them. */
  logCounts: Record<string, number>;
  /** Lines at warn or above by level, message and error, e.g. "error background work failed: DatabaseUnavailableError …". */
  logKinds: Record<string, number>;
  lastLogLines: string[];
  /** The service's RSS, and the PSS of the processes it started (the embedded database server). */
  memory(): MemoryReading;
  /** SIGTERM, then waits for the exit (a --cpu-prof child writes its profile on the way out). */
  stop(): Promise<number | null>;
}

const levelNames: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

function spawnNode(script: string, args: string[], env: Record<string, string>, nodeFlags: string[]): ChildProcess {
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  return spawn(process.execPath, [...nodeFlags, ...loader, script, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Resolves with the port the child listens on once it does (and on every port of `alsoOn`, which
 * the answer is not); rejects when it exits first or takes too long.
 */
function whenListening(
  name: string,
  child: ChildProcess,
  stderrText: () => string,
  timeoutMs: number,
  alsoOn: readonly number[] = [],
): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const onExit = (code: number | null) => {
      clearInterval(timer);
      reject(new Error(`${name} exited with ${code} before listening: ${stderrText()}`));
    };
    child.once('exit', onExit);
    const timer = setInterval(() => {
      const ports = listeningPorts(child.pid!);
      const port = ports.find((candidate) => !alsoOn.includes(candidate));
      if (port !== undefined && alsoOn.every((other) => ports.includes(other))) {
        clearInterval(timer);
        child.off('exit', onExit);
        resolve(port);
      } else if (performance.now() - started > timeoutMs) {
        clearInterval(timer);
        child.off('exit', onExit);
        child.kill('SIGKILL');
        reject(new Error(`${name} did not listen within ${timeoutMs} ms: ${stderrText()}`));
      }
    }, 50);
  });
}

async function startChild(
  name: string,
  script: string,
  args: string[],
  env: Record<string, string>,
  nodeFlags: string[] = [],
  timeoutMs = 90_000,
  alsoOn: readonly number[] = [],
): Promise<Server> {
  const child = spawnNode(script, args, { PORT: '0', ...env }, nodeFlags);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const logCounts: Record<string, number> = {};
  const logKinds: Record<string, number> = {};
  const lastLogLines: string[] = [];
  // Always read stdout, so a chatty child can never block on a full pipe.
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    let level = 'other';
    let kind = line.slice(0, 120);
    try {
      const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { type?: string; message?: string } };
      level = levelNames[entry.level ?? 0] ?? 'other';
      const error = entry.err === undefined ? '' : `: ${entry.err.type ?? 'Error'}: ${entry.err.message ?? ''}`;
      kind = `${entry.msg ?? ''}${error}`.slice(0, 160);
    } catch {
      // not a JSON log line
    }
    logCounts[level] = (logCounts[level] ?? 0) + 1;
    logKinds[`${level} ${kind}`] = (logKinds[`${level} ${kind}`] ?? 0) + 1;
    lastLogLines.push(line.slice(0, 400));
    if (lastLogLines.length > 5) lastLogLines.shift();
  });
  const port = await whenListening(name, child, () => stderr, timeoutMs, alsoOn);
  const pid = child.pid!;
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    pid,
    child,
    logCounts,
    logKinds,
    lastLogLines,
    // The service with the database server it started (embedded mode; nothing in production).
    memory: () => {
      const serviceMb = residentMb(pid);
      const databaseMb = descendantsPssMb(pid);
      return { mb: serviceMb + databaseMb, serviceMb, databaseMb };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * `storefront-auth serve`, built, as production runs it: PORT=0, LOG_LEVEL=warn, behind a trusted
 * proxy. With `adminPort`, its admin listener there too (the environment then names its tokens).
 */
export async function startService(
  env: Record<string, string>,
  { cpuProfileDir, adminPort }: { cpuProfileDir?: string; adminPort?: number } = {},
): Promise<Server> {
  const flags = cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`];
  const admin: Record<string, string> = adminPort === undefined ? {} : { ADMIN_PORT: String(adminPort) };
  const environment = { LOG_LEVEL: 'warn', TRUST_PROXY: 'true', ...env, ...admin };
  const alsoOn = adminPort === undefined ? [] : [adminPort];
  const server = await startChild('service', cliEntry, ['serve'], environment, flags, undefined, alsoOn);
  return adminPort === undefined ? server : { ...server, adminUrl: `http://127.0.0.1:${adminPort}` };
}

/** A port nothing listens on now, for a listener whose port must be known before it starts. */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Fastify with no plugins, answering the same JSON on the same paths. */
export function startBareFastify() {
  return startChild('bare fastify', bareEntry, [], {});
}

/** Figure 8b's yardstick: the session check's one statement on `databaseUrl`, in bare Fastify. */
export function startSessionYardstick(databaseUrl: string, options: { named: boolean }) {
  return startChild('session yardstick', path.join(repoRoot, 'bench/session-yardstick.ts'), [], {
    SESSION_YARDSTICK_DATABASE_URL: databaseUrl,
    ...(options.named ? {} : { SESSION_YARDSTICK_UNNAMED: '1' }),
  });
}

/** The HTTP login ceiling: Fastify, a cookie and the service's hashing threads, no database. */
export function startLoginCeiling() {
  return startChild('login ceiling', path.join(repoRoot, 'bench/login-ceiling.ts'), [], {});
}

/**
 * Better Auth (bench/better-auth-peer.ts) on `databaseUrl`, its cookie cache off or on; resolves
 * once its tables exist and it answers `GET /api/auth/ok`.
 */
export async function startBetterAuth(databaseUrl: string, cookieCache: boolean): Promise<Server> {
  const server = await startChild('better auth', path.join(repoRoot, 'bench/better-auth-peer.ts'), [], {
    BETTER_AUTH_DATABASE_URL: databaseUrl,
    BETTER_AUTH_COOKIE_CACHE: cookieCache ? 'on' : 'off',
    // Its argon2id (@node-rs/argon2's async calls) runs on libuv's pool, 4 threads unless told:
    // as many as the service's hashing threads (HASH_THREADS by default), so neither hashes on more.
    UV_THREADPOOL_SIZE: String(defaultHashThreads()),
  });
  for (const started = performance.now(); performance.now() - started < 60_000;) {
    const answer = await fetch(`${server.url}/api/auth/ok`).catch(() => undefined);
    await answer?.arrayBuffer();
    if (answer?.status === 200) return server;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await server.stop();
  throw new Error(`Better Auth did not become ready: ${server.lastLogLines.join(' | ')}`);
}
