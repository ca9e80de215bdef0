import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as prettier from 'prettier';
import type { Mode } from './backends.js';
import { format, ratioText, valueText, type Row, type SizingFacts } from './context.js';
import type { Operations } from './operations.js';
import { plots } from './plots.js';
import type { HostUse } from './proc.js';
import {
  historyFigures,
  historyKeep,
  modeHeadings,
  type HistoryEntry,
  type ModeResult,
  type Results,
} from './results.js';

/** BENCHMARKS.md and its plots, drawn from the results (bench/results.ts); nothing in them is kept by hand. */

function metText(row: Row): string {
  if (row.goal.met) return 'yes';
  const reasons: string[] = [];
  if (row.non2xx + row.errors > 0) reasons.push(`${row.non2xx} non-2xx, ${row.errors} connection errors`);
  if (row.notes.some((note) => note.startsWith('SERVICE ERRORS'))) reasons.push('service logged errors');
  return reasons.length === 0 ? '**no**' : `**no** (${reasons.join('; ')})`;
}

const noisyShare = 0.15;

/** Other processes' share of the CPU while the row's figure ran, flagged when it was enough to matter. */
function noiseText(result: ModeResult, row: Row): string {
  const shares = row.id === '6' ? Object.values(result.hostUse) : [result.hostUse[row.id.replace(/[a-z]$/, '')]];
  const worst = Math.max(0, ...shares.map((share) => share?.others ?? 0));
  return `${format(worst * 100)}%${worst > noisyShare ? ' ⚠' : ''}`;
}

export function modeTable(result: ModeResult): string {
  const lines = [
    '| # | Figure | Service | Yardstick | Ratio | Goal | Met | Host CPU used by others |',
    '|---|---|---|---|---|---|---|---|',
    ...result.rows.map((row) => {
      const yardstick =
        row.baseline === undefined ? '—' : `${valueText(row, row.baseline)} (${row.baselineLabel ?? ''})`;
      const ratio = row.ratio === undefined ? '—' : ratioText(row);
      return `| ${row.id} | ${row.label} | ${valueText(row)} | ${yardstick} | ${ratio} | ${row.goal.text} | ${metText(row)} | ${noiseText(result, row)} |`;
    }),
  ];
  if (result.rows.some((row) => noiseText(result, row).endsWith('⚠')))
    lines.push(
      '',
      `⚠ Other processes took more than ${noisyShare * 100}% of the host's CPU while this figure ran: its numbers (and ratios, whose two sides ran at different moments) are unreliable; rerun on a quiet host.`,
    );
  return lines.join('\n');
}

export function roundsDetail(result: ModeResult): string {
  const lines = result.rows.map(
    (row) => `- **${row.id}** ${row.rounds}${row.notes.length === 0 ? '' : ` — ${row.notes.join('; ')}`}`,
  );
  const use = Object.entries(result.hostUse);
  const shares = (pick: (share: HostUse) => number) =>
    use.map(([id, share]) => `fig ${id} ${(pick(share) * 100).toFixed(0)}%`).join(', ');
  if (use.length > 0) {
    const servers =
      result.mode === 'embedded'
        ? ''
        : ` (PostgreSQL + Redis + PgBouncer separately: ${shares((share) => share.servers)})`;
    lines.push(
      `- CPU taken by processes outside the benchmark while each figure ran (share of all cores): ${shares((share) => share.others)}${servers}`,
    );
  }
  const { quiet } = result;
  lines.push(
    `- Before each measured round the benchmark waited (up to 10 s) for other processes to use under 15% of the CPU: ${format(quiet.waitedMs / 1000, 1)} s waited in all; ${quiet.noisyRounds} of ${quiet.rounds} rounds started on a busy host anyway.`,
  );
  for (const [figure, kinds] of Object.entries(result.serviceLogs ?? {})) {
    const entries = Object.entries(kinds).map(([kind, count]) => `${count}× \`${kind}\``);
    if (entries.length > 0)
      lines.push(`- service log lines at warn or above during figure ${figure}: ${entries.join('; ')}`);
  }
  return lines.join('\n');
}

export function summaryTable(results: ModeResult[]): string {
  const ids = results[0]?.rows.map((row) => row.id) ?? [];
  const lines = [
    `| # | Goal | ${results.map((result) => result.mode).join(' | ')} |`,
    `|---|---|${'---|'.repeat(results.length)}`,
  ];
  for (const id of ids) {
    const cells = results.map((result) => {
      const row = result.rows.find((candidate) => candidate.id === id);
      if (row === undefined) return '—';
      const shown =
        row.ratio === undefined
          ? valueText(row)
          : row.unit === 'req/s'
            ? `ratio ${ratioText(row)}`
            : `${valueText(row)}, ${ratioText(row)}× idle`;
      return `${shown} ${row.goal.met ? '✓' : '✗'}${noiseText(result, row).endsWith('⚠') ? ' ⚠' : ''}`;
    });
    // A goal that differs by mode (memory) names each mode's.
    const goals = new Map<string, string[]>();
    for (const result of results) {
      const text = result.rows.find((row) => row.id === id)?.goal.text;
      if (text !== undefined) goals.set(text, [...(goals.get(text) ?? []), result.mode]);
    }
    const goal =
      goals.size === 1
        ? [...goals.keys()][0]!
        : [...goals.entries()].map(([text, modes]) => `${text} (${modes.join(', ')})`).join('; ');
    lines.push(`| ${id} | ${goal} | ${cells.join(' | ')} |`);
  }
  lines.push(
    '',
    `✓ goal met, ✗ missed; ⚠ other processes took more than ${noisyShare * 100}% of the host's CPU while the figure ran.`,
  );
  return lines.join('\n');
}

export function machineFacts(): string[] {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  return [
    `CPU: ${os.cpus().length} cores, ${model}`,
    `Memory: ${format(os.totalmem() / 1024 ** 3, 1)} GiB`,
    `Node.js ${process.version} on ${os.type()} ${os.release()}`,
  ];
}

const modeNames: Record<Mode, string> = {
  embedded: 'embedded default',
  production: 'production (PostgreSQL + Redis)',
  scaled: 'behind PgBouncer, on a Redis Cluster',
};

function perRequest(operations: Operations): string {
  const redis = operations.redisCommands;
  const commands = redis === undefined ? '—' : format(redis, redis < 10 ? 1 : 0);
  return `${format(operations.transactions, 1)} | ${format(operations.rowsWritten, 1)} | ${commands}`;
}

function range(values: number[], digits = 0): string {
  const [low, high] = [format(Math.min(...values), digits), format(Math.max(...values), digits)];
  return low === high ? low : `${low}–${high}`;
}

/** The sizing figures the guides quote by hand; test/docs/sizing-figures.test.ts holds the guides to them. */
export function sizingFigures(sizings: SizingFacts[], production: SizingFacts | undefined) {
  return {
    loginsPerCore: range(sizings.map((facts) => facts.loginsPerCore)),
    loginsPerSecond: range(sizings.map((facts) => facts.loginsPerSecond)),
    checksPerCore: range(sizings.map((facts) => facts.sessionReadsPerCore)),
    ...(production !== undefined && {
      production: {
        loginTransactions: format(production.perLogin.transactions, 1),
        loginCommands: format(production.perLogin.redisCommands ?? Number.NaN, 1),
        checkTransactions: format(production.perSessionRead.transactions, 1),
        checkCommands: format(production.perSessionRead.redisCommands ?? Number.NaN, 1),
      },
    }),
  };
}

/** Figure 10's facts: a table per mode, and the same in a paragraph, which the guides quote. */
function sizingSection(sizings: { mode: Mode; facts: SizingFacts }[], cores: string): string {
  const production = sizings.find((sizing) => sizing.mode === 'production')?.facts;
  const figures = sizingFigures(
    sizings.map((sizing) => sizing.facts),
    production,
  );
  const operations =
    figures.production === undefined
      ? ''
      : ` In production a login asks PostgreSQL for ${figures.production.loginTransactions} transactions and Redis for ${figures.production.loginCommands} commands, a session check for ${figures.production.checkTransactions} and ${figures.production.checkCommands}.`;
  return [
    '## Sizing',
    '',
    `From figure 10 of this run, on ${cores} shared cores (argon2id m = 19456 KiB, t = 2, p = 1). Per core means per core of the service process's own CPU, hashing threads included; PostgreSQL and Redis need CPU of their own on top (the embedded server's processes are the service's children and are not counted in it). Operations are per answer, from the servers' counters: the service database's transactions and rows written, and the Redis server's commands (all of that server's clients).`,
    '',
    '| Mode | Logins/s per core | Session checks/s per core | Per login: PostgreSQL transactions | rows written | Redis commands | Per session check: transactions | rows written | Redis commands |',
    '|---|---|---|---|---|---|---|---|---|',
    ...sizings.map(
      ({ mode, facts }) =>
        `| ${modeNames[mode]} | ${format(facts.loginsPerCore, 1)} (${format(facts.loginsPerSecond, 1)}/s measured) | ${format(facts.sessionReadsPerCore)} (${format(facts.sessionReadsPerSecond)}/s measured) | ${perRequest(facts.perLogin)} | ${perRequest(facts.perSessionRead)} |`,
    ),
    '',
    `In brief: hashing sets the pace, at about ${figures.loginsPerCore} logins a second per core of the service's CPU (${figures.loginsPerSecond} measured on the whole machine), and ${figures.checksPerCore} session checks a second per core.${operations} docs/guides/production.md and docs/running-at-scale.md quote these figures, and a test holds them to bench/results.json: after a run, update them by hand.`,
  ].join('\n');
}

function historySection(history: HistoryEntry[]): string {
  const cell = (figure: HistoryEntry['figures'][string] | undefined) => {
    if (figure === undefined) return '—';
    const ratio = figure.ratio === undefined ? '' : ` · ${format(figure.ratio, 2)}`;
    const cpu = figure.mainMs === undefined ? '' : ` · ${format(figure.mainMs, figure.mainMs < 1 ? 3 : 2)} ms`;
    return `${format(figure.value, figure.value < 1000 ? 1 : 0)}/s${ratio}${cpu}`;
  };
  return [
    '## History',
    '',
    `Each full run adds its rows at the top (the last ${historyKeep} are kept): per request kind, answers a second · the ratio its goal compares · the service's main-thread CPU per answer. A probe or a session check that costs more main-thread time than in the run before has grown; compare rows of the same mode, on the same host.`,
    '',
    `| Run | Mode | ${historyFigures.map(([id, name]) => `${name} (${id})`).join(' | ')} |`,
    `|---|---|${'---|'.repeat(historyFigures.length)}`,
    ...history
      .slice(0, historyKeep)
      .map(
        (entry) =>
          `| ${entry.run} | ${entry.mode} | ${historyFigures.map(([id]) => cell(entry.figures[id])).join(' | ')} |`,
      ),
  ].join('\n');
}

/** BENCHMARKS.md, wholly from the data: nothing in it is kept by hand. */
export function benchmarksMarkdown(results: Results, plotFiles: { file: string; title: string }[]): string {
  const { settings, modes } = results;
  const method = '[docs/benchmarks.md](docs/benchmarks.md)';
  const sections = [
    '# Benchmarks',
    '',
    `Written by \`npm run bench\` (bench/run.ts) from bench/results.json; \`npm run bench:plots\` writes it again from that file. Each figure is the median of ${settings.rounds} rounds of ${settings.seconds} s; every ratio compares two medians from the same run. The whole run took ${format(settings.minutes, 1)} minutes. How each figure is measured, what was changed to reach them and why a goal is missed: ${method}.`,
    '',
    '## Machine',
    '',
    `- Date: ${results.date}`,
    ...results.machine.map((fact) => `- ${fact}`),
    `- Load average (1/5/15 min): ${settings.loadAtStart} at the start, ${settings.loadAtEnd} at the end`,
    '',
  ];
  if (modes.length > 1) sections.push('## Goals at a glance', '', summaryTable(modes), '');
  if (plotFiles.length > 0)
    sections.push('## Plots', '', ...plotFiles.flatMap(({ file, title }) => [`![${title}](${file})`, '']));
  sections.push(historySection(results.history), '');
  for (const result of modes)
    sections.push(
      `## ${modeHeadings[result.mode]}`,
      '',
      result.description,
      '',
      modeTable(result),
      '',
      'Rounds:',
      '',
      roundsDetail(result),
      '',
    );
  const sizings = modes.flatMap((result) =>
    result.sizing === undefined ? [] : [{ mode: result.mode, facts: result.sizing }],
  );
  const cores = /^CPU: (\d+) cores/.exec(results.machine[0] ?? '')?.[1] ?? String(os.cpus().length);
  if (sizings.length > 0) sections.push(sizingSection(sizings, cores), '');
  sections.push(
    '## What was changed to reach it',
    '',
    `Kept by hand in ${method}, beside the method and why each missed goal is missed.`,
    '',
  );
  return sections.join('\n');
}

/**
 * Writes BENCHMARKS.md, its plots (docs/benchmarks/*.svg) and bench/results.json under `root`; the
 * results file as Prettier would write it, since `npm run format:check` checks bench/.
 */
export async function writeReport(results: Results, root: string): Promise<string[]> {
  const plotDir = path.join(root, 'docs/benchmarks');
  fs.mkdirSync(plotDir, { recursive: true });
  fs.mkdirSync(path.join(root, 'bench'), { recursive: true });
  const drawn = plots(results.modes);
  for (const plot of drawn) fs.writeFileSync(path.join(plotDir, plot.name), plot.svg);
  const files = drawn.map((plot) => ({ file: `docs/benchmarks/${plot.name}`, title: plot.title }));
  const written = [path.join(root, 'BENCHMARKS.md'), path.join(root, 'bench/results.json')];
  fs.writeFileSync(written[0]!, benchmarksMarkdown(results, files));
  const options = { ...(await prettier.resolveConfig(written[1]!)), filepath: written[1]! };
  fs.writeFileSync(written[1]!, await prettier.format(JSON.stringify(results), options));
  return [...written, ...files.map(({ file }) => path.join(root, file))];
}
