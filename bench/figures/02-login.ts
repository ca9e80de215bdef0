import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { cpuSummary, format, median, withService, type BenchContext, type Row } from '../context.js';
import { ensureCustomers, hashingConnections, loginLoad } from '../customer-load.js';
import { rateResult, type LoadResult } from '../load.js';
import { p99s, rates, ratioRow, readRss, runRounds } from '../rounds.js';
import { repoRoot, startLoginCeiling, type Server } from '../servers.js';

/** The share of the HTTP ceiling's rate figures 2 and 3 must reach: production shares its cores with PostgreSQL and Redis. */
const ceilingGoal: Record<BenchContext['mode'], number> = { embedded: 0.9, production: 0.85, scaled: 0.85 };
/** Login's p99 may be at most this many times the ceiling's. */
const loginP99Limit = 1.5;

/** Raw argon2id operations per second in a child process, 2 at a time, production parameters. */
async function argon2Baseline(operation: 'hash' | 'verify', seconds: number): Promise<number> {
  const script = path.join(repoRoot, 'bench/argon2-baseline.ts');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', script, operation, String(seconds), '2'],
    { cwd: repoRoot },
  );
  return (JSON.parse(stdout.trim()) as { perSecond: number }).perSecond;
}

/**
 * Figures 2 and 3: the service's rate against the HTTP ceiling's (bench/login-ceiling.ts), with raw
 * argon2id as information; the three alternate within each round.
 */
export async function hashingFigure(
  context: BenchContext,
  figure: '2' | '3',
  label: string,
  load: (url: string, seconds: number, ours: boolean) => Promise<LoadResult>,
  prepare: (service: Server) => Promise<void>,
): Promise<Row> {
  const operation = figure === '2' ? 'verify' : 'hash';
  const ceiling = await startLoginCeiling();
  try {
    return await withService(context, figure, async (service) => {
      await prepare(service);
      await load(service.url, 1, true);
      await load(ceiling.url, 1, false);
      const [ours, top, raw] = await runRounds(
        context,
        figure,
        [
          {
            name: `${figure} service`,
            run: (seconds) => load(service.url, seconds, true),
            service,
            after: readRss(context, service, figure, (round) => `round ${round}`),
          },
          { name: `${figure} ceiling`, run: (seconds) => load(ceiling.url, seconds, false) },
          {
            name: `${figure} raw argon2id ${operation}`,
            run: async (seconds) => rateResult(await argon2Baseline(operation, seconds)),
          },
        ],
        { ownPids: [service.pid, ceiling.pid] },
      );
      const p99 = median(p99s(ours!.results));
      const ceilingP99 = median(p99s(top!.results));
      const rawRates = rates(raw!.results);
      const p99Text = figure === '2' ? `p99 ≤ ${loginP99Limit}× the ceiling's` : '';
      return ratioRow({
        id: figure,
        label,
        ours: ours!,
        theirs: top!.results,
        names: ['service', 'ceiling'],
        baselineLabel: 'HTTP ceiling: Fastify, cookie, same hashing, no database',
        goal: ceilingGoal[context.mode],
        also: { text: p99Text, met: figure === '3' || p99 <= ceilingP99 * loginP99Limit },
        notes: [
          `p99 ${format(p99)} ms against the ceiling's ${format(ceilingP99)} ms (${format(p99 / ceilingP99, 2)}×)`,
          `raw argon2id ${operation}/s ${rawRates.map((rate) => format(rate, 1)).join(' / ')} (median ${format(median(rawRates), 1)}, information: no HTTP)`,
          cpuSummary(ours!.cpus),
        ],
      });
    });
  } finally {
    await ceiling.stop();
  }
}

/** Figure 2: login with the correct password, against the HTTP ceiling. */
export function figureLogin(context: BenchContext): Promise<Row> {
  return hashingFigure(
    context,
    '2',
    `login req/s (correct password), ${hashingConnections} connections`,
    (url, seconds) => loginLoad(context, url, seconds),
    (service) => ensureCustomers(context, service, Math.ceil(context.seconds * 150)),
  );
}
