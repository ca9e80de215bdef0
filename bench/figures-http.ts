import {
  beforeRound,
  cpuSummary,
  medianMainMs,
  cpuText,
  format,
  measuredRound,
  median,
  progress,
  recordRss,
  rssText,
  withService,
  type BenchContext,
  type Row,
} from './context.js';
import { measureServiceCpu, waitUntilIdle, type ServiceCpu } from './proc.js';
import { sessionConnections, signedInCookie } from './customer-load.js';
import { nextEmail, runLoad, runOpenLoad, statusText, sum, type LoadResult } from './load.js';
import { freePort, startBareFastify, startSessionYardstick, type Server } from './servers.js';

const connections = 100;
const warmupSeconds = 1;

interface VersusBare {
  id: string;
  figure: string;
  path: string;
  /** The path bare Fastify answers as the yardstick (its cheapest GET when the service's has no twin). */
  barePath: string;
  /** What the yardstick is, in the tables; bare Fastify unless said. */
  bareLabel?: string;
  label: string;
  connections: number;
  /** Sent to the service, and to the yardstick too with `headersToBare`. */
  headers?: Record<string, string>;
  headersToBare?: boolean;
  goal: number;
  /** A second goal: the service's main-thread CPU per answer at most this many milliseconds. */
  maxMainMsPerAnswer?: number;
}

/** One GET through the whole service stack against Fastify with nothing added, rounds alternating. */
async function versusBare(context: BenchContext, service: Server, bare: Server, spec: VersusBare): Promise<Row> {
  const { id, figure, path, connections: count } = spec;
  const bareName = spec.bareLabel ?? 'bare Fastify';
  const withHeaders = (url: string) => url === service.url || spec.headersToBare === true;
  const load = (url: string, target: string, seconds: number) =>
    runLoad({
      url,
      method: 'GET',
      path: target,
      connections: count,
      seconds,
      ...(withHeaders(url) && spec.headers !== undefined ? { headers: spec.headers } : {}),
    });
  await load(service.url, path, warmupSeconds);
  await load(bare.url, spec.barePath, warmupSeconds);
  const ours: LoadResult[] = [];
  const cpus: ServiceCpu[] = [];
  const theirs: LoadResult[] = [];
  const bareCpus: ServiceCpu[] = [];
  for (let round = 1; round <= context.rounds; round += 1) {
    // Alternate which goes first, so a drift of the host favours neither.
    const order = round % 2 === 1 ? (['service', 'bare'] as const) : (['bare', 'service'] as const);
    for (const which of order) {
      if (which === 'service') {
        const { result, cpu } = await measuredRound(
          context,
          figure,
          service,
          () => load(service.url, path, context.seconds),
          (done) => done.responses,
        );
        ours.push(result);
        cpus.push(cpu);
        const memory = await recordRss(context, service, figure, `${id} round ${round}`);
        progress(
          context,
          `fig ${id} ${path} round ${round}/${context.rounds}: service ${format(result.okPerSecond)} req/s (${statusText(result)}); ${cpuText(cpu)}; ${rssText(memory)}`,
        );
      } else {
        await beforeRound(context, [service.pid, bare.pid]);
        const stopCpu = measureServiceCpu(bare.pid);
        const result = await load(bare.url, spec.barePath, context.seconds);
        const cpu = stopCpu(result.responses);
        theirs.push(result);
        bareCpus.push(cpu);
        progress(
          context,
          `fig ${id} ${spec.barePath} round ${round}/${context.rounds}: ${bareName} ${format(result.okPerSecond)} req/s (${statusText(result)}); main thread ${format(cpu.mainShare * 100)}% busy (${format(cpu.mainMsPerAnswer, 3)} ms per answer)`,
        );
      }
    }
  }
  const value = median(ours.map((result) => result.okPerSecond));
  const baseline = median(theirs.map((result) => result.okPerSecond));
  const ratio = value / baseline;
  const non2xx = sum(ours, (result) => result.non2xx) + sum(theirs, (result) => result.non2xx);
  const errors = sum(ours, (result) => result.errors);
  const mainMs = medianMainMs(cpus);
  const cpuMet = spec.maxMainMsPerAnswer === undefined || mainMs <= spec.maxMainMsPerAnswer;
  const cpuGoal =
    spec.maxMainMsPerAnswer === undefined ? '' : `, main thread ≤ ${spec.maxMainMsPerAnswer} ms per answer`;
  return {
    id,
    label: spec.label,
    unit: 'req/s',
    value,
    baseline,
    baselineLabel: spec.barePath === path ? bareName : `${bareName} GET ${spec.barePath.replace('/api/v1', '')}`,
    ratio,
    goal: {
      text: `ratio ≥ ${spec.goal.toFixed(2)}${cpuGoal}`,
      met: ratio >= spec.goal && cpuMet && non2xx === 0 && errors === 0,
    },
    non2xx,
    errors,
    rounds: `service ${ours.map((result) => format(result.okPerSecond)).join(' / ')}; bare ${theirs.map((result) => format(result.okPerSecond)).join(' / ')}`,
    notes: [
      cpuSummary(cpus),
      `${bareName} main thread ${format(median(bareCpus.map((cpu) => cpu.mainMsPerAnswer)), 3)} ms CPU per answer against the service's ${format(mainMs, 3)} ms`,
      ...ours.filter((result) => result.non2xx + result.errors > 0).map(statusText),
    ],
    mainMs,
  };
}

/** Figure 1: plain GETs through the whole service stack against Fastify with nothing added. */
export async function figureFrameworkOverhead(context: BenchContext): Promise<Row[]> {
  const bare = await startBareFastify();
  try {
    return await withService(context, '1', async (service) => {
      const rows: Row[] = [];
      for (const [id, path] of [
        ['1a', '/api/v1/health/live'],
        ['1b', '/api/v1/platform'],
      ] as const) {
        rows.push(
          await versusBare(context, service, bare, {
            id,
            figure: '1',
            path,
            barePath: path,
            label: `GET ${path.replace('/api/v1', '')} req/s, ${connections} connections`,
            connections,
            goal: 0.85,
          }),
        );
      }
      return rows;
    });
  } finally {
    await bare.stop();
  }
}

/**
 * Figure 8: the session check (`GET /customer/auth/session` with a valid cookie), what every
 * signed-in page view of a storefront costs: a keyed hash, one indexed read, and the answer. 8a
 * against bare Fastify; 8b against a yardstick that does exactly its database work and nothing
 * else (bench/session-yardstick.ts), which tells what the service adds around its one statement.
 */
export async function figureSessionCheck(context: BenchContext): Promise<Row[]> {
  const bare = await startBareFastify();
  try {
    return await withService(context, '8', async (service) => {
      const cookie = await signedInCookie(context, service);
      const check = {
        figure: '8',
        path: '/api/v1/customer/auth/session',
        label: `GET /customer/auth/session req/s (session check), ${sessionConnections} connections`,
        connections: sessionConnections,
        headers: { cookie },
      };
      const rows = [
        await versusBare(context, service, bare, { ...check, id: '8a', barePath: '/api/v1/health/live', goal: 0.3 }),
      ];
      const databaseUrl =
        context.backend.env['DATABASE_URL'] ?? context.backend.serverUrl(context.backend.serviceDatabase);
      // Through PgBouncer (scaled) the service runs its statements unnamed, and so does the yardstick.
      const sameQuery = await startSessionYardstick(databaseUrl, { named: context.mode !== 'scaled' });
      try {
        rows.push(
          await versusBare(context, service, sameQuery, {
            ...check,
            id: '8b',
            barePath: check.path,
            bareLabel: 'the same query in bare Fastify',
            headersToBare: true,
            goal: 0.85,
            maxMainMsPerAnswer: 0.1,
          }),
        );
      } finally {
        await sameQuery.stop();
      }
      return rows;
    });
  } finally {
    await bare.stop();
  }
}

/** The token figure 12's backend introspects with (INTROSPECTION_TOKENS of its service). */
const introspectionToken = 'bench-introspection-token-0123456789abcdef';

/**
 * Figure 12: what a backend's question costs beside the shopper's own. `POST
 * /admin/v1/sessions/introspect` on the admin listener, with the shopper's whole Cookie header as a
 * backend forwards it (the same indexed read as the session check, plus the token's counter),
 * against the session check on the same service, rounds alternating.
 */
export async function figureIntrospection(context: BenchContext): Promise<Row[]> {
  const port = await freePort();
  const env = { INTROSPECTION_TOKENS: introspectionToken };
  return withService(
    context,
    '12',
    async (service) => {
      const cookie = await signedInCookie(context, service);
      const introspect = (seconds: number) =>
        runLoad({
          url: service.adminUrl!,
          method: 'POST',
          path: '/admin/v1/sessions/introspect',
          connections: sessionConnections,
          seconds,
          headers: { authorization: `Bearer ${introspectionToken}` },
          body: () => ({ cookie }),
        });
      const check = (seconds: number) =>
        runLoad({
          url: service.url,
          method: 'GET',
          path: '/api/v1/customer/auth/session',
          connections: sessionConnections,
          seconds,
          headers: { cookie },
        });
      await introspect(warmupSeconds);
      await check(warmupSeconds);
      const ours: LoadResult[] = [];
      const cpus: ServiceCpu[] = [];
      const checks: LoadResult[] = [];
      for (let round = 1; round <= context.rounds; round += 1) {
        // Alternate which goes first, so a drift of the host favours neither.
        const order = round % 2 === 1 ? (['introspect', 'check'] as const) : (['check', 'introspect'] as const);
        for (const which of order) {
          const load = which === 'introspect' ? introspect : check;
          const { result, cpu } = await measuredRound(
            context,
            '12',
            service,
            () => load(context.seconds),
            (done) => done.responses,
          );
          (which === 'introspect' ? ours : checks).push(result);
          if (which === 'introspect') cpus.push(cpu);
          progress(
            context,
            `fig 12 ${which === 'introspect' ? 'introspection' : 'session check'} round ${round}/${context.rounds}: ${format(result.okPerSecond)} req/s, p99 ${format(result.latency.p99, 1)} ms (${statusText(result)}); ${cpuText(cpu)}`,
          );
        }
        const memory = await recordRss(context, service, '12', `12 round ${round}`);
        progress(context, `fig 12 round ${round}/${context.rounds}: ${rssText(memory)}`);
      }
      return introspectionRows(ours, checks, cpus);
    },
    { port, env },
  );
}

/** Figure 12's rows: introspections a second against session checks a second, and their p99s. */
function introspectionRows(ours: LoadResult[], checks: LoadResult[], cpus: ServiceCpu[]): Row[] {
  const non2xx = sum(ours, (result) => result.non2xx);
  const errors = sum(ours, (result) => result.errors);
  const clean = non2xx === 0 && errors === 0;
  const rate = median(ours.map((result) => result.okPerSecond));
  const checkRate = median(checks.map((result) => result.okPerSecond));
  const p99 = median(ours.map((result) => result.latency.p99));
  const checkP99 = median(checks.map((result) => result.latency.p99));
  const rounds = (pick: (result: LoadResult) => string) =>
    `introspection ${ours.map(pick).join(' / ')}; session check ${checks.map(pick).join(' / ')}`;
  const notes = [
    cpuSummary(cpus),
    ...[...ours, ...checks].filter((result) => result.non2xx + result.errors > 0).map(statusText),
  ];
  const baselineLabel = 'session check, GET /customer/auth/session';
  return [
    {
      id: '12a',
      label: `POST /admin/v1/sessions/introspect req/s (introspection, admin listener), ${sessionConnections} connections`,
      unit: 'req/s',
      value: rate,
      baseline: checkRate,
      baselineLabel,
      ratio: rate / checkRate,
      goal: { text: 'ratio ≥ 0.80', met: rate / checkRate >= 0.8 && clean },
      non2xx,
      errors,
      rounds: rounds((result) => format(result.okPerSecond)),
      notes,
      mainMs: medianMainMs(cpus),
    },
    {
      id: '12b',
      label: `introspection p99 latency, ${sessionConnections} connections`,
      unit: 'ms',
      value: p99,
      baseline: checkP99,
      baselineLabel,
      ratio: p99 / checkP99,
      goal: { text: 'ratio ≤ 1.25', met: p99 / checkP99 <= 1.25 && clean },
      non2xx,
      errors,
      rounds: rounds((result) => `${format(result.latency.p99, 1)} ms`),
      notes: [],
    },
  ];
}

/**
 * Figure 4: resend and forgot answer 202 before any lookup, so their latency should not depend on
 * the database. Closed-loop latency is mostly queueing behind the other connections; the open-loop
 * rows, at half that throughput, show the service's own time per answer.
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
      const results: LoadResult[] = [];
      const cpus: ServiceCpu[] = [];
      const drains: number[] = [];
      for (let round = 1; round <= context.rounds; round += 1) {
        const { result, cpu } = await measuredRound(
          context,
          '4',
          service,
          () => load(context.seconds),
          (done) => done.responses,
        );
        results.push(result);
        cpus.push(cpu);
        // The work behind the 202s (one transaction each) may still be queued; let it finish
        // so the next round starts from a quiet service, and report how long it took. Memory
        // is read first with that backlog queued (the peak), then once it is done.
        const peak = service.memory();
        const drainMs = await waitUntilIdle(service.pid, { maxMs: 30_000 });
        drains.push(drainMs);
        const memory = await recordRss(context, service, '4', `${id} round ${round}`, { peak });
        progress(
          context,
          `fig ${id} ${label} round ${round}/${context.rounds}: p99 ${format(result.latency.p99, 1)} ms, p50 ${format(result.latency.p50, 1)} ms at ${format(result.okPerSecond)} req/s (${statusText(result)}); ${cpuText(cpu)}; busy ${format(drainMs / 1000, 1)} s after the round; ${rssText(memory)}`,
        );
      }
      closedLoopRate[id] = median(results.map((result) => result.okPerSecond));
      const value = median(results.map((result) => result.latency.p99));
      const non2xx = sum(results, (result) => result.non2xx);
      const errors = sum(results, (result) => result.errors);
      const pace = rate === undefined ? '' : `, random arrivals at ${format(rate)} req/s (half of ${pacedBy})`;
      rows.push({
        id,
        label: `${label} p99 latency, ${connections} connections${pace}`,
        unit: 'ms',
        value,
        goal: { text: 'p99 ≤ 10 ms', met: value <= 10 && non2xx === 0 && errors === 0 },
        non2xx,
        errors,
        rounds: results
          .map(
            (result, index) =>
              `p99 ${format(result.latency.p99, 1)} ms @ ${format(result.okPerSecond)} req/s, busy ${format(drains[index]! / 1000, 1)} s after`,
          )
          .join(' / '),
        notes: [
          `median ${format(median(results.map((result) => result.okPerSecond)))} req/s, p50 ${format(median(results.map((result) => result.latency.p50)), 1)} ms`,
          cpuSummary(cpus),
          ...results.filter((result) => result.non2xx + result.errors > 0).map(statusText),
        ],
      });
    }
    return rows;
  });
}
