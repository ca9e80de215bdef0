import type { Backend, Mode } from './backends.js';
import type { Operations } from './operations.js';
import {
  measureServiceCpu,
  waitForQuietHost,
  waitUntilIdle,
  waitUntilSettled,
  type HostUse,
  type ServiceCpu,
} from './proc.js';
import { freePort, startService, type MemoryReading, type Server } from './servers.js';

export type Goal = { text: string; met: boolean };

/** One line of the results table; `rounds` and `notes` are its details, `mainMs` the service's main-thread CPU per answer. */
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
  rounds: string;
  notes: string[];
  mainMs?: number;
}

/** A row with no failed answers and no notes unless `more` says. */
export function row(
  id: string,
  label: string,
  unit: string,
  value: number,
  goal: Goal,
  rounds: string,
  more?: Partial<Row>,
): Row {
  return { id, label, unit, value, goal, rounds, non2xx: 0, errors: 0, notes: [], ...more };
}

/**
 * Figure 6's readings after a round: `peak` with any backlog still queued, `settledAt` once the
 * service and its database went quiet, and at a figure's end `idleAt`, `idleSeconds` after it.
 */
export interface RssSample {
  figure: string;
  when: string;
  peak: MemoryReading;
  settledAt: MemoryReading;
  settled: boolean;
  idleAt?: MemoryReading;
}

/** Past the service's own collection after a burst, before its connections and threads close (5 min). */
export const idleSeconds = 40;

/** A span of a figure's load, in this machine's monotonic clock (µs), to cut a CPU profile to. */
export type LoadWindow = { figure: string; startUs: number; endUs: number };

/** Figure 10's sizing facts, for BENCHMARKS.md's sizing section. */
export type SizingFacts = Record<
  'loginsPerCore' | 'loginsPerSecond' | 'sessionReadsPerCore' | 'sessionReadsPerSecond',
  number
> &
  Record<'perLogin' | 'perSessionRead', Operations>;

export interface BenchContext {
  mode: Mode;
  backend: Backend;
  rounds: number;
  seconds: number;
  /** The figure whose service runs with --cpu-prof into `dir`. */
  profile?: { figure: string; dir: string };
  /** Identities registered by the benchmark, all with `password`. */
  customers: string[];
  password: string;
  rss: RssSample[];
  /** Seconds from spawning each figure's service to its first answer; the first on an empty DATA_DIR. */
  starts: number[];
  windows: LoadWindow[];
  /** Per figure: the service's log lines at warn or above, and the host's CPU others took. */
  serviceLogs: Record<string, Record<string, number>>;
  hostUse: Record<string, HostUse>;
  sizing?: SizingFacts;
  /** Rounds that started while other processes were busy anyway, and the time spent waiting. */
  quiet: { waitedMs: number; noisyRounds: number; rounds: number };
}

/** The most the whole run waits for other processes to quieten down. */
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

/** Two decimals, cut toward the goal's wrong side, so a missed goal never reads as met (0.849 → 0.84). */
export function ratioText(row: Row): string {
  const ratio = row.ratio!;
  // The epsilon keeps a float just under a hundredth (1.13 × 100 = 112.999…) from losing it.
  return (row.unit === 'ms' ? Math.ceil(ratio * 100 - 1e-9) / 100 : Math.floor(ratio * 100 + 1e-9) / 100).toFixed(2);
}

export function valueText(row: Row, value = row.value): string {
  return `${format(value, row.unit === 'ms' || value < 1000 ? 1 : 0)} ${row.unit}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Records the memory now (the peak, unless read earlier) and once the service and its database
 * have settled; with `idle`, once more `idleSeconds` after the load.
 */
export async function recordRss(
  context: BenchContext,
  service: Server,
  figure: string,
  when: string,
  { peak = service.memory(), idle = false }: { peak?: MemoryReading; idle?: boolean } = {},
): Promise<RssSample> {
  const loadEndedMs = performance.now();
  // 10 s of quiet: longer than the service waits before its own collection, which breaks the quiet.
  const { settled } = await waitUntilSettled(service.pid, { quietWindows: 40, maxMs: 60_000 });
  const sample: RssSample = { figure, when, peak, settledAt: service.memory(), settled };
  if (idle) {
    await sleep(idleSeconds * 1000 - (performance.now() - loadEndedMs));
    sample.idleAt = service.memory();
  }
  context.rss.push(sample);
  return sample;
}

export function rssText(sample: RssSample): string {
  const { peak, settledAt, idleAt } = sample;
  const idle =
    idleAt === undefined
      ? ''
      : `, ${format(idleAt.mb)} MB idle (service ${format(idleAt.serviceMb)} + database ${format(idleAt.databaseMb)})`;
  return `RSS ${format(peak.mb)} MB after the load, ${format(settledAt.mb)} MB settled (service ${format(settledAt.serviceMb)} + database ${format(settledAt.databaseMb)})${sample.settled ? '' : ' NOT SETTLED'}${idle}`;
}

/** Time-stamps a span of load so a CPU profile can be cut to it. */
export async function timed<T>(context: BenchContext, figure: string, work: () => Promise<T>): Promise<T> {
  const startUs = Number(process.hrtime.bigint() / 1000n);
  try {
    return await work();
  } finally {
    context.windows.push({ figure, startUs, endUs: Number(process.hrtime.bigint() / 1000n) });
  }
}

/** Adds a service's warn-and-above log lines to its figure's, which decide whether it met its goals. */
export function keepLogs(context: BenchContext, figure: string, service: Server): void {
  const kinds = (context.serviceLogs[figure] ??= {});
  for (const [kind, count] of Object.entries(service.logKinds)) kinds[kind] = (kinds[kind] ?? 0) + count;
}

/**
 * Each figure gets a fresh service process (in production an empty Redis db), so none inherits
 * another's counters or backlog; the database and its customers carry over. With `adminEnv` (the
 * tokens), the service runs its admin listener on a free port too.
 */
export async function withService<T>(
  context: BenchContext,
  figure: string,
  work: (service: Server) => Promise<T>,
  adminEnv?: Record<string, string>,
): Promise<T> {
  await context.backend.resetCounters();
  const profileDir = context.profile?.figure === figure ? context.profile.dir : undefined;
  const admin = adminEnv && { port: await freePort(), env: adminEnv };
  const started = performance.now();
  const service = await startService(
    { ...context.backend.env, ...admin?.env },
    { ...(profileDir !== undefined && { cpuProfileDir: profileDir }), ...(admin && { adminPort: admin.port }) },
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
  return `service main thread median ${format(median(cpus.map((cpu) => cpu.mainShare)) * 100)}% busy, ${format(medianMainMs(cpus), 3)} ms main-thread CPU per answer, process ${format(median(cpus.map((cpu) => cpu.totalCores)), 2)} cores`;
}

/** Runs one measured round: on a quiet host, time-stamped for profiles, with the service's CPU over it. */
export async function measuredRound<T>(
  context: BenchContext,
  figure: string,
  service: Server,
  work: () => Promise<T>,
  answers: (result: T) => number,
  ownPids: number[] = [service.pid],
): Promise<{ result: T; cpu: ServiceCpu }> {
  await beforeRound(context, ownPids);
  const stopCpu = measureServiceCpu(service.pid);
  const result = await timed(context, figure, work);
  return { result, cpu: stopCpu(answers(result)) };
}
