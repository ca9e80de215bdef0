/**
 * `npm run bench`: the embedded default, and with DATABASE_URL and REDIS_URL production and scaled
 * mode too; a complete run writes bench/results.json and, from it, BENCHMARKS.md and its plots
 * (bench/render.ts writes them again from the file). Options: --rounds=3 --seconds=4 --only=1,4
 * (a partial run: nothing written; --rounds=1 allowed) --mode=embedded|production|scaled --profile=<figure>.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { embeddedBackend, productionBackend, scaledBackend, type Backend, type Mode } from './backends.js';
import { idleSeconds, progress, row, type BenchContext, type Row } from './context.js';
import { figureFrameworkOverhead } from './figures/01-framework-overhead.js';
import { figureLogin } from './figures/02-login.js';
import { figureRegister } from './figures/03-register.js';
import { figureMessageRequests } from './figures/04-message-requests.js';
import { figureLivenessUnderLogin } from './figures/05-liveness.js';
import { figureSessionCheck } from './figures/08-session-check.js';
import { figureBetterAuth } from './figures/09-better-auth.js';
import { figureSizing } from './figures/10-sizing.js';
import { figureGrowth, growthSeconds, growthSizes } from './figures/11-growth.js';
import { figureIntrospection } from './figures/12-introspection.js';
import { figureManyStores } from './figures/13-many-stores.js';
import { figureImport } from './figures/14-import.js';
import { figureWebhooks } from './figures/15-webhooks.js';
import { figureSearch } from './figures/16-search.js';
import { figureSecondStepSignIn } from './figures/17-second-step.js';
import { loadAverageText, measureHost } from './proc.js';
import { statisticsDelayMs } from './operations.js';
import { summarizeProfileFolder } from './profile.js';
import { figureMemoryRow } from './figures/06-memory.js';
import { figureStartRow } from './figures/07-start.js';
import { machineFacts, modeTable, roundsDetail, summaryTable, writeReport } from './report.js';
import { historyEntries, historyKeep, modeResult, previousHistory, type ModeResult } from './results.js';
import { pgbouncerBinary } from '../test/helpers/pgbouncer.js';
import { repoRoot } from './servers.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '4' },
    only: { type: 'string' },
    mode: { type: 'string' },
    profile: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
// A partial run (--only) may take a single round to check a figure; a full one needs a median of 3.
const minimumRounds = values.only === undefined && values.profile === undefined ? 3 : 1;
if (!(rounds >= minimumRounds) || !(seconds > 0))
  throw new Error(`--rounds must be at least ${minimumRounds} and --seconds positive`);

// Expected in a benchmark that registers more customers than the default hourly send budget.
const expectedLogPattern = /hourly message budget spent/;

/** A figure whose service logged errors (but the expected budget notice) misses its goal whatever its numbers. */
function applyServiceErrors(rows: Row[], kinds: Record<string, number>): void {
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

/** A figure that threw: reported as failed, with its error, where its rows would be. */
function failedFigureRow(id: string, error: unknown): Row {
  const message = error instanceof Error ? error.message : String(error);
  return row(
    id,
    `figure ${id} failed: ${message.slice(0, 300)}`,
    '',
    Number.NaN,
    { text: 'runs to its end', met: false },
    'n/a',
  );
}

const figureOrder = ['1', '4', '3', '2', '8', '12', '5', '9', '10', '11', '13', '14', '15', '16', '17'] as const;
type FigureId = (typeof figureOrder)[number];

/**
 * Each figure, and roughly how long it takes in one mode (s): its measured loads plus what it does
 * besides (starts, warm-ups, settling, seeding), from runs on a quiet 2-core machine.
 */
const figures: Record<FigureId, [(context: BenchContext) => Promise<Row | Row[]>, (r: number, s: number) => number]> = {
  '1': [figureFrameworkOverhead, (r, s) => 2 * r * 2 * s + 10 + memorySeconds(2 * r)],
  '4': [figureMessageRequests, (r, s) => 4 * r * (s + 2) + 10 + memorySeconds(4 * r)],
  '3': [figureRegister, (r, s) => r * (3 * s + 3) + 10 + memorySeconds(r)],
  '2': [figureLogin, (r, s) => r * (3 * s + 3) + 5 * s + 10 + memorySeconds(r)],
  '8': [figureSessionCheck, (r, s) => 2 * r * (2 * s + 1) + 10 + memorySeconds(2 * r)],
  '12': [figureIntrospection, (r, s) => r * (2 * s + 1) + 10 + memorySeconds(r)],
  '5': [figureLivenessUnderLogin, (r, s) => r * (2 * s + 1) + 2 + 10 + memorySeconds(r)],
  '9': [figureBetterAuth, (r, s) => r * (6 * s + 7) + 30 + memorySeconds(0)],
  '10': [figureSizing, (r, s) => r * 2 * (s + 2) + 3 * (statisticsDelayMs / 1000 + 2) + 10 + memorySeconds(0)],
  // Seeding a million customers and sessions takes a minute or more.
  '11': [figureGrowth, (r) => 75 + growthSizes.length * r * 2 * (growthSeconds + 2) + 10 + memorySeconds(0)],
  // Two deployments seeded and started twice each; per round both loads of both, then B's flood spans.
  '13': [
    figureManyStores,
    (r, s) => 150 + r * (2 * (2 * s + 1 + 17) + 2 * s) + r * 3 * (5 * s + 3) + 20 + memorySeconds(0),
  ],
  // The hashes (once per machine), the file, the import (a few minutes), the re-hashing sign-ins, the rounds.
  '14': [figureImport, (r, s) => 30 + 240 + 30 + r * 2 * (s + 1) + 10 + memorySeconds(0)],
  '15': [figureWebhooks, (r, s) => 3 * r * s + 30 + memorySeconds(0)],
  '16': [figureSearch, (r, s) => 40 + r * s + memorySeconds(0)],
  // Setting up 1,500 customers with a second step through the API (90 s on a busy host).
  '17': [figureSecondStepSignIn, (r, s) => 90 + r * 2 * (s + 1) + 10 + memorySeconds(0)],
};

/** Figure 6's readings: about 17 s of settling after each round that reads memory, and the idle wait at the end. */
function memorySeconds(settledReadings: number): number {
  return 17 * settledReadings + idleSeconds + 5;
}

const selected = new Set<string>(
  values.profile !== undefined ? [values.profile] : (values.only?.split(',') ?? figureOrder),
);
for (const id of selected)
  if (!(figureOrder as readonly string[]).includes(id))
    throw new Error(`no figure ${id} (figures: 1-5 and 8-17; 6 and 7 are measured throughout)`);
const complete = selected.size === figureOrder.length;

const databaseUrl = process.env['DATABASE_URL'];
const redisUrl = process.env['REDIS_URL'];
const modes: Mode[] =
  values.mode !== undefined
    ? [values.mode as Mode]
    : databaseUrl !== undefined && redisUrl !== undefined
      ? ['embedded', 'production', 'scaled']
      : ['embedded'];
if (modes.includes('production') && (databaseUrl === undefined || redisUrl === undefined))
  throw new Error('production mode needs DATABASE_URL and REDIS_URL');
if (modes.includes('scaled') && databaseUrl === undefined) throw new Error('scaled mode needs DATABASE_URL');
// Scaled mode comes last: a missing pooler must stop the run before it starts, not after the other modes.
if (modes.includes('scaled') && !fs.existsSync(pgbouncerBinary))
  throw new Error(
    `scaled mode runs PgBouncer, which is not installed (${pgbouncerBinary} is missing): apt-get install pgbouncer, or --mode=embedded|production`,
  );
/** Scaled mode asks what the pooler and the cluster cost: the figures that touch both on every request. */
const modeFigures: Record<Mode, readonly FigureId[]> = {
  embedded: figureOrder,
  production: figureOrder,
  scaled: ['2', '8', '12'],
};

// The service is measured as production runs it: compiled, not through tsx.
console.log('building the service (npm run build)…');
execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });

const openBackends = new Set<Backend>();
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const)
  process.once(signal, () => {
    void Promise.allSettled([...openBackends].map((backend) => backend.cleanup())).finally(() => process.exit(code));
  });

async function runMode(mode: Mode): Promise<ModeResult> {
  const backend =
    mode === 'embedded'
      ? embeddedBackend()
      : mode === 'production'
        ? await productionBackend(databaseUrl!, redisUrl!)
        : await scaledBackend(databaseUrl!);
  openBackends.add(backend);
  const profileDir =
    values.profile === undefined ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-bench-profile-'));
  const context: BenchContext = {
    mode,
    backend,
    rounds,
    seconds,
    ...(profileDir !== undefined && { profile: { figure: values.profile!, dir: profileDir } }),
    customers: [],
    password: 'bench-Passw0rd-42',
    rss: [],
    starts: [],
    windows: [],
    serviceLogs: {},
    hostUse: {},
    quiet: { waitedMs: 0, noisyRounds: 0, rounds: 0 },
  };
  progress(context, backend.description);
  try {
    const rows: Row[] = [];
    for (const id of figureOrder) {
      if (!selected.has(id) || !modeFigures[mode].includes(id)) continue;
      progress(context, `figure ${id}: starting (load average ${loadAverageText()})`);
      const measured = measureHost();
      let figureRows: Row[];
      try {
        figureRows = [await figures[id][0](context)].flat();
      } catch (error) {
        // A figure that fails costs its own row, not the hour of figures measured before it.
        progress(context, `figure ${id}: FAILED: ${error instanceof Error ? error.stack : String(error)}`);
        figureRows = [failedFigureRow(id, error)];
        process.exitCode = 1;
      }
      applyServiceErrors(figureRows, context.serviceLogs[id] ?? {});
      rows.push(...figureRows);
      const use = (context.hostUse[id] = measured());
      const servers = mode === 'embedded' ? '' : `, PostgreSQL + Redis ${(use.servers * 100).toFixed(0)}%`;
      progress(
        context,
        `figure ${id}: done; other processes took ${(use.others * 100).toFixed(0)}% of the host's CPU meanwhile${servers}`,
      );
    }
    rows.sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
    if (context.rss.length > 0) rows.push(figureMemoryRow(mode, context.rss));
    if (context.starts.length > 1) rows.push(figureStartRow(context.starts));
    if (profileDir !== undefined) {
      const windows = context.windows.filter((window) => window.figure === values.profile);
      for (const summary of summarizeProfileFolder(profileDir, windows)) console.log(summary);
      console.log(`profiles kept in ${profileDir}`);
    }
    return modeResult(context, backend.description, rows);
  } finally {
    await backend.cleanup();
    openBackends.delete(backend);
  }
}

const started = performance.now();
const loadAtStart = loadAverageText();
console.log(
  [
    'Storefront Auth benchmark',
    ...machineFacts().map((fact) => `- ${fact}`),
    `- Load average (1/5/15 min) at the start: ${loadAtStart}`,
  ].join('\n'),
);
const estimate = modes.reduce(
  (total, mode) =>
    total +
    figureOrder
      .filter((id) => selected.has(id) && modeFigures[mode].includes(id))
      .reduce((sum, id) => sum + figures[id][1](rounds, seconds), 0),
  0,
);
console.log(`- Estimated run time: about ${Math.ceil(estimate / 60)} minutes (${modes.join(', ')})`);
const results: ModeResult[] = [];
for (const mode of modes) results.push(await runMode(mode));
const minutes = (performance.now() - started) / 60_000;

for (const result of results)
  console.log(`\n== ${result.mode}: ${result.description}\n\n${modeTable(result)}\n\nRounds:\n${roundsDetail(result)}`);
if (results.length > 1) console.log(`\n== goals at a glance\n\n${summaryTable(results)}`);
console.log(`\nfinished in ${minutes.toFixed(1)} minutes`);
if (complete && values.profile === undefined) {
  const date = new Date().toISOString();
  const settings = { rounds, seconds, minutes, loadAtStart, loadAtEnd: loadAverageText() };
  const history = [...historyEntries(date, results), ...previousHistory(repoRoot)].slice(0, historyKeep);
  const report = { date, settings, machine: machineFacts(), modes: results, history };
  for (const file of await writeReport(report, repoRoot)) console.log(`wrote ${file}`);
} else {
  console.log('partial run (--only or --profile): BENCHMARKS.md and bench/results.json left as they were');
}
