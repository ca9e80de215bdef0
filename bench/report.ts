import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Mode } from './backends.js';
import { format, idleSeconds, median, type BenchContext, type Row, type RssSample } from './context.js';
import { growthSeconds, growthSizes } from './figures-growth.js';
import { importedCustomers } from './figures-import.js';
import { storeCount } from './figures-stores.js';
import { statisticsDelayMs } from './operations.js';
import { repoRoot, type MemoryReading } from './servers.js';
import { sizingSection } from './sizing-report.js';

export interface ModeResult {
  mode: Mode;
  description: string;
  rows: Row[];
  context: BenchContext;
}

/** Embedded: the service with its database server; production: one instance, its database elsewhere. */
const rssLimitMb: Record<Mode, number> = { embedded: 200, production: 150, scaled: 150 };
const rssFlatShare = 0.1;

/** The load a round's reading belongs to: `1b` of `1b round 2`, nothing of `round 2`. */
const loadOf = (when: string) => when.replace(/ ?round \d+$/, '');

/**
 * Figure 6: the most memory at idle over the run, and flat when each load's settled reading after
 * its last round is within 10% of the one after its first (BENCHMARKS.md says how it is read).
 */
export function rssRow(mode: Mode, samples: RssSample[]): Row {
  const limitMb = rssLimitMb[mode];
  const most = (readings: { sample: RssSample; reading: MemoryReading }[]) =>
    readings.reduce((top, next) => (next.reading.mb > top.reading.mb ? next : top));
  const settledMax = most(samples.map((sample) => ({ sample, reading: sample.settledAt })));
  const idleReadings = samples.flatMap((sample) =>
    sample.idleAt === undefined ? [] : [{ sample, reading: sample.idleAt }],
  );
  const idleMax = idleReadings.length === 0 ? undefined : most(idleReadings);
  const peakMax = Math.max(...samples.map((sample) => sample.peak.mb));
  const figures = [...new Set(samples.map((sample) => sample.figure))];
  const growth: string[] = [];
  const peaks: string[] = [];
  const idle: string[] = [];
  const grows: string[] = [];
  for (const figure of figures) {
    const rounds = samples.filter((sample) => sample.figure === figure && sample.when !== 'end');
    const end = samples.find((sample) => sample.figure === figure && sample.when === 'end');
    if (end?.idleAt !== undefined) idle.push(`fig ${figure}: ${format(end.idleAt.mb)}`);
    if (rounds.length === 0) continue;
    // One load's rounds against each other: a figure that runs two loads in one process (1a, then
    // 1b) may hold more for the second (its counter windows), which is not growth across rounds.
    for (const load of new Set(rounds.map((sample) => loadOf(sample.when)))) {
      const ofLoad = rounds.filter((sample) => loadOf(sample.when) === load);
      const first = ofLoad[0]!.settledAt.mb;
      const last = ofLoad[ofLoad.length - 1]!.settledAt.mb;
      if (last > first * (1 + rssFlatShare))
        grows.push(`${load === '' ? `fig ${figure}` : load} ${format(first)}→${format(last)}`);
    }
    growth.push(
      `fig ${figure}: ${rounds.map((sample) => format(sample.settledAt.mb)).join('→')}${end === undefined ? '' : `, end ${format(end.settledAt.mb)}`}`,
    );
    peaks.push(`fig ${figure}: ${rounds.map((sample) => format(sample.peak.mb)).join('→')}`);
  }
  const unsettled = samples.filter((sample) => !sample.settled).length;
  const parts = (reading: MemoryReading) =>
    `service ${format(reading.serviceMb)} MB + database ${format(reading.databaseMb)} MB`;
  const value = idleMax?.reading.mb ?? Number.NaN;
  const flat = grows.length === 0;
  return {
    id: '6',
    label: `service RSS + PSS of its database server processes (MB) at idle, ${idleSeconds} s after each figure's last request: the most over the run; flat = settled after a load's last round within 10% of after its first`,
    unit: 'MB',
    value,
    baseline: settledMax.reading.mb,
    baselineLabel: 'settled, 5 s after a round',
    goal: { text: `≤ ${limitMb} MB and flat`, met: value <= limitMb && flat },
    non2xx: 0,
    errors: 0,
    rounds: `idle ${idle.join('; ')}; settled ${growth.join('; ')}`,
    notes: [
      flat ? 'flat across rounds' : `GROWS across rounds: ${grows.join(', ')}`,
      ...(idleMax === undefined
        ? []
        : [`the most at idle was ${parts(idleMax.reading)} (fig ${idleMax.sample.figure})`]),
      `the most settled was ${parts(settledMax.reading)} (fig ${settledMax.sample.figure} ${settledMax.sample.when})`,
      `right after the load, for information: ${peaks.join('; ')} (at most ${format(peakMax)} MB)`,
      ...(unsettled === 0 ? [] : [`${unsettled} readings taken when the 40 s wait to settle ran out`]),
    ],
  };
}

const firstStartLimitSeconds = 5;
const restartLimitSeconds = 2;

/**
 * Figure 7: the first start on an empty DATA_DIR (embedded: initdb, the server's start, the
 * migrations) and the median of the later ones, each timed from spawning the process to its
 * first answer.
 */
export function startRow(starts: number[]): Row {
  const [first, ...restarts] = starts as [number, ...number[]];
  const restart = median(restarts);
  return {
    id: '7',
    label: 'start (s): the first on an empty data folder; baseline: the median restart',
    unit: 's',
    value: first,
    baseline: restart,
    baselineLabel: 'restart',
    goal: {
      text: `first ≤ ${firstStartLimitSeconds} s, restart ≤ ${restartLimitSeconds} s`,
      met: first <= firstStartLimitSeconds && restart <= restartLimitSeconds,
    },
    non2xx: 0,
    errors: 0,
    rounds: starts.map((seconds) => format(seconds, 1)).join(', '),
    notes: [],
  };
}

/**
 * Two decimals, cut toward the goal's wrong side, so a missed goal never reads as met: 0.849
 * shows as 0.84 against "at least 0.85", and a latency ratio (an upper bound) 2.001 as 2.01.
 */
function ratioText(row: Row): string {
  const ratio = row.ratio!;
  return (row.unit === 'ms' ? Math.ceil(ratio * 100) / 100 : Math.floor(ratio * 100) / 100).toFixed(2);
}

function valueText(row: Row): string {
  const digits = row.unit === 'ms' || row.value < 1000 ? 1 : 0;
  return `${format(row.value, digits)} ${row.unit}`;
}

function yardstickText(row: Row): string {
  if (row.baseline === undefined) return '—';
  const digits = row.unit === 'ms' || row.baseline < 1000 ? 1 : 0;
  return `${format(row.baseline, digits)} ${row.unit} (${row.baselineLabel ?? ''})`;
}

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
  const shares =
    row.id === '6' ? Object.values(result.context.hostUse) : [result.context.hostUse[row.id.replace(/[a-z]$/, '')]];
  const worst = Math.max(0, ...shares.map((share) => share?.others ?? 0));
  return worst > noisyShare ? `${format(worst * 100)}% ⚠` : `${format(worst * 100)}%`;
}

export function modeTable(result: ModeResult): string {
  const lines = [
    '| # | Figure | Service | Yardstick | Ratio | Goal | Met | Host CPU used by others |',
    '|---|---|---|---|---|---|---|---|',
    ...result.rows.map(
      (row) =>
        `| ${row.id} | ${row.label} | ${valueText(row)} | ${yardstickText(row)} | ${row.ratio === undefined ? '—' : ratioText(row)} | ${row.goal.text} | ${metText(row)} | ${noiseText(result, row)} |`,
    ),
  ];
  if (result.rows.some((row) => noiseText(result, row).endsWith('⚠'))) {
    lines.push(
      '',
      `⚠ Other processes took more than ${noisyShare * 100}% of the host's CPU while this figure ran: its numbers (and ratios, whose two sides ran at different moments) are unreliable; rerun on a quiet host.`,
    );
  }
  return lines.join('\n');
}

export function roundsDetail(result: ModeResult): string {
  const lines = result.rows.map((row) => {
    const notes = row.notes.length === 0 ? '' : ` — ${row.notes.join('; ')}`;
    return `- **${row.id}** ${row.rounds}${notes}`;
  });
  const use = Object.entries(result.context.hostUse);
  if (use.length > 0) {
    const servers =
      result.mode !== 'embedded'
        ? ' (PostgreSQL + Redis + PgBouncer separately: ' +
          use.map(([id, share]) => `fig ${id} ${(share.servers * 100).toFixed(0)}%`).join(', ') +
          ')'
        : '';
    lines.push(
      `- CPU taken by processes outside the benchmark while each figure ran (share of all cores): ${use.map(([id, share]) => `fig ${id} ${(share.others * 100).toFixed(0)}%`).join(', ')}${servers}`,
    );
  }
  const quiet = result.context.quiet;
  lines.push(
    `- Before each measured round the benchmark waited (up to 10 s) for other processes to use under 15% of the CPU: ${format(quiet.waitedMs / 1000, 1)} s waited in all; ${quiet.noisyRounds} of ${quiet.rounds} rounds started on a busy host anyway.`,
  );
  for (const [figure, kinds] of Object.entries(result.context.serviceLogs)) {
    const entries = Object.entries(kinds);
    if (entries.length === 0) continue;
    lines.push(
      `- service log lines at warn or above during figure ${figure}: ${entries.map(([kind, count]) => `${count}× \`${kind}\``).join('; ')}`,
    );
  }
  return lines.join('\n');
}

export function summaryTable(results: ModeResult[]): string {
  const ids = results[0]?.rows.map((row) => row.id) ?? [];
  const header = `| # | Goal | ${results.map((result) => result.mode).join(' | ')} |`;
  const lines = [header, `|---|---|${results.map(() => '---|').join('')}`];
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
    `- Date: ${new Date().toISOString()}`,
    `- CPU: ${os.cpus().length} cores, ${model}`,
    `- Memory: ${format(os.totalmem() / 1024 ** 3, 1)} GiB`,
    `- Node.js ${process.version} on ${os.type()} ${os.release()}`,
  ];
}

const changesHeading = '## What was changed to reach it';
const changesPlaceholder =
  '_Maintainers: note here what was changed in the service to reach these figures (nothing yet)._';

/** The maintainers' section of the existing file, carried over when the file is rewritten. */
function existingChanges(file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return changesPlaceholder;
  }
  const start = text.indexOf(changesHeading);
  if (start < 0) return changesPlaceholder;
  const rest = text.slice(start + changesHeading.length);
  const next = rest.search(/\n## /);
  const body = (next < 0 ? rest : rest.slice(0, next)).trim();
  return body === '' ? changesPlaceholder : body;
}

const historyHeading = '## History';
const historyKeep = 12;
/** The request kinds the history follows: what every request pays, then a session, then a login. */
const historyFigures = [
  ['1a', 'probe'],
  ['8b', 'session check'],
  ['12a', 'introspection'],
  ['9c', 'login'],
] as const;

/** One table row per mode of this run: per request kind, answers a second, its ratio, its main-thread CPU. */
function historyRows(results: ModeResult[], date: string): string[] {
  return results.map((result) => {
    const cells = historyFigures.map(([id]) => {
      const row = result.rows.find((candidate) => candidate.id === id);
      if (row === undefined) return '—';
      const ratio = row.ratio === undefined ? '' : ` · ${format(row.ratio, 2)}`;
      const cpu = row.mainMs === undefined ? '' : ` · ${format(row.mainMs, row.mainMs < 1 ? 3 : 2)} ms`;
      return `${format(row.value, row.value < 1000 ? 1 : 0)}/s${ratio}${cpu}`;
    });
    return `| ${date} | ${result.mode} | ${cells.join(' | ')} |`;
  });
}

/** The history's rows of the existing file, newest first, so a run is read beside the ones before. */
function existingHistory(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const start = text.indexOf(historyHeading);
  if (start < 0) return [];
  const rest = text.slice(start + historyHeading.length);
  const next = rest.search(/\n## /);
  return (next < 0 ? rest : rest.slice(0, next)).split('\n').filter((line) => /^\| \d{4}-/.test(line));
}

function historySection(results: ModeResult[], file: string): string {
  const rows = [
    ...historyRows(results, new Date().toISOString().slice(0, 16).replace('T', ' ')),
    ...existingHistory(file),
  ];
  return [
    historyHeading,
    '',
    `Each full run adds its rows at the top (the last ${historyKeep} are kept): per request kind, answers a second · the ratio its goal compares · the service's main-thread CPU per answer. A probe or a session check that costs more main-thread time than in the run before has grown; compare rows of the same mode, on the same host.`,
    '',
    `| Run | Mode | ${historyFigures.map(([id, name]) => `${name} (${id})`).join(' | ')} |`,
    `|---|---|${historyFigures.map(() => '---|').join('')}`,
    ...rows.slice(0, historyKeep),
  ].join('\n');
}

const modeHeadings: Record<ModeResult['mode'], string> = {
  embedded: 'Embedded default',
  production: 'Production mode',
  scaled: 'Production mode behind PgBouncer and on a Redis Cluster',
};

export function writeBenchmarksFile(
  results: ModeResult[],
  settings: { rounds: number; seconds: number; minutes: number; loadAtStart: string; loadAtEnd: string },
): string {
  const file = path.join(repoRoot, 'BENCHMARKS.md');
  const changes = existingChanges(file);
  const sections = [
    '# Benchmarks',
    '',
    `Written by \`npm run bench\` (bench/run.ts); rerun it rather than editing the figures by hand. Each figure is the median of ${settings.rounds} rounds of ${settings.seconds} s; every ratio compares two medians from the same run. The whole run took ${format(settings.minutes, 1)} minutes.`,
    '',
    '## Machine',
    '',
    ...machineFacts(),
    `- Load average (1/5/15 min): ${settings.loadAtStart} at the start, ${settings.loadAtEnd} at the end`,
    '',
    '## How it is measured',
    '',
    "- The service runs as a child process (`node dist/cli/main.js serve`, built by `npm run build` at the start of the run, PORT=0, LOG_LEVEL=warn, TRUST_PROXY=true); each figure gets a fresh process, so none inherits another's in-process counters or backlog (in production mode the Redis db is flushed between figures). The database and the customers registered in figure 3 carry over.",
    "- autocannon runs in the benchmark process over loopback, sharing the 2 cores with the service (figure 5's probes come from a process of their own, below). Every request carries its own never-reused X-Forwarded-For address, so per-address limits cannot answer 429 for the benchmark's sake; any non-2xx answer is counted and shown, and a figure with non-2xx answers does not meet its goal.",
    "- Yardsticks run in their own child processes. Figure 1: Fastify with no plugins answering the same JSON. Figures 2 and 3: the HTTP login ceiling (bench/login-ceiling.ts), Fastify with @fastify/cookie and the service's own hashing threads (src/auth/rules/hash-pool.ts) and argon2id parameters (m=19456, t=2, p=1), no database: its login verifies the password against one PHC hash held in memory and sets a random session cookie, its registration hashes and sets one; login must reach 90% of its rate on the embedded default and 85% in production (where PostgreSQL and Redis share the cores), with a p99 at most 1.5 times the ceiling's. Raw argon2id on the same threads, 2 operations at a time and no HTTP, is shown as information. Service, ceiling and raw rounds alternate.",
    "- Figure 4 uses distinct unregistered emails, first closed-loop with autocannon (4a, 4b: 100 connections sending as fast as answers come), then open-loop (4c, 4d: a Poisson stream of arrivals at half the closed-loop throughput just measured, over at most 100 keep-alive connections, timed from each arrival; autocannon's own fixed rate fires all connections on one timer, in bursts). After each round the benchmark waits until the service is idle and reports how long the work behind the 202s kept it busy. ",
    "- Figure 5 probes /health/live from a child process of its own (bench/probe-load.ts), so the benchmark's event loop, busy driving the logins, adds nothing to the probes' latency: open-loop, a Poisson stream of 200 arrivals a second over at most 10 keep-alive connections, every answer's latency timed from its arrival; first alone (the idle p99), then while 32 connections log in as fast as answers come, after 2 s of logins that warm the fresh service up (as figures 1–4 warm theirs). The goal compares the two p99s from the same rounds.",
    `- Figure 6 reads memory from /proc: the service's RSS plus the PSS of every process it started (in embedded mode the PostgreSQL server and its backends; PSS shares the pages they have in common fairly). After every measured round it is read twice: right after the load (with any backlog still queued: information only) and once the service and its descendants have settled, using under 10% of one core in forty 250 ms windows in a row (10 s, longer than the service waits before its own collection after a burst, src/idle-collection.ts, about 7 s of quiet; the collection breaks the quiet, so the reading follows it), waiting at most 60 s. At the end of each figure it is read a third time, at idle: ${idleSeconds} s after the figure's last request, with the database pool's connections (in embedded mode their server processes) and the hashing threads still open: they end after 5 minutes unused, so the reading is the most an idle service holds. The figure is the most of the idle readings; flat means that for each load (1a and 1b run one after the other in one process, as do 4a to 4d) the settled reading after its last round is within 10% of the one after its first. The most of the settled readings is shown beside it.`,
    "- Figure 8 checks the session of one signed-in customer (`GET /customer/auth/session` with its cookie) over 64 connections, against bare Fastify answering `GET /health/live` (8a) and against the same query in bare Fastify (8b, bench/session-yardstick.ts): Fastify, a node-postgres pool of the service's size on the service's own database (through PgBouncer in the scaled mode, as the service), the same SHA-256 of the cookie and the same `sessions JOIN customers` statement, named as the service names it (unnamed through PgBouncer, where the service gives names up), and nothing else: no limits, hooks or schemas. 8b's goal is 0.85 of the yardstick, with at most 0.10 ms of the service's main-thread CPU per check.",
    "- Figure 12 runs the service with its admin listener (INTROSPECTION_TOKENS, ADMIN_PORT on a free port) and introspects that customer's session as a backend would (`POST /admin/v1/sessions/introspect` with the whole Cookie header and a bearer token) over 64 connections, against the session check on the same service, rounds alternating: introspections a second (12a) and their p99 (12b), each beside the session check's.",
    "- Figure 9 runs Better Auth 1.7 as a peer, in child processes (bench/better-auth-peer.ts) on the same PostgreSQL server in a database of its own (created and dropped), its tables made by its own migration API (`getMigrations` from better-auth/db/migration): email and password sign-in with its password hash and verify set to argon2id with the service's parameters (@node-rs/argon2, on libuv's thread pool, given as many threads through UV_THREADPOOL_SIZE as the service has hashing threads), its rate limiter off, and its cookie cache off (9a, 9c) or on (9b). Each round measures the service's session check and Better Auth's `GET /api/auth/get-session` with its cookies over 64 connections, then the service's login and Better Auth's `POST /api/auth/sign-in/email` over 32, the service's logins as returning shoppers make them (9c: each customer from a /24 of its own, a new address in it each time, so the device is known and no notice is sent, as Better Auth sends none) and, as information, each from a /24 new to its customer (9d: a new-device notice queued and sent every time, as in figures 2, 5 and 10); 9a's goal is a session read at least 6 times Better Auth's without its cookie cache, with at most 0.10 ms of main-thread CPU per check; 9c's a login at least 1.10 times Better Auth's, with at most 1.5 ms of main-thread CPU per login; 9b and 9d are information.",
    `- Figure 10 sizes the service in Keycloak's manner: logins and session checks a second per core of the service process's own CPU (hashing threads included, from /proc), and what each asks of the servers, from their own counters over all of a phase's rounds: the service database's transactions (each statement outside a transaction is one) and rows written from \`pg_stat_database\`, read ${statisticsDelayMs / 1000} s after the load because idle backends report their counts that late, and Redis commands from \`INFO commandstats\` (the whole Redis server's, so other users of that Redis count too; the embedded default keeps its counters in the process). The background work (the outbox poll, once a second) counts in as well, a few dozen transactions over a phase.`,
    `- Figure 11 seeds ${growthSizes.map((size) => format(size)).join(', then ')} customers, each with one live session, straight into the service's database (\`INSERT … SELECT generate_series\`, one real PHC hash for every row, then ANALYZE), and measures login (a random seeded customer per request, 32 connections) and the session check (a random seeded session per request, 64 connections) at each size, in short rounds of ${growthSeconds} s to keep the run's length sane; the goal compares the largest size with the smallest.`,
    `- Figure 13 sets up two deployments side by side, each on a database of its own made for the figure (a fresh DATA_DIR; in production a database created and dropped and a Redis key prefix of its own): one store, and ${format(storeCount)} stores of 100 customers each, every store with one host (s00001.shops.test …) and every customer with one live session, seeded in SQL (\`INSERT … SELECT generate_series\`, one real PHC hash for every customer, then ANALYZE) after the service's first start made the schema and its first store; the measured services are restarts on the seeded databases. New sign-in notices are off in every store of both (the benchmark's never-reused addresses would make nearly every login of the larger deployment a new device), and the seeded sessions were last seen an hour ahead, so no session check writes (otherwise the larger deployment's million sessions would each be written on first use, the one store's hundred once). Each request names its store by the Host header, a random store and customer (or seeded session) per request. Both services first serve a session check at every one of their stores, round-robin (${format(storeCount)} checks each), so the larger one's store cache is full; then rounds alternate between the two: logins over 32 connections (13a) and session checks over 64 (13b), the goal comparing medians; as information the larger service also checks only its first store's 100 sessions (the one store's pattern) and one session at each of its stores, which tells the cost of many stores from that of a million sessions. 13c reads both services' RSS at the same moment, ${idleSeconds} s after their last request; the heap in use from their /metrics is information. 13d pauses and resumes stores that the running service has cached, through updateStore (what \`storefront-auth store set --status\` runs), at a random moment of its one-second change feed, and times from the commit to the first session-check answer showing the change (503, then 200 again), asking every 5 ms: three stores with the service otherwise idle, three under session checks at other stores. 13e sends store B a trickle of logins open-loop (a tenth of the logins a second 13a measured, at most 10; random arrivals, timed from each arrival, from the benchmark's process) for 5 × the round length (longer if B would get fewer than 100 logins) alone, and while store A floods logins over 32 connections; the same trickle sent to A's own store during its flood is shown as information. 13f then has the larger deployment's admin listener (ADMIN_TOKENS) make 300 stores through \`POST /admin/v1/stores\`, each with a host and an Idempotency-Key of its own, one at a time as signups come, timing every answer; 13g makes 300 more in a burst over 4 connections (information).`,
    `- Figure 14 imports ${format(importedCustomers)} customers with bcrypt hashes (cost 10; a thousand real hashes of the benchmark's password made once with @node-rs/bcrypt and reused across identities) into the service's store, through \`POST /admin/v1/stores/default/customers/import\` on its admin listener: 14a times the upload and the import until its report says done (goal: 5 minutes), 14b reads the service's memory (RSS + the database server's PSS) every second during it, against its reading just before (goal: at most 50 MB more). Then 500 of the imported customers sign in once, which re-hashes each with the service's argon2id, and rounds alternate between their logins and those of customers registered here (14c, over 32 connections, each login from a never-reused address; goal: 0.95 of the registered customers' rate).`,
    "- Figure 17 turns the store's second step on (`auth.two_factor` optional, through the admin API) and sets it up for customers of its own through the API as a shopper does (registered, their email marked proven by staff through the admin API, signed in, `POST /account/two-factor/setup`, then `confirm` with the app's code, computed as an authenticator app does by test/helpers/totp.ts): 2.5 × 150 × the round length of them (1,500 at 4 s rounds), since each 30-second step of an app is accepted once. Each round then measures their sign-ins, a password login and `POST /two-factor/verify` with the code of the step now or the next (one sign-in: two requests, timed from the first to the last answer), and, as the yardstick, the password login alone of customers without a second step, both from 32 callers in a closed loop of the benchmark's own, each customer from a /24 of its own (a known device, as in 9c). The ratio is what the second step costs in sign-ins a second; information. A caller that finds no customer with a step left waits for the next step, and the row then says so and is not met.",
    '- The scaled mode (when DATABASE_URL and REDIS_URL are set) runs figures 2, 8 and 12 again with the service reaching the same PostgreSQL through PgBouncer in transaction mode and counting on a Redis Cluster of three masters, both started by the benchmark on spare ports (bench/scaled-servers.ts), to show what the pooler and the cluster cost per request.',
    '- Latency percentiles are exact, from every answer, as seen by the load generator.',
    '- For every measured round the service\'s CPU is read from /proc: how busy its main (event-loop) thread was and its main-thread CPU per answer, which tells whether the event loop or the hashing threads set the pace. The service\'s log lines at warn or above are counted; a figure during which it logged errors (other than the expected "hourly message budget spent") does not meet its goal.',
    '- The host is shared: before each round the benchmark waits briefly for other processes to quieten down, and the details say how much CPU they took during each figure.',
    '',
  ];
  if (results.length > 1) sections.push('## Goals at a glance', '', summaryTable(results), '');
  sections.push(historySection(results, file), '');
  for (const result of results) {
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
  }
  const sizings = results.flatMap((result) =>
    result.context.sizing === undefined ? [] : [{ mode: result.mode, facts: result.context.sizing }],
  );
  if (sizings.length > 0) sections.push(sizingSection(sizings), '');
  sections.push(changesHeading, '', changes, '');
  fs.writeFileSync(file, sections.join('\n'));
  return file;
}

/** The figures as data: what the plots are drawn from, and what the next run compares against. */
export function writeResultsFile(results: ModeResult[]): string {
  const file = path.join(repoRoot, 'bench/results.json');
  const data = {
    date: new Date().toISOString(),
    modes: results.map(({ mode, description, rows, context }) => ({
      mode,
      description,
      rows,
      hostUse: context.hostUse,
      quiet: context.quiet,
    })),
  };
  fs.writeFileSync(file, `${JSON.stringify(data, null, 1)}\n`);
  return file;
}
