import { cpuSummary, format, median, withService, type BenchContext, type Row } from '../context.js';
import { ensureCustomers, loginLoad } from '../customer-load.js';
import type { LoadResult } from '../load.js';
import { startProbeGenerator } from '../probe-load.js';
import { p99Row, rates, readRss, runRounds } from '../rounds.js';

const probeRate = 200;
/** The goal: logins that saturate hashing at most double the liveness probe's idle p99. */
const probeSlowdownLimit = 2;

/**
 * Figure 5: does a saturated hashing pool delay the liveness probe? The probes come open-loop from
 * a child process of their own (bench/probe-load.ts), so their latency is the service's.
 */
export async function figureLivenessUnderLogin(context: BenchContext): Promise<Row> {
  const generator = await startProbeGenerator();
  try {
    return await withService(context, '5', async (service) => {
      await ensureCustomers(context, service, Math.ceil(context.seconds * 150));
      const probe = (seconds: number) =>
        generator.run({ url: service.url, path: '/api/v1/health/live', connections: 10, rate: probeRate, seconds });
      await probe(1);
      // A fresh service's first logins also start its hashing threads and pool: warm up, as figures 1–4 do.
      await loginLoad(context, service.url, 2);
      const logins: LoadResult[] = [];
      const [idle, loaded] = await runRounds(
        context,
        '5',
        [
          { name: 'idle probes', run: probe },
          {
            name: 'probes under logins',
            run: async (seconds) => {
              const [busy, login] = await Promise.all([probe(seconds), loginLoad(context, service.url, seconds)]);
              logins.push(login);
              return busy;
            },
            service,
            answers: (busy) => busy.responses + logins.at(-1)!.responses,
            after: async (round) =>
              `${format(logins.at(-1)!.okPerSecond, 1)} logins/s; ${await readRss(context, service, '5', (n) => `round ${n}`)(round)}`,
          },
        ],
        { ownPids: [service.pid] },
      );
      const listed = (results: LoadResult[]) => results.map((result) => format(result.latency.p99, 1)).join(' / ');
      const p50 = (results: LoadResult[]) => format(median(results.map((result) => result.latency.p50)), 2);
      return p99Row({
        id: '5',
        label: `GET /health/live p99 at ${probeRate}/s (open-loop, from a process of its own) while logins saturate hashing`,
        ours: loaded!.results,
        theirs: idle!.results,
        baselineLabel: 'p99 with no load',
        limit: probeSlowdownLimit,
        goalText: `p99 ≤ ${probeSlowdownLimit}× its idle p99`,
        rounds: `loaded ${listed(loaded!.results)} ms; idle ${listed(idle!.results)} ms; p50 loaded ${p50(loaded!.results)} ms, idle ${p50(idle!.results)} ms; logins ${rates(
          logins,
        )
          .map((rate) => format(rate, 1))
          .join(' / ')}/s`,
        notes: [cpuSummary(loaded!.cpus)],
        counted: logins,
      });
    });
  } finally {
    await generator.close();
  }
}
