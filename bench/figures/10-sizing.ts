import { format, median, row, sleep, withService, type BenchContext, type Row } from '../context.js';
import { ensureCustomers, loginLoad, sessionLoad, signedInCookie } from '../customer-load.js';
import { failures, sum, troubles, type LoadResult } from '../load.js';
import { operationsPer, readOperations, statisticsDelayMs, type Operations } from '../operations.js';
import { waitUntilIdle } from '../proc.js';
import { rates, runRounds } from '../rounds.js';
import type { Server } from '../servers.js';

interface Phase {
  perCore: number;
  perSecond: number;
  operations: Operations;
  results: LoadResult[];
}

/** The servers' counters, once the service is idle and its database backends have reported. */
async function settledOperations(context: BenchContext, service: Server): Promise<Operations> {
  await waitUntilIdle(service.pid);
  await sleep(statisticsDelayMs);
  return readOperations(context.backend);
}

/** The rounds of one load: its rate per core of service CPU, and its operations per answer. */
async function phase(context: BenchContext, service: Server, name: string, run: (s: number) => Promise<LoadResult>) {
  await run(1);
  const before = await settledOperations(context, service);
  const [series] = await runRounds(context, '10', [{ name, run, service }], { ownPids: [service.pid] });
  const { results, cpus } = series!;
  const after = await settledOperations(context, service);
  return {
    perCore: median(results.map((result, index) => result.okPerSecond / cpus[index]!.totalCores)),
    perSecond: median(rates(results)),
    operations: operationsPer(
      before,
      after,
      sum(results, (result) => result.responses),
    ),
    results,
  } satisfies Phase;
}

function sizingRow(id: string, label: string, { perCore, results, operations }: Phase): Row {
  const { non2xx, errors, clean } = failures(results);
  const { transactions, rowsWritten, redisCommands } = operations;
  const redis =
    redisCommands === undefined ? 'no Redis (counters in the process)' : `${format(redisCommands, 1)} Redis commands`;
  const perAnswer = `per answer: ${format(transactions, 1)} PostgreSQL transactions, ${format(rowsWritten, 1)} rows written, ${redis}`;
  const perRound = `${results.map((result) => format(result.okPerSecond, 1)).join(' / ')} per second`;
  const notes = [perAnswer, ...troubles(results)];
  return row(id, label, '/s per core', perCore, { text: 'information', met: clean }, perRound, {
    non2xx,
    errors,
    notes,
  });
}

/**
 * Figure 10, sizing in Keycloak's manner: logins and session reads a second per core of the
 * service's own CPU (hashing threads included), and what each asks of PostgreSQL and Redis.
 */
export async function figureSizing(context: BenchContext): Promise<Row[]> {
  return withService(context, '10', async (service) => {
    await ensureCustomers(context, service, Math.ceil(context.seconds * 150));
    const cookie = await signedInCookie(context, service);
    const login = await phase(context, service, 'login', (seconds) => loginLoad(context, service.url, seconds));
    const sessionRead = await phase(context, service, 'session read', (seconds) =>
      sessionLoad(service.url, '/api/v1/customer/auth/session', cookie, seconds),
    );
    context.sizing = {
      loginsPerCore: login.perCore,
      loginsPerSecond: login.perSecond,
      sessionReadsPerCore: sessionRead.perCore,
      sessionReadsPerSecond: sessionRead.perSecond,
      perLogin: login.operations,
      perSessionRead: sessionRead.operations,
    };
    return [
      sizingRow('10a', 'logins a second per core of service CPU (hashing threads included)', login),
      sizingRow('10b', 'session reads a second per core of service CPU', sessionRead),
    ];
  });
}
