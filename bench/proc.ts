import fs from 'node:fs';

/** Linux /proc readings of a child process: memory, CPU time, its listening TCP port. */

/** Resident set size in MB (VmRSS), or NaN once the process is gone. */
export function residentMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match === null ? Number.NaN : Number(match[1]) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** Every process descended from `pid` (in embedded mode: the PostgreSQL server and its backends). */
export function descendantPids(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // the process ended while we looked
    }
  }
  const found: number[] = [];
  const pending = [...(children.get(pid) ?? [])];
  while (pending.length > 0) {
    const next = pending.pop()!;
    found.push(next);
    pending.push(...(children.get(next) ?? []));
  }
  return found;
}

/**
 * Proportional set size in MB of every descendant of `pid`. PSS shares the pages they have in
 * common (PostgreSQL's shared buffers, its binary) fairly, so the sum is what they really take.
 */
export function descendantsPssMb(pid: number): number {
  let kb = 0;
  for (const descendant of descendantPids(pid)) {
    try {
      const match = /^Pss:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${descendant}/smaps_rollup`, 'utf8'));
      if (match !== null) kb += Number(match[1]);
    } catch {
      // the process ended while we looked
    }
  }
  return kb / 1024;
}

const clockTicksPerSecond = 100;

/** User plus system CPU seconds the process has used so far (all its threads). */
export function cpuSeconds(pid: number): number {
  return threadSeconds(`/proc/${pid}/stat`);
}

function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  let entries: string[];
  try {
    entries = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const entry of entries) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${entry}`));
      if (match !== null) inodes.add(match[1]!);
    } catch {
      // the descriptor closed while we looked
    }
  }
  return inodes;
}

/**
 * The TCP ports the process listens on (the service's customer and admin listeners), none while it
 * does not. Read from /proc because the service announces its addresses only at LOG_LEVEL=info and
 * the benchmark runs it at warn.
 */
export function listeningPorts(pid: number): number[] {
  const inodes = socketInodes(pid);
  const ports: number[] = [];
  if (inodes.size === 0) return ports;
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const columns = line.trim().split(/\s+/);
      // columns: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (columns[3] !== '0A' || columns[9] === undefined || !inodes.has(columns[9])) continue;
      ports.push(parseInt(columns[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/**
 * Waits until the process has used under `idleShare` of one core over a 250 ms window (work it
 * queued behind its answers is done), at most `maxMs`. Returns how long that took.
 */
export async function waitUntilIdle(pid: number, { idleShare = 0.1, maxMs = 15_000 } = {}): Promise<number> {
  const started = performance.now();
  const windowMs = 250;
  for (;;) {
    const before = cpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const used = cpuSeconds(pid) - before;
    const elapsed = performance.now() - started;
    if (!(used > (idleShare * windowMs) / 1000) || elapsed >= maxMs) return elapsed;
  }
}

/**
 * Waits until the process and its descendants (the embedded database server) stay under `idleShare`
 * of a core for `quietWindows` windows in a row, so work queued behind the answers is done in both.
 */
export async function waitUntilSettled(
  pid: number,
  { idleShare = 0.1, quietWindows = 4, maxMs = 30_000 } = {},
): Promise<{ ms: number; settled: boolean }> {
  const started = performance.now();
  const windowMs = 250;
  const treeSeconds = () => [pid, ...descendantPids(pid)].reduce((total, one) => total + (cpuSeconds(one) || 0), 0);
  let quiet = 0;
  for (;;) {
    const before = treeSeconds();
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const used = treeSeconds() - before;
    quiet = used > (idleShare * windowMs) / 1000 ? 0 : quiet + 1;
    const ms = performance.now() - started;
    if (quiet >= quietWindows) return { ms, settled: true };
    if (ms >= maxMs) return { ms, settled: false };
  }
}

export interface ServiceCpu {
  /** Share of one core the main (event loop) thread used over the span. */
  mainShare: number;
  /** Cores used by the whole process (main thread, hashing threads, everything). */
  totalCores: number;
  /** Main-thread CPU milliseconds per answer. */
  mainMsPerAnswer: number;
}

/**
 * Starts measuring a process's CPU; the returned function takes the number of answers in the
 * span and ends it. The main thread's own time (its task id is the pid) says whether the event
 * loop, rather than the hashing threads, was the limit.
 */
export function measureServiceCpu(pid: number): (answers: number) => ServiceCpu {
  const startedMs = performance.now();
  const mainPath = `/proc/${pid}/task/${pid}/stat`;
  const mainBefore = threadSeconds(mainPath);
  const totalBefore = cpuSeconds(pid);
  return (answers) => {
    const seconds = (performance.now() - startedMs) / 1000;
    const main = threadSeconds(mainPath) - mainBefore;
    return {
      mainShare: main / seconds,
      totalCores: (cpuSeconds(pid) - totalBefore) / seconds,
      mainMsPerAnswer: answers > 0 ? (main * 1000) / answers : Number.NaN,
    };
  };
}

/** utime + stime of /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat. */
function threadSeconds(statPath: string): number {
  try {
    const stat = fs.readFileSync(statPath, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
  } catch {
    return Number.NaN;
  }
}
