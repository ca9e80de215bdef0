import { setTimeout as delay } from 'node:timers/promises';
import {
  format,
  measuredRound,
  median,
  progress,
  withService,
  type BenchContext,
  type Row,
  type SizingFacts,
} from './context.js';
import { ensureCustomers, loginLoad, sessionLoad, signedInCookie } from './customer-load.js';
import { statusText, sum, type LoadResult } from './load.js';
import { operationsPer, readOperations, statisticsDelayMs, type Operations } from './operations.js';
import type { ServiceCpu } from './proc.js';
import { waitUntilIdle } from './proc.js';
import type { Server } from './servers.js';

/** The servers' counters, once the service is idle and its database backends have reported. */
async function settledOperations(context: BenchContext, service: Server): Promise<Operations> {
  await waitUntilIdle(service.pid);
  await delay(statisticsDelayMs);
  return readOperations(context.backend);
}

interface Phase {
  perCore: number;
  perSecond: number;
  operations: Operations;
  results: LoadResult[];
}

/** `context.rounds` rounds of one load; its rate per core of service CPU, and its operations per answer. */
async function phase(
  context: BenchContext,
  service: Server,
  name: string,
  load: (seconds: number) => Promise<LoadResult>,
): Promise<Phase> {
  await load(1);
  const before = await settledOperations(context, service);
  const results: LoadResult[] = [];
  const cpus: ServiceCpu[] = [];
  for (let round = 1; round <= context.rounds; round += 1) {
    const { result, cpu } = await measuredRound(
      context,
      '10',
      service,
      () => load(context.seconds),
      (done) => done.responses,
    );
    results.push(result);
    cpus.push(cpu);
    progress(
      context,
      `fig 10 ${name} round ${round}/${context.rounds}: ${format(result.okPerSecond, 1)}/s on ${format(cpu.totalCores, 2)} cores of service CPU (${statusText(result)})`,
    );
  }
  const after = await settledOperations(context, service);
  const perCore = results.map((result, index) => result.okPerSecond / cpus[index]!.totalCores);
  return {
    perCore: median(perCore),
    perSecond: median(results.map((result) => result.okPerSecond)),
    operations: operationsPer(
      before,
      after,
      sum(results, (result) => result.responses),
    ),
    results,
  };
}

function operationsText(operations: Operations): string {
  const redis =
    operations.redisCommands === undefined
      ? 'no Redis (counters in the process)'
      : `${format(operations.redisCommands, 1)} Redis commands`;
  return `${format(operations.transactions, 1)} PostgreSQL transactions, ${format(operations.rowsWritten, 1)} rows written, ${redis}`;
}

function sizingRow(id: string, label: string, measured: Phase): Row {
  const non2xx = sum(measured.results, (result) => result.non2xx);
  const errors = sum(measured.results, (result) => result.errors);
  return {
    id,
    label,
    unit: '/s per core',
    value: measured.perCore,
    goal: { text: 'information', met: non2xx === 0 && errors === 0 },
    non2xx,
    errors,
    rounds: `${measured.results.map((result) => format(result.okPerSecond, 1)).join(' / ')} per second`,
    notes: [`per answer: ${operationsText(measured.operations)}`],
  };
}

/**
 * Figure 10, sizing in Keycloak's manner: logins and session reads a second per core of the
 * service's own CPU (its process, hashing threads included, from /proc), and what each asks of
 * PostgreSQL and Redis, from the servers' counters over all rounds of the phase.
 */
export async function figureSizing(context: BenchContext): Promise<Row[]> {
  return withService(context, '10', async (service) => {
    await ensureCustomers(context, service, Math.ceil(context.seconds * 150));
    const cookie = await signedInCookie(context, service);
    const login = await phase(context, service, 'login', (seconds) => loginLoad(context, service.url, seconds));
    const sessionRead = await phase(context, service, 'session read', (seconds) =>
      sessionLoad(service.url, '/api/v1/customer/auth/session', cookie, seconds),
    );
    const facts: SizingFacts = {
      loginsPerCore: login.perCore,
      loginsPerSecond: login.perSecond,
      sessionReadsPerCore: sessionRead.perCore,
      sessionReadsPerSecond: sessionRead.perSecond,
      perLogin: login.operations,
      perSessionRead: sessionRead.operations,
    };
    context.sizing = facts;
    return [
      sizingRow('10a', 'logins a second per core of service CPU (hashing threads included)', login),
      sizingRow('10b', 'session reads a second per core of service CPU', sessionRead),
    ];
  });
}
