/**
 * `npm run bench`: the embedded default, and with DATABASE_URL and REDIS_URL production and scaled
 * mode too; writes BENCHMARKS.md and
 * bench/results.json (the figures as data, from which the plots are drawn). Options: --rounds=3 --seconds=4 --only=1,4 (no
 * BENCHMARKS.md; --rounds=1 allowed) --mode=embedded|production|scaled --profile=<figure>.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { embeddedBackend, productionBackend, scaledBackend, type Backend, type Mode } from './backends.js';
import { applyServiceErrors, idleSeconds, progress, type BenchContext, type Row } from './context.js';
import { figureLivenessUnderLogin, figureLogin, figureRegister } from './figures-hashing.js';
import {
  figureFrameworkOverhead,
  figureIntrospection,
  figureMessageRequests,
  figureSessionCheck,
} from './figures-http.js';
import { figureBetterAuth } from './figures-peers.js';
import { figureGrowth, growthSeconds, growthSizes } from './figures-growth.js';
import { figureImport } from './figures-import.js';
import { figureWebhooks } from './figures-webhooks.js';
import { figureSearch } from './figures-search.js';
import { figureSecondStepSignIn } from './figures-two-factor.js';
import { figureManyStores } from './figures-stores.js';
import { figureSizing } from './figures-sizing.js';
import { loadAverageText, measureHost } from './host.js';
import { statisticsDelayMs } from './operations.js';
import { summarizeProfileFolder } from './profile.js';
import { pgbouncerBinary } from './scaled-servers.js';
import { repoRoot } from './servers.js';
import {
  machineFacts,
  modeTable,
  roundsDetail,
  rssRow,
  startRow,
  summaryTable,
  writeBenchmarksFile,
  writeResultsFile,
  type ModeResult,
} from './report.js';

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

const figureOrder = ['1', '4', '3', '2', '8', '12', '5', '9', '10', '11', '13', '14', '15', '16', '17'] as const;
type FigureId = (typeof figureOrder)[number];
const figureRuns: Record<FigureId, (context: BenchContext) => Promise<Row | Row[]>> = {
  '1': figureFrameworkOverhead,
  '4': figureMessageRequests,
  '3': figureRegister,
  '2': figureLogin,
  '8': figureSessionCheck,
  '12': figureIntrospection,
  '5': figureLivenessUnderLogin,
  '9': figureBetterAuth,
  '10': figureSizing,
  '11': figureGrowth,
  '13': figureManyStores,
  '14': figureImport,
  '15': figureWebhooks,
  '16': figureSearch,
  '17': figureSecondStepSignIn,
};
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
if (modes.includes('production') && (databaseUrl === undefined || redisUrl === undefined)) {
  throw new Error('production mode needs DATABASE_URL and REDIS_URL');
}
if (modes.includes('scaled') && databaseUrl === undefined) throw new Error('scaled mode needs DATABASE_URL');
// Scaled mode comes last in a full run: a missing pooler must stop the run before it starts, not
// after the other modes' forty minutes.
if (modes.includes('scaled') && !fs.existsSync(pgbouncerBinary)) {
  throw new Error(
    `scaled mode runs PgBouncer, which is not installed (${pgbouncerBinary} is missing): apt-get install pgbouncer, or --mode=embedded|production`,
  );
}
/** Scaled mode asks what the pooler and the cluster cost: the figures that touch both on every request. */
const modeFigures: Record<Mode, readonly FigureId[]> = {
  embedded: figureOrder,
  production: figureOrder,
  scaled: ['2', '8', '12'],
};

/**
 * Roughly how long each figure takes in one mode, in seconds: its measured loads (rounds × seconds
 * × loads per round) plus what it does besides (starts, warm-ups, settling, seeding). From runs on
 * a quiet 2-core machine; a busy one adds up to a minute of waiting for quiet.
 */
const figureSeconds: Record<FigureId, (rounds: number, seconds: number) => number> = {
  '1': (r, s) => 2 * r * 2 * s + 10 + memorySeconds(2 * r),
  '4': (r, s) => 4 * r * (s + 2) + 10 + memorySeconds(4 * r),
  '3': (r, s) => r * (3 * s + 3) + 10 + memorySeconds(r),
  '2': (r, s) => r * (3 * s + 3) + 5 * s + 10 + memorySeconds(r),
  '8': (r, s) => 2 * r * (2 * s + 1) + 10 + memorySeconds(2 * r),
  '12': (r, s) => r * (2 * s + 1) + 10 + memorySeconds(r),
  '5': (r, s) => r * (2 * s + 1) + 2 + 10 + memorySeconds(r),
  '9': (r, s) => r * (6 * s + 7) + 30 + memorySeconds(0),
  '10': (r, s) => r * 2 * (s + 2) + 3 * (statisticsDelayMs / 1000 + 2) + 10 + memorySeconds(0),
  // Seeding a million customers and sessions takes a minute or more.
  '11': (r) => 75 + growthSizes.length * r * 2 * (growthSeconds + 2) + 10 + memorySeconds(0),
  // Two deployments seeded (a million customers and sessions take a minute or two) and started
  // twice each; per round both run logins and session checks and settle (the larger two more
  // session loads), then store B's three flood spans; the store changes take about 20 s.
  '13': (r, s) => 150 + r * (2 * (2 * s + 1 + 17) + 2 * s) + r * 3 * (5 * s + 3) + 20 + memorySeconds(0),
  // The hashes (once per machine) and the file, the import itself (a few minutes), the first
  // sign-ins that re-hash, then the login rounds.
  '14': (r, s) => 30 + 240 + 30 + r * 2 * (s + 1) + 10 + memorySeconds(0),
  // Steady events, then the receiver down and up for as long, then the backlog's drain.
  '15': (r, s) => 3 * r * s + 30 + memorySeconds(0),
  // The import of 100,000 customers (half a minute or less), then the searches.
  '16': (r, s) => 40 + r * s + memorySeconds(0),
  // Setting up 1,500 customers with a second step through the API (90 s on a busy 2-core host),
  // then both loads per round.
  '17': (r, s) => 90 + r * 2 * (s + 1) + 10 + memorySeconds(0),
};

/**
 * Figure 6's readings: about 17 s of settling after each round that reads memory (10 s of quiet,
 * which the service's own collection about 7 s in starts again), and at a figure's end the wait for
 * its idle reading.
 */
function memorySeconds(settledReadings: number): number {
  return 17 * settledReadings + idleSeconds + 5;
}

// The service is measured as production runs it: compiled, not through tsx.
console.log('building the service (npm run build)…');
execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });

const openBackends = new Set<Backend>();
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.once(signal, () => {
    void Promise.allSettled([...openBackends].map((backend) => backend.cleanup())).finally(() => process.exit(code));
  });
}

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
    ...(profileDir === undefined ? {} : { profile: { figure: values.profile!, dir: profileDir } }),
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
      const figureRows = [await figureRuns[id](context)].flat();
      applyServiceErrors(figureRows, context.serviceLogs[id] ?? {});
      rows.push(...figureRows);
      const use = measured();
      context.hostUse[id] = use;
      progress(
        context,
        `figure ${id}: done; other processes took ${(use.others * 100).toFixed(0)}% of the host's CPU meanwhile${mode !== 'embedded' ? `, PostgreSQL + Redis ${(use.servers * 100).toFixed(0)}%` : ''}`,
      );
    }
    rows.sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
    if (context.rss.length > 0) rows.push(rssRow(mode, context.rss));
    if (context.starts.length > 1) rows.push(startRow(context.starts));
    if (profileDir !== undefined) {
      const windows = context.windows.filter((window) => window.figure === values.profile);
      for (const summary of summarizeProfileFolder(profileDir, windows)) console.log(summary);
      console.log(`profiles kept in ${profileDir}`);
    }
    return { mode, description: backend.description, rows, context };
  } finally {
    await backend.cleanup();
    openBackends.delete(backend);
  }
}

const started = performance.now();
const loadAtStart = loadAverageText();
console.log(
  ['Storefront Auth benchmark', ...machineFacts(), `- Load average (1/5/15 min) at the start: ${loadAtStart}`].join(
    '\n',
  ),
);
const estimate = modes.reduce(
  (total, mode) =>
    total +
    figureOrder
      .filter((id) => selected.has(id) && modeFigures[mode].includes(id))
      .reduce((sum, id) => sum + figureSeconds[id](rounds, seconds), 0),
  0,
);
console.log(`- Estimated run time: about ${Math.ceil(estimate / 60)} minutes (${modes.join(', ')})`);
const results: ModeResult[] = [];
for (const mode of modes) results.push(await runMode(mode));
const minutes = (performance.now() - started) / 60_000;

for (const result of results) {
  console.log(`\n== ${result.mode}: ${result.description}\n\n${modeTable(result)}\n\nRounds:\n${roundsDetail(result)}`);
}
if (results.length > 1) console.log(`\n== goals at a glance\n\n${summaryTable(results)}`);
console.log(`\nfinished in ${minutes.toFixed(1)} minutes`);
if (complete && values.profile === undefined) {
  console.log(
    `wrote ${writeBenchmarksFile(results, { rounds, seconds, minutes, loadAtStart, loadAtEnd: loadAverageText() })}`,
  );
  console.log(`wrote ${writeResultsFile(results)}`);
} else {
  console.log('partial run (--only or --profile): BENCHMARKS.md left as it was');
}
