import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  beforeRound,
  cpuSummary,
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
import type { ServiceCpu } from './proc.js';
import { ensureCustomers, hashingConnections, loginLoad, registerLoad } from './customer-load.js';
import { statusText, sum, type LoadResult } from './load.js';
import { startProbeGenerator } from './probe-load.js';
import { repoRoot, startLoginCeiling, type Server } from './servers.js';

const run = promisify(execFile);

/** Raw argon2id operations per second in a child process, 2 at a time, production parameters. */
async function argon2Baseline(operation: 'hash' | 'verify', seconds: number): Promise<number> {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', path.join(repoRoot, 'bench/argon2-baseline.ts'), operation, String(seconds), '2'],
    { cwd: repoRoot },
  );
  return (JSON.parse(stdout.trim()) as { perSecond: number }).perSecond;
}

/** The share of the HTTP ceiling's rate figures 2 and 3 must reach: production shares its 2 cores with PostgreSQL and Redis. */
export const ceilingGoal: Record<BenchContext['mode'], number> = { embedded: 0.9, production: 0.85, scaled: 0.85 };
/** Login's p99 at 32 connections may be at most this many times the ceiling's. */
const loginP99Limit = 1.5;

interface HashingRounds {
  ours: LoadResult[];
  cpus: ServiceCpu[];
  ceiling: LoadResult[];
  raw: number[];
}

function hashingRow(
  context: BenchContext,
  figure: '2' | '3',
  label: string,
  rawLabel: string,
  measured: HashingRounds,
): Row {
  const { ours, cpus, ceiling, raw } = measured;
  const value = median(ours.map((result) => result.okPerSecond));
  const baseline = median(ceiling.map((result) => result.okPerSecond));
  const ratio = value / baseline;
  const p99 = median(ours.map((result) => result.latency.p99));
  const ceilingP99 = median(ceiling.map((result) => result.latency.p99));
  const goal = ceilingGoal[context.mode];
  const p99Met = figure === '3' || p99 <= ceilingP99 * loginP99Limit;
  const non2xx = sum(ours, (result) => result.non2xx) + sum(ceiling, (result) => result.non2xx);
  const errors = sum(ours, (result) => result.errors) + sum(ceiling, (result) => result.errors);
  return {
    id: figure,
    label,
    unit: 'req/s',
    value,
    baseline,
    baselineLabel: 'HTTP ceiling: Fastify, cookie, same hashing, no database',
    ratio,
    goal: {
      text: `ratio ≥ ${goal.toFixed(2)}${figure === '2' ? `, p99 ≤ ${loginP99Limit}× the ceiling's` : ''}`,
      met: ratio >= goal && p99Met && non2xx === 0 && errors === 0,
    },
    non2xx,
    errors,
    rounds: `service ${ours.map((result) => format(result.okPerSecond, 1)).join(' / ')}; ceiling ${ceiling.map((result) => format(result.okPerSecond, 1)).join(' / ')}`,
    notes: [
      `p99 ${format(p99)} ms against the ceiling's ${format(ceilingP99)} ms (${format(p99 / ceilingP99, 2)}×)`,
      `${rawLabel} ${raw.map((rate) => format(rate, 1)).join(' / ')} (median ${format(median(raw), 1)}, information: no HTTP)`,
      cpuSummary(cpus),
      ...[...ours, ...ceiling].filter((result) => result.non2xx + result.errors > 0).map(statusText),
    ],
  };
}

/**
 * Figures 2 and 3 share a shape: the service's rate against the HTTP ceiling's, with raw argon2id
 * as information; the three alternate within each round.
 */
async function hashingFigure(
  context: BenchContext,
  figure: '2' | '3',
  operation: 'hash' | 'verify',
  load: (url: string, seconds: number, ours: boolean) => Promise<LoadResult>,
  prepare: (service: Server) => Promise<void>,
): Promise<Row> {
  const ceilingServer = await startLoginCeiling();
  try {
    return await withService(context, figure, async (service) => {
      await prepare(service);
      await load(service.url, 1, true);
      await load(ceilingServer.url, 1, false);
      const measured: HashingRounds = { ours: [], cpus: [], ceiling: [], raw: [] };
      const name = figure === '2' ? 'login' : 'register';
      for (let round = 1; round <= context.rounds; round += 1) {
        const { result, cpu } = await measuredRound(
          context,
          figure,
          service,
          () => load(service.url, context.seconds, true),
          (done) => done.responses,
        );
        measured.ours.push(result);
        measured.cpus.push(cpu);
        const memory = await recordRss(context, service, figure, `round ${round}`);
        await beforeRound(context, [service.pid, ceilingServer.pid]);
        const top = await load(ceilingServer.url, context.seconds, false);
        measured.ceiling.push(top);
        await beforeRound(context, [service.pid, ceilingServer.pid]);
        const raw = await argon2Baseline(operation, context.seconds);
        measured.raw.push(raw);
        progress(
          context,
          `fig ${figure} ${name} round ${round}/${context.rounds}: service ${format(result.okPerSecond, 1)}/s (${statusText(result)}), p99 ${format(result.latency.p99)} ms, ${cpuText(cpu)}; ceiling ${format(top.okPerSecond, 1)}/s, p99 ${format(top.latency.p99)} ms; raw argon2id ${operation} ${format(raw, 1)}/s; ${rssText(memory)}`,
        );
      }
      return figure === '2'
        ? hashingRow(
            context,
            '2',
            `login req/s (correct password), ${hashingConnections} connections`,
            'raw argon2id verify/s',
            measured,
          )
        : hashingRow(
            context,
            '3',
            `register req/s, ${hashingConnections} connections`,
            'raw argon2id hash/s',
            measured,
          );
    });
  } finally {
    await ceilingServer.stop();
  }
}

export function figureRegister(context: BenchContext): Promise<Row> {
  return hashingFigure(
    context,
    '3',
    'hash',
    (url, seconds, ours) => registerLoad(context, url, seconds, ours),
    async () => {},
  );
}

export function figureLogin(context: BenchContext): Promise<Row> {
  const wanted = Math.ceil(context.seconds * 150);
  return hashingFigure(
    context,
    '2',
    'verify',
    (url, seconds) => loginLoad(context, url, seconds),
    (service) => ensureCustomers(context, service, wanted),
  );
}

/** Figure 5's goal: logins that saturate hashing at most double the liveness probe's idle p99. */
const probeSlowdownLimit = 2;
const loginWarmupSeconds = 2;

/**
 * Figure 5: does a saturated hashing pool delay the liveness probe? The probes come from a child
 * process of their own (bench/probe-load.ts), open-loop, so their latency is the service's.
 */
export async function figureLivenessUnderLogin(context: BenchContext): Promise<Row> {
  const probeRate = 200;
  const probeConnections = 10;
  const generator = await startProbeGenerator();
  try {
    return await withService(context, '5', async (service) => {
      await ensureCustomers(context, service, Math.ceil(context.seconds * 150));
      const probe = (seconds: number) =>
        generator.run({
          url: service.url,
          path: '/api/v1/health/live',
          connections: probeConnections,
          rate: probeRate,
          seconds,
        });
      await probe(1);
      // A fresh service's first logins also pay for starting the hashing threads, opening the pool
      // and compiling code (figure 7 measures starts): warm up so the first round is like the rest.
      await loginLoad(context, service.url, loginWarmupSeconds);
      const idle: LoadResult[] = [];
      const loaded: LoadResult[] = [];
      const logins: LoadResult[] = [];
      const cpus: ServiceCpu[] = [];
      for (let round = 1; round <= context.rounds; round += 1) {
        await beforeRound(context, [service.pid]);
        const quiet = await probe(context.seconds);
        idle.push(quiet);
        const { result, cpu } = await measuredRound(
          context,
          '5',
          service,
          () => Promise.all([probe(context.seconds), loginLoad(context, service.url, context.seconds)]),
          ([busyProbe, login]) => busyProbe.responses + login.responses,
        );
        const [busy, login] = result;
        cpus.push(cpu);
        loaded.push(busy);
        logins.push(login);
        const memory = await recordRss(context, service, '5', `round ${round}`);
        progress(
          context,
          `fig 5 round ${round}/${context.rounds}: /health/live p99 ${format(busy.latency.p99, 1)} ms (${statusText(busy)}) under ${format(login.okPerSecond, 1)} logins/s (${statusText(login)}) vs ${format(quiet.latency.p99, 1)} ms with no load; ${cpuText(cpu)}; ${rssText(memory)}`,
        );
      }
      const value = median(loaded.map((result) => result.latency.p99));
      const baseline = median(idle.map((result) => result.latency.p99));
      const ratio = value / baseline;
      const non2xx = sum(loaded, (result) => result.non2xx) + sum(logins, (result) => result.non2xx);
      const errors = sum(loaded, (result) => result.errors) + sum(logins, (result) => result.errors);
      return {
        id: '5',
        label: `GET /health/live p99 at ${probeRate}/s (open-loop, from a process of its own) while logins saturate hashing`,
        unit: 'ms',
        value,
        baseline,
        baselineLabel: 'p99 with no load',
        ratio,
        goal: {
          text: `p99 ≤ ${probeSlowdownLimit}× its idle p99`,
          met: ratio <= probeSlowdownLimit && non2xx === 0 && errors === 0,
        },
        non2xx,
        errors,
        rounds: `loaded ${loaded.map((result) => format(result.latency.p99, 1)).join(' / ')} ms; idle ${idle.map((result) => format(result.latency.p99, 1)).join(' / ')} ms; p50 loaded ${format(median(loaded.map((result) => result.latency.p50)), 2)} ms, idle ${format(median(idle.map((result) => result.latency.p50)), 2)} ms; logins ${logins.map((result) => format(result.okPerSecond, 1)).join(' / ')}/s`,
        notes: [
          cpuSummary(cpus),
          ...[...loaded, ...logins].filter((result) => result.non2xx + result.errors > 0).map(statusText),
        ],
      };
    });
  } finally {
    await generator.close();
  }
}
