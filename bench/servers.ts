import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { defaultHashThreads } from '../src/auth/rules/hash-pool.js';
import { sparePort } from '../test/helpers/ports.js';
import { descendantsPssMb, listeningPorts, residentMb } from './proc.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface MemoryReading {
  /** serviceMb + databaseMb */
  mb: number;
  serviceMb: number;
  databaseMb: number;
}

export interface Server {
  url: string;
  /** The service's admin listener, when it was started with one. */
  adminUrl?: string;
  pid: number;
  /** Log lines at warn or above by level, message and error, e.g. "error background work failed: …". */
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

/** A log line's level and kind: its message and error, for a JSON line; its start otherwise. */
function logKind(line: string): string {
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { type?: string; message?: string } };
    const error = entry.err === undefined ? '' : `: ${entry.err.type ?? 'Error'}: ${entry.err.message ?? ''}`;
    return `${levelNames[entry.level ?? 0] ?? 'other'} ${`${entry.msg ?? ''}${error}`.slice(0, 160)}`;
  } catch {
    return `other ${line.slice(0, 120)}`;
  }
}

/**
 * A Node.js child (a .ts one through tsx) with PORT=0; resolves once it listens on a port, and on
 * every port of `alsoOn` besides, which the answer is not.
 */
async function startChild(
  name: string,
  script: string,
  env: Record<string, string>,
  { nodeFlags = [], args = [], alsoOn = [] }: { nodeFlags?: string[]; args?: string[]; alsoOn?: number[] } = {},
): Promise<Server> {
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeFlags, ...loader, script, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4000)));
  const logKinds: Record<string, number> = {};
  const lastLogLines: string[] = [];
  // Always read stdout, so a chatty child can never block on a full pipe.
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    const kind = logKind(line);
    logKinds[kind] = (logKinds[kind] ?? 0) + 1;
    lastLogLines.push(line.slice(0, 400));
    if (lastLogLines.length > 5) lastLogLines.shift();
  });
  const pid = child.pid!;
  const started = performance.now();
  let port: number | undefined;
  while (port === undefined) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited with ${child.exitCode ?? child.signalCode} before listening: ${stderr}`);
    if (performance.now() - started > 90_000) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not listen within 90 s: ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const ports = listeningPorts(pid);
    if (alsoOn.every((other) => ports.includes(other))) port = ports.find((candidate) => !alsoOn.includes(candidate));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    pid,
    logKinds,
    lastLogLines,
    memory: () => {
      const [serviceMb, databaseMb] = [residentMb(pid), descendantsPssMb(pid)];
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
 * `storefront-auth serve`, built, as production runs it (bench/run.ts builds it first): LOG_LEVEL=warn,
 * behind a trusted proxy. With `adminPort` and `metricsPort`, those listeners too (`env` names the admin tokens).
 */
export async function startService(
  env: Record<string, string>,
  { cpuProfileDir, adminPort, metricsPort }: { cpuProfileDir?: string; adminPort?: number; metricsPort?: number } = {},
): Promise<Server> {
  const server = await startChild(
    'service',
    path.join(repoRoot, 'dist/cli/main.js'),
    {
      LOG_LEVEL: 'warn',
      TRUST_PROXY: 'true',
      ...env,
      ...(adminPort && { ADMIN_PORT: String(adminPort) }),
      ...(metricsPort && { METRICS_PORT: String(metricsPort) }),
    },
    {
      args: ['serve'],
      nodeFlags: cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`],
      alsoOn: [adminPort, metricsPort].filter((port) => port !== undefined),
    },
  );
  return adminPort === undefined ? server : { ...server, adminUrl: `http://127.0.0.1:${adminPort}` };
}

/** A port nothing listens on now, for a listener whose port must be known before it starts. */
export const freePort = sparePort;

const benchScript = (name: string) => path.join(repoRoot, 'bench', name);

/** Fastify with no plugins, answering the same JSON on the same paths. */
export const startBareFastify = () => startChild('bare fastify', benchScript('bare-fastify.ts'), {});

/** Figure 8b's yardstick: the session check's one statement on `databaseUrl`, in bare Fastify. */
export const startSessionYardstick = (databaseUrl: string, { named }: { named: boolean }) =>
  startChild('session yardstick', benchScript('session-yardstick.ts'), {
    SESSION_YARDSTICK_DATABASE_URL: databaseUrl,
    ...(!named && { SESSION_YARDSTICK_UNNAMED: '1' }),
  });

/** The HTTP login ceiling: Fastify, a cookie and the service's hashing threads, no database. */
export const startLoginCeiling = () => startChild('login ceiling', benchScript('login-ceiling.ts'), {});

/** Better Auth (bench/better-auth-peer.ts), its cookie cache off or on; resolves once it answers `GET /api/auth/ok`. */
export async function startBetterAuth(databaseUrl: string, cookieCache: boolean): Promise<Server> {
  const server = await startChild('better auth', benchScript('better-auth-peer.ts'), {
    BETTER_AUTH_DATABASE_URL: databaseUrl,
    BETTER_AUTH_COOKIE_CACHE: cookieCache ? 'on' : 'off',
    // Its argon2id runs on libuv's pool: as many threads as the service's hashing threads.
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
