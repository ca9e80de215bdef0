import fs from 'node:fs';
import path from 'node:path';
import type { Mode } from './backends.js';
import { median, type BenchContext, type Row, type SizingFacts } from './context.js';
import type { Operations } from './operations.js';
import type { HostUse } from './proc.js';

/** One mode's figures as data: what bench/results.json holds and every table and plot is drawn from. */
export interface ModeResult {
  mode: Mode;
  description: string;
  rows: Row[];
  hostUse: Record<string, HostUse>;
  quiet: BenchContext['quiet'];
  serviceLogs?: Record<string, Record<string, number>>;
  sizing?: SizingFacts;
}

export interface RunSettings {
  rounds: number;
  seconds: number;
  minutes: number;
  loadAtStart: string;
  loadAtEnd: string;
}

/** Per mode of a run, per request kind the history follows: answers a second, its ratio, its main-thread CPU. */
export interface HistoryEntry {
  run: string;
  mode: Mode;
  figures: Record<string, { value: number; ratio?: number; mainMs?: number }>;
}

export interface Results {
  date: string;
  settings: RunSettings;
  /** The machine's facts, as the header lists them. */
  machine: string[];
  modes: ModeResult[];
  /** Newest first, this run's own entries included. */
  history: HistoryEntry[];
}

export function modeResult(context: BenchContext, description: string, rows: Row[]): ModeResult {
  const { mode, hostUse, quiet, serviceLogs, sizing } = context;
  return { mode, description, rows, hostUse, quiet, serviceLogs, ...(sizing && { sizing }) };
}

export const modeHeadings: Record<Mode, string> = {
  embedded: 'Embedded default',
  production: 'Production mode',
  scaled: 'Production mode behind PgBouncer and on a Redis Cluster',
};

/** The request kinds the history follows: what every request pays, then a session, then a login. */
export const historyFigures = [
  ['1a', 'probe'],
  ['8b', 'session check'],
  ['12a', 'introspection'],
  ['9c', 'login'],
] as const;
/** History rows kept: in the file, and in BENCHMARKS.md's table. */
export const historyKeep = 12;

export const runLabel = (date: string) => date.slice(0, 16).replace('T', ' ');

export function historyEntries(date: string, modes: ModeResult[]): HistoryEntry[] {
  return modes.map((result) => {
    const figures: HistoryEntry['figures'] = {};
    for (const [id] of historyFigures) {
      const row = result.rows.find((candidate) => candidate.id === id);
      if (row !== undefined) figures[id] = { value: row.value, ratio: row.ratio, mainMs: row.mainMs };
    }
    return { run: runLabel(date), mode: result.mode, figures };
  });
}

/** The history rows of an earlier BENCHMARKS.md (`| 2026-11-28 14:29 | embedded | 16,744/s · 0.69 · 0.055 ms | …`). */
export function parseHistoryTable(markdown: string): HistoryEntry[] {
  return [...markdown.matchAll(/^\| (\d{4}-\d\d-\d\d \d\d:\d\d) \| (\w+) \|(.*)\|$/gm)].map(([, run, mode, rest]) => {
    const figures: HistoryEntry['figures'] = {};
    rest!.split('|').forEach((cell, index) => {
      const match = /([\d,.]+)\/s(?: · ([\d.]+))?(?: · ([\d.]+) ms)?/.exec(cell);
      const id = historyFigures[index]?.[0];
      if (match === null || id === undefined) return;
      figures[id] = {
        value: Number(match[1]!.replaceAll(',', '')),
        ...(match[2] !== undefined && { ratio: Number(match[2]) }),
        ...(match[3] !== undefined && { mainMs: Number(match[3]) }),
      };
    });
    return { run: run!, mode: mode as Mode, figures };
  });
}

/** Figure 10's facts read back from its rows, for a results file that predates `sizing`. */
function sizingFromRows(rows: Row[]): SizingFacts | undefined {
  const [login, session] = ['10a', '10b'].map((id) => rows.find((row) => row.id === id));
  if (login === undefined || session === undefined) return undefined;
  const operations = (row: Row): Operations => {
    const note = row.notes.find((line) => line.startsWith('per answer:')) ?? '';
    const read = (pattern: RegExp) => Number(pattern.exec(note)?.[1] ?? Number.NaN);
    const redisCommands = /no Redis/.test(note) ? undefined : read(/([\d.]+) Redis commands/);
    return { transactions: read(/([\d.]+) PostgreSQL/), rowsWritten: read(/([\d.]+) rows written/), redisCommands };
  };
  const perSecond = (row: Row) =>
    median(
      row.rounds
        .replace(/ per second$/, '')
        .split(' / ')
        .map((rate) => Number(rate.replaceAll(',', ''))),
    );
  return {
    loginsPerCore: login.value,
    loginsPerSecond: perSecond(login),
    sessionReadsPerCore: session.value,
    sessionReadsPerSecond: perSecond(session),
    perLogin: operations(login),
    perSessionRead: operations(session),
  };
}

/** A mode's service log lines from the details of an earlier BENCHMARKS.md (`- service log lines at warn or above during figure 2: 3× `…``). */
function logsFromMarkdown(benchmarks: string, mode: Mode): Record<string, Record<string, number>> {
  const start = benchmarks.indexOf(`\n## ${modeHeadings[mode]}\n`);
  const section = start < 0 ? '' : benchmarks.slice(start + 1).split(/\n## /)[0]!;
  const logs: Record<string, Record<string, number>> = {};
  for (const [, figure, list] of section.matchAll(/^- service log lines at warn or above during figure (\S+): (.*)$/gm))
    for (const [, count, kind] of list!.matchAll(/(\d+)× `([^`]*)`/g)) (logs[figure!] ??= {})[kind!] = Number(count);
  return logs;
}

/**
 * A results file as the renderer needs it. One written before the file held settings, machine facts
 * and history (`{date, modes}`) takes them from the BENCHMARKS.md of its run, or `overrides`.
 */
export function completeResults(data: unknown, benchmarks: string, overrides: Partial<RunSettings> = {}): Results {
  const given = data as Partial<Results> & { date: string; modes: ModeResult[] };
  const header = (pattern: RegExp) => pattern.exec(benchmarks)?.slice(1) ?? [];
  const [rounds = '3', seconds = '4'] = header(/median of (\d+) rounds of ([\d.]+) s/);
  const [minutes = 'NaN'] = header(/took ([\d.]+) minutes/);
  const [loadAtStart = 'unknown', loadAtEnd = 'unknown'] = header(
    /Load average \(1\/5\/15 min\): (.+) at the start, (.+) at the end/,
  );
  const settings = given.settings ?? {
    rounds: Number(rounds),
    seconds: Number(seconds),
    minutes: Number(minutes),
    loadAtStart,
    loadAtEnd,
  };
  const modes = given.modes.map((mode) => {
    const sizing = mode.sizing ?? sizingFromRows(mode.rows);
    return {
      ...mode,
      serviceLogs: mode.serviceLogs ?? logsFromMarkdown(benchmarks, mode.mode),
      ...(sizing && { sizing }),
    };
  });
  const own = historyEntries(given.date, modes);
  // The run's own rows, if that file has them, were labelled a moment before its results file was written.
  const sameRun = (entry: HistoryEntry) =>
    Math.abs(Date.parse(`${entry.run.replace(' ', 'T')}Z`) - Date.parse(given.date)) < 5 * 60_000;
  const earlier = parseHistoryTable(benchmarks).filter((entry) => !sameRun(entry));
  return {
    date: given.date,
    settings: { ...settings, ...overrides },
    machine:
      given.machine ?? [...benchmarks.matchAll(/^- ((?:CPU: |Memory: |Node\.js ).*)$/gm)].map((match) => match[1]!),
    modes,
    history: (given.history ?? [...own, ...earlier]).slice(0, historyKeep),
  };
}

/** A results file's data; JSON wrote a figure that could not be measured (NaN) as null. */
export const parseResults = (json: string): unknown => JSON.parse(json, (_, value: unknown) => value ?? Number.NaN);

/** The history before this run: from bench/results.json, else from BENCHMARKS.md's table. */
export function previousHistory(root: string): HistoryEntry[] {
  const read = (file: string) =>
    fs.existsSync(path.join(root, file)) ? fs.readFileSync(path.join(root, file), 'utf8') : '';
  const [json, benchmarks] = [read('bench/results.json'), read('BENCHMARKS.md')];
  return json === '' ? parseHistoryTable(benchmarks) : completeResults(parseResults(json), benchmarks).history;
}
