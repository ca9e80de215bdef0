import {
  cpuSummary,
  format,
  median,
  recordRss,
  row,
  rssText,
  withService,
  type BenchContext,
  type Row,
} from '../context.js';
import { failures, nextEmail, runLoad, runOpenLoad, troubles } from '../load.js';
import { waitUntilIdle } from '../proc.js';
import { p99s, rates, runRounds } from '../rounds.js';
import { warmupSeconds } from './01-framework-overhead.js';

const connections = 100;

/**
 * Figure 4: resend and forgot answer 202 before any lookup, so their latency should not depend on
 * the database. Closed-loop latency is mostly queueing; the open-loop rows, at half that
 * throughput, show the service's own time per answer.
 */
export async function figureMessageRequests(context: BenchContext): Promise<Row[]> {
  return withService(context, '4', async (service) => {
    const rows: Row[] = [];
    const closedLoopRate: Record<string, number> = {};
    // The open-loop rows name the closed-loop row whose throughput sets their pace.
    for (const [id, path, label, pacedBy] of [
      ['4a', '/api/v1/customer/auth/verification/resend', 'POST verification/resend', undefined],
      ['4b', '/api/v1/customer/auth/password/forgot', 'POST password/forgot', undefined],
      ['4c', '/api/v1/customer/auth/verification/resend', 'POST verification/resend', '4a'],
      ['4d', '/api/v1/customer/auth/password/forgot', 'POST password/forgot', '4b'],
    ] as const) {
      const body = () => ({ identity: nextEmail('nobody') });
      const rate = pacedBy === undefined ? undefined : Math.round(closedLoopRate[pacedBy]! / 2);
      const load = (seconds: number) =>
        rate === undefined
          ? runLoad({ url: service.url, method: 'POST', path, connections, seconds, body })
          : runOpenLoad({ url: service.url, path, connections, seconds, rate, body });
      await load(warmupSeconds);
      await waitUntilIdle(service.pid);
      const drains: number[] = [];
      const after = async (round: number) => {
        // The work behind the 202s may still be queued: memory is read with it queued (the peak),
        // then once it is done, so the next round starts from a quiet service.
        const peak = service.memory();
        const drainMs = await waitUntilIdle(service.pid, { maxMs: 30_000 });
        drains.push(drainMs);
        const memory = await recordRss(context, service, '4', `${id} round ${round}`, { peak });
        return `busy ${format(drainMs / 1000, 1)} s after the round; ${rssText(memory)}`;
      };
      const [series] = await runRounds(context, '4', [{ name: `${id} ${label}`, run: load, service, after }], {
        ownPids: [service.pid],
      });
      const { results, cpus } = series!;
      closedLoopRate[id] = median(rates(results));
      const value = median(p99s(results));
      const { non2xx, errors, clean } = failures(results);
      const pace = rate === undefined ? '' : `, random arrivals at ${format(rate)} req/s (half of ${pacedBy})`;
      const perRound = results.map(
        (result, index) =>
          `p99 ${format(result.latency.p99, 1)} ms @ ${format(result.okPerSecond)} req/s, busy ${format(drains[index]! / 1000, 1)} s after`,
      );
      const p50 = format(median(results.map((result) => result.latency.p50)), 1);
      const notes = [
        `median ${format(closedLoopRate[id])} req/s, p50 ${p50} ms`,
        cpuSummary(cpus),
        ...troubles(results),
      ];
      const goal = { text: 'p99 ≤ 10 ms', met: value <= 10 && clean };
      const text = `${label} p99 latency, ${connections} connections${pace}`;
      rows.push(row(id, text, 'ms', value, goal, perRound.join(' / '), { non2xx, errors, notes }));
    }
    return rows;
  });
}
