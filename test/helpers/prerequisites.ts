import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { nginxBinary } from './nginx.js';
import { pgbouncerBinary } from './pgbouncer.js';
import { repoRoot } from './service-process.js';

/**
 * What the suites need of the machine, checked by test/run.ts before it starts anything: the
 * programs some suites spawn, and the servers a run is pointed at. A missing program is installed
 * when the run may (root on Debian or Ubuntu, with apt-get, as .ci/run does, unless
 * TEST_INSTALL_PACKAGES=false); otherwise the run stops at once naming the command that installs
 * it, rather than failing suites one by one.
 *
 * - `openssl`: the TLS suites make a throwaway CA with it (helpers/tls.ts).
 * - `redis-server`: a TLS-only Redis (helpers/tls-servers.ts) and the Redis Cluster nodes
 *   (helpers/redis-cluster.ts); `redis-cli` joins the cluster. Debian's redis-server brings both.
 * - `pgbouncer`, at Debian's /usr/sbin/pgbouncer (helpers/pgbouncer.ts).
 * - `nginx`, at Debian's /usr/sbin/nginx: the forward-auth suite puts one in front of the service
 *   (helpers/nginx.ts).
 * - The machine's Redis (REDIS_URL, else 127.0.0.1:6379) for the suites that need one Redis in
 *   every pass (helpers/redis.ts); with REDIS_URL set, every suite's counters use it.
 * - With DATABASE_URL set, that PostgreSQL server; without it the run starts an embedded one.
 */

export interface Program {
  command: string;
  /** Where the suites run it from; searched on PATH when not given. */
  path?: string;
  /** The Debian (and Ubuntu) package that installs it. */
  debianPackage: string;
}

export const programs = {
  openssl: { command: 'openssl', debianPackage: 'openssl' },
  redisServer: { command: 'redis-server', debianPackage: 'redis-server' },
  redisCli: { command: 'redis-cli', debianPackage: 'redis-server' },
  pgbouncer: { command: 'pgbouncer', path: pgbouncerBinary, debianPackage: 'pgbouncer' },
  nginx: { command: 'nginx', path: nginxBinary, debianPackage: 'nginx' },
} satisfies Record<string, Program>;

/** A test helper that spawns programs or reaches a server, and the names whose use means a suite does. */
interface Need {
  helper: string;
  uses: RegExp;
  programs: Program[];
  /** The suite needs the machine's Redis (REDIS_URL, else 127.0.0.1:6379). */
  redis?: boolean;
}

const needs: Need[] = [
  { helper: 'test/helpers/tls.ts', uses: /\bmakeTestCertificates\b/, programs: [programs.openssl] },
  { helper: 'test/helpers/tls-servers.ts', uses: /\bstartTlsRedis\b/, programs: [programs.redisServer] },
  {
    helper: 'test/helpers/redis-cluster.ts',
    uses: /\bstartRedisCluster\b/,
    programs: [programs.redisServer, programs.redisCli],
  },
  { helper: 'test/helpers/pgbouncer.ts', uses: /\bstartPgBouncer\b/, programs: [programs.pgbouncer] },
  { helper: 'test/helpers/nginx.ts', uses: /\bstartNginx\b/, programs: [programs.nginx] },
  { helper: 'test/helpers/redis.ts', uses: /\b(requireRedis|testRedisUrl)\b/, programs: [], redis: true },
];

const importPattern = /^\s*(?:import|export)\s[^'";]*?['"](\.[^'"]+)['"]|\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/gm;

/**
 * The file and every module of the tests it imports, directly or not (by relative paths), but this
 * one, whose table names what it looks for.
 */
function moduleClosure(file: string): string[] {
  const seen = new Set<string>([import.meta.filename]);
  const pending = [path.resolve(repoRoot, file)];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (seen.has(next) || !fs.existsSync(next)) continue;
    seen.add(next);
    for (const match of fs.readFileSync(next, 'utf8').matchAll(importPattern)) {
      const target = path.resolve(path.dirname(next), (match[1] ?? match[2])!).replace(/\.js$/, '.ts');
      // Only the tests' own modules: the service's sources spawn none of these programs.
      if (path.relative(repoRoot, target).startsWith(`test${path.sep}`)) pending.push(target);
    }
  }
  seen.delete(import.meta.filename);
  return [...seen];
}

export interface Requirements {
  /** Each program some of the files need, with the files that need it. */
  programs: Map<Program, string[]>;
  /** The files that need the machine's Redis. */
  redis: string[];
}

/** What these test files need: the programs their helpers spawn, and whether they need the machine's Redis. */
export function requirementsOf(files: string[]): Requirements {
  const found: Requirements = { programs: new Map(), redis: [] };
  for (const file of files) {
    const modules = moduleClosure(file);
    for (const need of needs) {
      const helper = path.join(repoRoot, need.helper);
      const uses = modules.some((module) => module !== helper && need.uses.test(fs.readFileSync(module, 'utf8')));
      if (!uses) continue;
      for (const program of need.programs) found.programs.set(program, [...(found.programs.get(program) ?? []), file]);
      if (need.redis === true) found.redis.push(file);
    }
  }
  return found;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Where the program is: its fixed path, or the first executable of that name on `pathVariable`. */
export function findProgram(program: Pick<Program, 'command' | 'path'>, pathVariable: string): string | undefined {
  if (program.path !== undefined) return isExecutable(program.path) ? program.path : undefined;
  return pathVariable
    .split(path.delimiter)
    .filter((folder) => folder !== '')
    .map((folder) => path.join(folder, program.command))
    .find(isExecutable);
}

export function missingPrograms(wanted: Iterable<Program>, pathVariable: string): Program[] {
  return [...new Set(wanted)].filter((program) => findProgram(program, pathVariable) === undefined);
}

export interface Machine {
  root: boolean;
  /** Debian or a derivative (Ubuntu): /etc/debian_version exists. */
  debian: boolean;
  /** apt-get is on PATH. */
  aptGet: boolean;
}

export function thisMachine(pathVariable = process.env['PATH'] ?? ''): Machine {
  return {
    root: process.getuid?.() === 0,
    debian: fs.existsSync('/etc/debian_version'),
    aptGet: findProgram({ command: 'apt-get' }, pathVariable) !== undefined,
  };
}

export function debianPackagesOf(missing: Program[]): string[] {
  return [...new Set(missing.map((program) => program.debianPackage))];
}

/** Install the Debian packages now, or stop and tell the user the command that installs them. */
export type Plan = { install: string[] } | { stop: string };

export const installSwitch = 'TEST_INSTALL_PACKAGES';

/**
 * Whether the run may install missing packages itself: yes unless TEST_INSTALL_PACKAGES=false, for
 * a machine whose packages only its owner installs. Any other value is a message to stop with.
 */
export function installAllowed(env: NodeJS.ProcessEnv): boolean | { stop: string } {
  const value = env[installSwitch];
  if (value === undefined || value === '' || value === 'true') return true;
  if (value === 'false') return false;
  return { stop: `${installSwitch} must be true or false, not ${JSON.stringify(value)}.\n` };
}

export function planFor(missing: Program[], machine: Machine, { install = true } = {}): Plan | undefined {
  if (missing.length === 0) return undefined;
  const packages = debianPackagesOf(missing);
  if (install && machine.root && machine.debian && machine.aptGet) return { install: packages };
  const aptCommand = `${machine.root ? '' : 'sudo '}apt-get install ${packages.join(' ')}`;
  const names = missing.map((program) => program.path ?? program.command).join(', ');
  const how =
    machine.debian || machine.aptGet
      ? `Install them, then run the tests again:\n\n  ${aptCommand}\n`
      : `Install them with the system's package manager (PgBouncer at ${pgbouncerBinary}, nginx at ${nginxBinary}, Redis with redis-cli, OpenSSL), then run the tests again; on Debian or Ubuntu:\n\n  sudo apt-get install ${packages.join(' ')}\n`;
  const held = install ? '' : ` (${installSwitch}=false: the run installs nothing itself)`;
  return { stop: `The test suites need programs this machine lacks: ${names}${held}.\n${how}` };
}

// An unreachable mirror or a held package lock must not hang the run: it fails, and says so.
const commandTimeoutMs = 5 * 60_000;

/** Runs a command to its end (or its time limit), its errors shown unless `quiet`; whether it succeeded. */
function run(command: string, args: string[], { quiet = false } = {}): boolean {
  const result = spawnSync(command, args, {
    stdio: ['ignore', 'ignore', quiet ? 'ignore' : 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: commandTimeoutMs,
  });
  return result.status === 0;
}

/**
 * The packages whose install may start a service of the same name, which no test uses (each suite
 * starts its own on a spare port): PgBouncer on port 6432, nginx on port 80.
 */
const servicesStartedOnInstall = ['pgbouncer', 'nginx'];

/** apt-get install, as .ci/run does; a service the install started (servicesStartedOnInstall) is stopped. */
function installDebianPackages(packages: string[], log: (line: string) => void): void {
  log(`test/run.ts: installing ${packages.join(' ')} (apt-get) for the suites that need them`);
  if (!run('apt-get', ['update', '-qq'])) log('test/run.ts: apt-get update failed; installing from the lists at hand');
  run('apt-get', ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=60', ...packages]);
  const quiet = { quiet: true };
  for (const service of servicesStartedOnInstall.filter((name) => packages.includes(name))) {
    const script = `/etc/init.d/${service}`;
    if (fs.existsSync(script) && run(script, ['status'], quiet)) run(script, ['stop'], quiet);
    if (run('systemctl', ['is-active', '--quiet', service], quiet)) run('systemctl', ['stop', service], quiet);
  }
}

/** The URL without its password, to name in a message. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.href;
  } catch {
    return url;
  }
}

const answerTimeoutMs = 3_000;

/** The promise, or a failure once the answer has taken longer than a server that is up would. */
function withDeadline<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${answerTimeoutMs / 1000} s`)), answerTimeoutMs);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function postgresAnswers(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: answerTimeoutMs });
  client.on('error', () => {});
  try {
    await withDeadline(client.connect().then(() => client.query('SELECT 1')));
    return undefined;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    void client.end().catch(() => {});
  }
}

async function redisAnswers(url: string): Promise<string | undefined> {
  let lastError: Error | undefined;
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: answerTimeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  redis.on('error', (error: Error) => (lastError = error));
  try {
    await withDeadline(redis.connect().then(() => redis.ping()));
    return undefined;
  } catch (error) {
    return (lastError ?? (error as Error)).message || String(error);
  } finally {
    redis.disconnect();
  }
}

/** Why the servers this run is pointed at cannot serve it, one line each; empty when they answer. */
export async function serverProblems(env: NodeJS.ProcessEnv, redisNeededBy: string[]): Promise<string[]> {
  const checks: Array<Promise<string | undefined>> = [];
  const databaseUrl = env['DATABASE_URL'];
  if (databaseUrl !== undefined) {
    checks.push(
      postgresAnswers(databaseUrl).then((failure) =>
        failure === undefined
          ? undefined
          : `DATABASE_URL=${shown(databaseUrl)} does not answer (${failure}): start that PostgreSQL server, or unset DATABASE_URL to run on an embedded server of the run's own`,
      ),
    );
  }
  const redisUrl = env['REDIS_URL'];
  // With REDIS_URL every suite counts in it; without, the suites that need one use the machine's.
  const needsRedis = redisUrl !== undefined || redisNeededBy.length > 0;
  const url = redisUrl ?? 'redis://127.0.0.1:6379';
  // A cluster URL is the cluster suites' business; only a single server is checked here.
  if (needsRedis && /^rediss?:\/\//i.test(url)) {
    const who =
      redisUrl !== undefined
        ? `REDIS_URL=${shown(url)}`
        : `the machine's Redis at ${url} (needed by ${redisNeededBy.join(', ')}; set REDIS_URL for another)`;
    checks.push(
      redisAnswers(url).then((failure) =>
        failure === undefined
          ? undefined
          : `${who} does not answer (${failure}): start it (on Debian: sudo systemctl start redis-server)`,
      ),
    );
  }
  return (await Promise.all(checks)).filter((problem): problem is string => problem !== undefined);
}

export interface PrerequisiteOptions {
  env?: NodeJS.ProcessEnv;
  machine?: Machine;
  log?: (line: string) => void;
}

/**
 * Makes sure the machine can run these test files: installs missing programs when it may, then
 * checks the servers. Undefined when all is there; otherwise the message to stop with.
 */
export async function prepareMachine(files: string[], options: PrerequisiteOptions = {}): Promise<string | undefined> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const pathVariable = env['PATH'] ?? '';
  const install = installAllowed(env);
  if (typeof install === 'object') return install.stop;
  const required = requirementsOf(files);
  let missing = missingPrograms(required.programs.keys(), pathVariable);
  const plan = planFor(missing, options.machine ?? thisMachine(pathVariable), { install });
  if (plan !== undefined && 'install' in plan) {
    installDebianPackages(plan.install, log);
    missing = missingPrograms(missing, pathVariable);
    if (missing.length > 0) {
      const names = missing.map((program) => program.path ?? program.command).join(', ');
      return `apt-get did not install ${names} (see its errors above). Install ${debianPackagesOf(missing).join(' ')} by hand, then run the tests again:\n\n  apt-get install ${debianPackagesOf(missing).join(' ')}\n`;
    }
  } else if (plan !== undefined) {
    const users = missing.map(
      (program) => `  ${program.path ?? program.command}: ${required.programs.get(program)!.join(', ')}`,
    );
    return `${plan.stop}\nWho needs them:\n${users.join('\n')}\n`;
  }
  const problems = await serverProblems(env, required.redis);
  if (problems.length > 0)
    return `The servers this run needs do not answer:\n${problems.map((p) => `  ${p}`).join('\n')}\n`;
  return undefined;
}
