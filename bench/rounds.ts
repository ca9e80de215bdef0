import {
  beforeRound,
  cpuSummary,
  cpuText,
  format,
  measuredRound,
  median,
  medianMainMs,
  progress,
  recordRss,
  rssText,
  type BenchContext,
  type Goal,
  type Row,
} from './context.js';
import { statusText, sum, troubles, type LoadResult } from './load.js';
import type { ServiceCpu } from './proc.js';
import type { Server } from './servers.js';

/** The measured rounds of a figure: what each round ran, and the service's CPU over its measured loads. */

export interface Load<T extends LoadResult = LoadResult> {
  /** In progress lines. */
  name: string;
  run: (seconds: number) => Promise<T>;
  /** The service whose CPU is read over the load; without one the round only waits for a quiet host. */
  service?: Server;
  /** The answers the CPU is shared by; the result's responses unless given. */
  answers?: (result: T) => number;
  /** After the load (a memory reading, say): more text for its progress line. */
  after?: (round: number, result: T) => Promise<string>;
}

export interface Series<T extends LoadResult = LoadResult> {
  results: T[];
  cpus: ServiceCpu[];
}

/** A memory reading of the service after its load, for figure 6, as a Load's `after`. */
export const readRss =
  (context: BenchContext, service: Server, figure: string, when: (round: number) => string) => async (round: number) =>
    rssText(await recordRss(context, service, figure, when(round)));

export function loadText<T extends LoadResult>(result: T, cpu?: ServiceCpu): string {
  const digits = result.okPerSecond < 1000 ? 1 : 0;
  const cpuPart = cpu === undefined ? '' : `; ${cpuText(cpu)}`;
  return `${format(result.okPerSecond, digits)}/s, p99 ${format(result.latency.p99, 1)} ms (${statusText(result)})${cpuPart}`;
}

/**
 * `context.rounds` rounds of `loads`, one after another; with `alternate`, every other round runs
 * them in reverse, so a drift of the host favours none. Returns each load's series, in order.
 */
export async function runRounds<T extends LoadResult>(
  context: BenchContext,
  figure: string,
  loads: Load<T>[],
  {
    ownPids,
    alternate = false,
    seconds = context.seconds,
  }: { ownPids: number[]; alternate?: boolean; seconds?: number },
): Promise<Series<T>[]> {
  const series = loads.map((): Series<T> => ({ results: [], cpus: [] }));
  for (let round = 1; round <= context.rounds; round += 1) {
    const order = loads.map((_, index) => index);
    if (alternate && round % 2 === 0) order.reverse();
    for (const index of order) {
      const load = loads[index]!;
      let result: T;
      let cpu: ServiceCpu | undefined;
      if (load.service === undefined) {
        await beforeRound(context, ownPids);
        result = await load.run(seconds);
      } else {
        const answers = load.answers ?? ((done: T) => done.responses);
        ({ result, cpu } = await measuredRound(context, figure, load.service, () => load.run(seconds), answers));
        series[index]!.cpus.push(cpu);
      }
      series[index]!.results.push(result);
      const more = load.after === undefined ? '' : await load.after(round, result);
      const after = more === '' ? '' : `; ${more}`;
      progress(
        context,
        `fig ${figure} ${load.name} round ${round}/${context.rounds}: ${loadText(result, cpu)}${after}`,
      );
    }
  }
  return series;
}

export const rates = (results: LoadResult[]) => results.map((result) => result.okPerSecond);
export const p99s = (results: LoadResult[]) => results.map((result) => result.latency.p99);

export interface RatioSpec {
  id: string;
  label: string;
  ours: Series;
  theirs: LoadResult[];
  /** The two sides' names in the rounds text, e.g. ['service', 'bare']. */
  names: [string, string];
  baselineLabel: string;
  /** The least ratio; none: information. */
  goal?: number;
  /** A second goal, e.g. on the p99. */
  also?: Goal;
  /** A third: the service's main-thread CPU per answer at most this many ms. */
  maxMainMs?: number;
  notes?: string[];
  /** More results whose non-2xx answers and errors count against the row; the yardstick's count unless `countTheirs` is false. */
  counted?: LoadResult[];
  countTheirs?: boolean;
  rounds?: string;
}

/** Answers a second of the service against a yardstick's, medians of the rounds, and their ratio. */
export function ratioRow(spec: RatioSpec): Row {
  const value = median(rates(spec.ours.results));
  const baseline = median(rates(spec.theirs));
  const ratio = value / baseline;
  const counted = [...spec.ours.results, ...(spec.countTheirs === false ? [] : spec.theirs), ...(spec.counted ?? [])];
  const non2xx = sum(counted, (result) => result.non2xx);
  const errors = sum(counted, (result) => result.errors);
  const clean = non2xx === 0 && errors === 0 && (spec.also?.met ?? true);
  const mainMs = spec.ours.cpus.length === 0 ? undefined : medianMainMs(spec.ours.cpus);
  const cpuMet = spec.maxMainMs === undefined || (mainMs ?? Number.NaN) <= spec.maxMainMs;
  const text = [
    spec.goal === undefined ? 'information' : `ratio ≥ ${spec.goal.toFixed(2)}`,
    ...(spec.also === undefined || spec.also.text === '' ? [] : [spec.also.text]),
    ...(spec.maxMainMs === undefined ? [] : [`main thread ≤ ${spec.maxMainMs} ms per answer`]),
  ].join(', ');
  const digits = value < 1000 ? 1 : 0;
  const listed = (results: LoadResult[]) => results.map((result) => format(result.okPerSecond, digits)).join(' / ');
  return {
    id: spec.id,
    label: spec.label,
    unit: 'req/s',
    value,
    baseline,
    baselineLabel: spec.baselineLabel,
    ratio,
    goal: { text, met: clean && cpuMet && (spec.goal === undefined || ratio >= spec.goal) },
    non2xx,
    errors,
    rounds: spec.rounds ?? `${spec.names[0]} ${listed(spec.ours.results)}; ${spec.names[1]} ${listed(spec.theirs)}`,
    notes: [
      ...(spec.notes ?? (spec.ours.cpus.length === 0 ? [] : [cpuSummary(spec.ours.cpus)])),
      ...troubles([...spec.ours.results, ...spec.theirs, ...(spec.counted ?? [])]),
    ],
    ...(mainMs !== undefined && { mainMs }),
  };
}

/** A p99 against a baseline p99 (idle, alone, another call's): at most `limit` times it; the baseline's answers are not counted. */
export function p99Row(spec: {
  id: string;
  label: string;
  ours: LoadResult[];
  theirs: LoadResult[];
  baselineLabel: string;
  limit: number;
  goalText: string;
  rounds: string;
  notes: string[];
  counted?: LoadResult[];
}): Row {
  const value = median(p99s(spec.ours));
  const baseline = median(p99s(spec.theirs));
  const ratio = value / baseline;
  const counted = [...spec.ours, ...(spec.counted ?? [])];
  const non2xx = sum(counted, (result) => result.non2xx);
  const errors = sum(counted, (result) => result.errors);
  return {
    id: spec.id,
    label: spec.label,
    unit: 'ms',
    value,
    baseline,
    baselineLabel: spec.baselineLabel,
    ratio,
    goal: { text: spec.goalText, met: ratio <= spec.limit && non2xx === 0 && errors === 0 },
    non2xx,
    errors,
    rounds: spec.rounds,
    notes: [...spec.notes, ...troubles([...new Set([...counted, ...spec.theirs])])],
  };
}
