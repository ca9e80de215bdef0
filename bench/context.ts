import type { Backend, Mode } from './backends.js';
import { waitForQuietHost, type HostUse } from './host.js';
import type { Operations } from './operations.js';
import { measureServiceCpu, waitUntilIdle, waitUntilSettled, type ServiceCpu } from './proc.js';
import { startService, type MemoryReading, type Server } from './servers.js';

export interface Goal {
  text: string;
  met: boolean;
}

/** One line of the results table. */
export interface Row {
  id: string;
  label: string;
  unit: string;
  value: number;
  baseline?: number;
  baselineLabel?: string;
  ratio?: number;
  goal: Goal;
  /** Answers that were not 2xx, and connection errors or timeouts, over every measured round. */
  non2xx: number;
  errors: number;
  /** The per-round values, for the details. */
  rounds: string;
  notes: string[];
  /** The service's main-thread CPU per answer (ms, median of the rounds), where the figure reads it. */
  mainMs?: number;
}

// Expected in a benchmark that registers more customers than the default hourly send budget.
const expectedLogPattern = /hourly message budget spent/;

/**
 * A figure whose service logged errors (other than the expected budget notice) does not meet its
 * goal, whatever its numbers: the answers may have been fine while the work behind them failed.
 */
export function applyServiceErrors(rows: Row[], kinds: Record<string, number>): void {
  const errors = Object.entries(kinds).filter(
    ([kind]) => /^(error|fatal) /.test(kind) && !expectedLogPattern.test(kind),
  );
  if (errors.length === 0) return;
  const text = errors.map(([kind, count]) => `${count}× ${kind}`).join('; ');
  for (const row of rows) {
    row.goal = { ...row.goal, met: false };
    row.notes.push(`SERVICE ERRORS: ${text}`);
  }
}

/**
 * Figure 6's readings after a round: `peak` with the load's backlog still queued, `settledAt` once
 * the service and its database went quiet (`settled: false` if they did not in time), and at a
 * figure's end `idleAt`, `idleSeconds` after its last request.
 */
export interface RssSample {
  figure: string;
  when: string;
  peak: MemoryReading;
  settledAt: MemoryReading;
  settled: boolean;
  idleAt?: MemoryReading;
}

/**
 * Past the service's own collection after a burst (src/idle-collection.ts), but before its pool
 * connections and hashing threads close (5 minutes unused): the most an idle service holds.
 */
export const idleSeconds = 40;

/** A span of a figure's load, in this machine's monotonic clock (µs), to cut a CPU profile to. */
export interface LoadWindow {
  figure: string;
  startUs: number;
  endUs: number;
}

/** Figure 10's sizing facts, for BENCHMARKS.md's sizing section. */
export interface SizingFacts {
  loginsPerCore: number;
  loginsPerSecond: number;
  sessionReadsPerCore: number;
  sessionReadsPerSecond: number;
  perLogin: Operations;
  perSessionRead: Operations;
}

export interface BenchContext {
  mode: Mode;
  backend: Backend;
  rounds: number;
  seconds: number;
  /** Figure ids whose service runs with --cpu-prof into this folder. */
  profile?: { figure: string; dir: string };
  /** Identities registered by the benchmark, all with `password`. */
  customers: string[];
  password: string;
  rss: RssSample[];
  /** Seconds from spawning each figure's service to its first answer; the first on an empty DATA_DIR. */
  starts: number[];
  windows: LoadWindow[];
  /** Per figure: the service's log lines at warn or above, by level, message and error. */
  serviceLogs: Record<string, Record<string, number>>;
  /** Per figure: shares of all cores taken by other processes, and by PostgreSQL/Redis. */
  hostUse: Record<string, HostUse>;
  sizing?: SizingFacts;
  /** Rounds that started while other processes were busy anyway, and the time spent waiting. */
  quiet: { waitedMs: number; noisyRounds: number; rounds: number };
}

/** The most the whole run waits for other processes to quieten down, so it stays under 10 minutes. */
let quietBudgetMs = 60_000;

/** Waits briefly for a quiet host before a measured round; counts rounds that did not get one. */
export async function beforeRound(context: BenchContext, ownPids: number[]): Promise<void> {
  const { waitedMs, quiet, others } = await waitForQuietHost(ownPids, { maxMs: Math.min(10_000, quietBudgetMs) });
  quietBudgetMs = Math.max(0, quietBudgetMs - waitedMs);
  context.quiet.waitedMs += waitedMs;
  context.quiet.rounds += 1;
  if (!quiet) {
    context.quiet.noisyRounds += 1;
    progress(context, `host busy: other processes use ${format(others * 100)}% of the CPU; measuring anyway`);
  } else if (waitedMs > 1_000) {
    progress(context, `waited ${format(waitedMs / 1000, 1)} s for other processes to quieten down`);
  }
}

export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export function progress(context: Pick<BenchContext, 'mode'>, line: string): void {
  process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] [${context.mode}] ${line}\n`);
}

export function median(values: number[]): number {
  const sorted = values.filter((value) => !Number.isNaN(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function format(value: number, digits = 0): string {
  if (Number.isNaN(value)) return 'n/a';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/**
 * Reads the memory now (the peak, unless the caller read it earlier, before draining a backlog),
 * then again once the service and its database have settled, and records both; with `idle`, once
 * more when the service has been idle for `idleSeconds`.
 */
export async function recordRss(
  context: BenchContext,
  service: Server,
  figure: string,
  when: string,
  { peak = service.memory(), idle = false }: { peak?: MemoryReading; idle?: boolean } = {},
): Promise<RssSample> {
  const loadEndedMs = performance.now();
  // 10 s of quiet: longer than the service waits before its collection after a burst, which breaks
  // the quiet, so the reading comes after the collection has handed its pages back.
  const { settled } = await waitUntilSettled(service.pid, { quietWindows: 40, maxMs: 60_000 });
  const sample: RssSample = { figure, when, peak, settledAt: service.memory(), settled };
  if (idle) {
    const leftMs = idleSeconds * 1000 - (performance.now() - loadEndedMs);
    if (leftMs > 0) await new Promise((resolve) => setTimeout(resolve, leftMs));
    sample.idleAt = service.memory();
  }
  context.rss.push(sample);
  return sample;
}

export function rssText(sample: RssSample): string {
  const { peak, settledAt } = sample;
  const idle =
    sample.idleAt === undefined
      ? ''
      : `, ${format(sample.idleAt.mb)} MB idle (service ${format(sample.idleAt.serviceMb)} + database ${format(sample.idleAt.databaseMb)})`;
  return `RSS ${format(peak.mb)} MB after the load, ${format(settledAt.mb)} MB settled (service ${format(settledAt.serviceMb)} + database ${format(settledAt.databaseMb)})${sample.settled ? '' : ' NOT SETTLED'}${idle}`;
}

/** Time-stamps a span of load so a CPU profile can be cut to it. */
export async function timed<T>(context: BenchContext, figure: string, work: () => Promise<T>): Promise<T> {
  const startUs = monotonicUs();
  try {
    return await work();
  } finally {
    context.windows.push({ figure, startUs, endUs: monotonicUs() });
  }
}

/**
 * Each figure gets a fresh service process (and, in production, an empty Redis db), so no figure
 * inherits another's counters or backlog; the database and its customers carry over. With `admin`,
 * the service runs its admin listener on that port, with the tokens `env` names.
 */
export async function withService<T>(
  context: BenchContext,
  figure: string,
  work: (service: Server) => Promise<T>,
  admin?: { port: number; env: Record<string, string> },
): Promise<T> {
  await context.backend.resetCounters();
  const profileDir = context.profile?.figure === figure ? context.profile.dir : undefined;
  const started = performance.now();
  const service = await startService(
    { ...context.backend.env, ...admin?.env },
    {
      ...(profileDir === undefined ? {} : { cpuProfileDir: profileDir }),
      ...(admin === undefined ? {} : { adminPort: admin.port }),
    },
  );
  const startSeconds = (performance.now() - started) / 1000;
  context.starts.push(startSeconds);
  progress(
    context,
    `fig ${figure}: service pid ${service.pid} listening at ${service.url} after ${format(startSeconds, 1)} s, RSS ${format(service.memory().mb)} MB`,
  );
  try {
    // Start measuring from a quiet service, not one still finishing its start (migrations, GC).
    await waitUntilIdle(service.pid);
    const result = await work(service);
    const end = await recordRss(context, service, figure, 'end', { idle: true });
    progress(context, `fig ${figure}: at the end ${rssText(end)}`);
    return result;
  } finally {
    const code = await service.stop();
    context.serviceLogs[figure] = { ...service.logKinds };
    if (code !== 0)
      progress(
        context,
        `fig ${figure}: service exited with ${code}; last log lines: ${service.lastLogLines.join(' | ')}`,
      );
    for (const [kind, count] of Object.entries(service.logKinds))
      progress(context, `fig ${figure}: service logged ${count}× ${kind}`);
  }
}

export function cpuText(cpu: ServiceCpu): string {
  return `service main thread ${format(cpu.mainShare * 100)}% busy (${format(cpu.mainMsPerAnswer, cpu.mainMsPerAnswer < 0.1 ? 3 : 2)} ms per answer), process ${format(cpu.totalCores, 2)} cores`;
}

/** The median main-thread CPU per answer of a figure's rounds, in ms. */
export function medianMainMs(cpus: ServiceCpu[]): number {
  return median(cpus.map((cpu) => cpu.mainMsPerAnswer));
}

export function cpuSummary(cpus: ServiceCpu[]): string {
  return `service main thread median ${format(median(cpus.map((cpu) => cpu.mainShare)) * 100)}% busy, ${format(median(cpus.map((cpu) => cpu.mainMsPerAnswer)), 3)} ms main-thread CPU per answer, process ${format(median(cpus.map((cpu) => cpu.totalCores)), 2)} cores`;
}

/** Runs one measured round: time-stamped for profiles, with the service's CPU over it. */
export async function measuredRound<T>(
  context: BenchContext,
  figure: string,
  service: Server,
  work: () => Promise<T>,
  answers: (result: T) => number,
): Promise<{ result: T; cpu: ServiceCpu }> {
  await beforeRound(context, [service.pid]);
  const stopCpu = measureServiceCpu(service.pid);
  const result = await timed(context, figure, work);
  return { result, cpu: stopCpu(answers(result)) };
}
