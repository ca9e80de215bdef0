import fs from 'node:fs';
import os from 'node:os';

/**
 * How busy the host was with work that is not the benchmark's: the figures are only as good as
 * the machine was quiet, so every figure reports the share of CPU others took meanwhile.
 */

const ticksPerSecond = 100;

function hostBusySeconds(): number {
  const [, ...fields] = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal: everything but idle and iowait is busy.
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields.map(Number);
  return (user + nice + system + irq + softirq + steal) / ticksPerSecond;
}

/** CPU of a process plus its reaped children: the benchmark, its finished children, a postmaster and its backends. */
function processTreeSeconds(statPath: string): number {
  try {
    const stat = fs.readFileSync(statPath, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / ticksPerSecond;
  } catch {
    return 0;
  }
}

function commandOf(pid: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

const serverCommands = new Set(['postgres', 'redis-server', 'pgbouncer']);

/** PostgreSQL, Redis and PgBouncer processes (anyone's: other users of the servers count here too). */
function serverSeconds(): number {
  let total = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || !serverCommands.has(commandOf(pid))) continue;
    total += processTreeSeconds(`/proc/${pid}/stat`);
  }
  return total;
}

interface Snapshot {
  atMs: number;
  busy: number;
  own: number;
  servers: number;
}

function snapshot(): Snapshot {
  return {
    atMs: performance.now(),
    busy: hostBusySeconds(),
    own: processTreeSeconds('/proc/self/stat'),
    servers: serverSeconds(),
  };
}

export interface HostUse {
  /** Shares of all cores over the span. */
  others: number;
  servers: number;
}

/**
 * Starts measuring; the returned function ends it. Children must have exited by then, since a
 * process's CPU counts for its parent only once it has been reaped.
 */
export function measureHost(): () => HostUse {
  const start = snapshot();
  return () => {
    const end = snapshot();
    const capacity = ((end.atMs - start.atMs) / 1000) * os.cpus().length;
    const servers = Math.max(0, end.servers - start.servers);
    const others = Math.max(0, end.busy - start.busy - (end.own - start.own) - servers);
    return { others: others / capacity, servers: servers / capacity };
  };
}

export function loadAverageText(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');
}

function processSeconds(pid: number): number {
  return processTreeSeconds(`/proc/${pid}/stat`);
}

/**
 * Waits (at most `maxMs`) until processes other than the benchmark and `ownPids` use under
 * `threshold` of the cores: on 2 cores another job would otherwise decide the figure.
 */
export async function waitForQuietHost(ownPids: number[], { maxMs = 10_000, threshold = 0.15 } = {}) {
  const started = performance.now();
  const cores = os.cpus().length;
  for (;;) {
    const own = () =>
      processTreeSeconds('/proc/self/stat') + ownPids.reduce((total, pid) => total + processSeconds(pid), 0);
    const busyBefore = hostBusySeconds();
    const ownBefore = own();
    const sampleStarted = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const seconds = (performance.now() - sampleStarted) / 1000;
    const others = Math.max(0, hostBusySeconds() - busyBefore - (own() - ownBefore)) / (seconds * cores);
    const waitedMs = performance.now() - started;
    if (others < threshold || waitedMs >= maxMs) return { waitedMs, others, quiet: others < threshold };
  }
}
