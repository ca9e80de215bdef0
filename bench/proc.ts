import fs from 'node:fs';
import os from 'node:os';

/** Linux /proc readings: a child's memory, CPU time and listening ports, and how busy the host is. */

const ticksPerSecond = 100;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const read = (file: string) => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return ''; // the process ended while we looked
  }
};
/** The fields after the command name (which may hold spaces) of a /proc stat file. */
const statFields = (file: string) => {
  const stat = read(file);
  return stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
};
const processIds = () => fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));

/** Resident set size in MB (VmRSS), or NaN once the process is gone. */
export function residentMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(read(`/proc/${pid}/status`));
  return match === null ? Number.NaN : Number(match[1]) / 1024;
}

/** Every process descended from `pid` (in embedded mode: the PostgreSQL server and its backends). */
export function descendantPids(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of processIds()) {
    const parent = statFields(`/proc/${entry}/stat`)[1]!;
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (const pending = [...(children.get(pid) ?? [])]; pending.length > 0;) {
    const next = pending.pop()!;
    found.push(next);
    pending.push(...(children.get(next) ?? []));
  }
  return found;
}

/** Proportional set size in MB of every descendant: PSS shares the pages they have in common fairly. */
export function descendantsPssMb(pid: number): number {
  const kb = descendantPids(pid).map((one) => /^Pss:\s+(\d+)\s+kB/m.exec(read(`/proc/${one}/smaps_rollup`))?.[1]);
  return kb.reduce((total, value) => total + Number(value ?? 0), 0) / 1024;
}

/** utime + stime of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file; with `children`, of the reaped children too. */
function statSeconds(file: string, children = false): number {
  const fields = statFields(file);
  if (fields.length < 15) return Number.NaN;
  return (fields[11]! + fields[12]! + (children ? fields[13]! + fields[14]! : 0)) / ticksPerSecond;
}

/** User plus system CPU seconds the process has used so far (all its threads). */
export const cpuSeconds = (pid: number) => statSeconds(`/proc/${pid}/stat`);

/** The TCP ports the process listens on: the service announces them only at LOG_LEVEL=info, and runs at warn. */
export function listeningPorts(pid: number): number[] {
  let entries: string[] = [];
  try {
    entries = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {}
  const inodes = new Set<string>();
  for (const entry of entries) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${entry}`));
      if (match !== null) inodes.add(match[1]!);
    } catch {}
  }
  if (inodes.size === 0) return [];
  // columns: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
  const lines = ['tcp', 'tcp6'].flatMap((table) => read(`/proc/${pid}/net/${table}`).split('\n').slice(1));
  return lines
    .map((line) => line.trim().split(/\s+/))
    .filter((columns) => columns[3] === '0A' && columns[9] !== undefined && inodes.has(columns[9]))
    .map((columns) => parseInt(columns[1]!.split(':')[1]!, 16));
}

/**
 * Waits until the process and (`tree`) its descendants stay under `idleShare` of a core for
 * `quietWindows` 250 ms windows in a row, at most `maxMs`: work queued behind the answers is done.
 */
async function waitForQuiet(pid: number, tree: boolean, { idleShare = 0.1, quietWindows = 1, maxMs = 15_000 } = {}) {
  const started = performance.now();
  const seconds = () =>
    [pid, ...(tree ? descendantPids(pid) : [])].reduce((sum, one) => sum + (cpuSeconds(one) || 0), 0);
  for (let quiet = 0; ;) {
    const before = seconds();
    await sleep(250);
    quiet = seconds() - before > idleShare * 0.25 ? 0 : quiet + 1;
    const ms = performance.now() - started;
    if (quiet >= quietWindows || ms >= maxMs) return { ms, settled: quiet >= quietWindows };
  }
}

/** Waits until the process itself is idle for a window; returns how long that took. */
export const waitUntilIdle = async (pid: number, options: { maxMs?: number } = {}) =>
  (await waitForQuiet(pid, false, options)).ms;

/** Waits until the process and its database server are quiet for `quietWindows` windows in a row. */
export const waitUntilSettled = (pid: number, options: { quietWindows?: number; maxMs?: number } = {}) =>
  waitForQuiet(pid, true, { quietWindows: 4, maxMs: 30_000, ...options });

export interface ServiceCpu {
  /** Share of one core the main (event loop) thread used over the span. */
  mainShare: number;
  /** Cores used by the whole process (main thread, hashing threads, everything). */
  totalCores: number;
  mainMsPerAnswer: number;
}

/**
 * Starts measuring a process's CPU; the returned function takes the answers in the span. The main
 * thread's own time (its task id is the pid) tells whether the event loop, not hashing, was the limit.
 */
export function measureServiceCpu(pid: number): (answers: number) => ServiceCpu {
  const startedMs = performance.now();
  const mainPath = `/proc/${pid}/task/${pid}/stat`;
  const [mainBefore, totalBefore] = [statSeconds(mainPath), cpuSeconds(pid)];
  return (answers) => {
    const seconds = (performance.now() - startedMs) / 1000;
    const main = statSeconds(mainPath) - mainBefore;
    return {
      mainShare: main / seconds,
      totalCores: (cpuSeconds(pid) - totalBefore) / seconds,
      mainMsPerAnswer: answers > 0 ? (main * 1000) / answers : Number.NaN,
    };
  };
}

/** Busy CPU seconds of the whole host: everything but idle and iowait. */
function hostBusySeconds(): number {
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = read('/proc/stat')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq + steal) / ticksPerSecond;
}

/** CPU of a process plus its reaped children (the benchmark's finished children, a postmaster's backends). */
const treeSeconds = (pid: number | 'self') => statSeconds(`/proc/${pid}/stat`, true) || 0;

/** PostgreSQL, Redis and PgBouncer processes (anyone's: other users of the servers count here too). */
const serverCommands = new Set(['postgres', 'redis-server', 'pgbouncer']);
const serverSeconds = () =>
  processIds()
    .filter((pid) => serverCommands.has(read(`/proc/${pid}/comm`).trim()))
    .reduce((total, pid) => total + treeSeconds(Number(pid)), 0);

/** Shares of all cores over a span taken by processes other than the benchmark's, and by the servers. */
export interface HostUse {
  others: number;
  servers: number;
}

/** Starts measuring; the returned function ends it (children must have exited: a child counts once reaped). */
export function measureHost(): () => HostUse {
  const snapshot = () => ({
    atMs: performance.now(),
    busy: hostBusySeconds(),
    own: treeSeconds('self'),
    servers: serverSeconds(),
  });
  const start = snapshot();
  return () => {
    const end = snapshot();
    const capacity = ((end.atMs - start.atMs) / 1000) * os.cpus().length;
    const servers = Math.max(0, end.servers - start.servers);
    const others = Math.max(0, end.busy - start.busy - (end.own - start.own) - servers);
    return { others: others / capacity, servers: servers / capacity };
  };
}

export const loadAverageText = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');

/**
 * Waits (at most `maxMs`) until processes other than the benchmark and `ownPids` use under
 * `threshold` of the cores: on 2 cores another job would otherwise decide the figure.
 */
export async function waitForQuietHost(ownPids: number[], { maxMs = 10_000, threshold = 0.15 } = {}) {
  const started = performance.now();
  const own = () => treeSeconds('self') + ownPids.reduce((total, pid) => total + treeSeconds(pid), 0);
  for (;;) {
    const [busyBefore, ownBefore, sampled] = [hostBusySeconds(), own(), performance.now()];
    await sleep(500);
    const seconds = (performance.now() - sampled) / 1000;
    const others = Math.max(0, hostBusySeconds() - busyBefore - (own() - ownBefore)) / (seconds * os.cpus().length);
    const waitedMs = performance.now() - started;
    if (others < threshold || waitedMs >= maxMs) return { waitedMs, others, quiet: others < threshold };
  }
}
