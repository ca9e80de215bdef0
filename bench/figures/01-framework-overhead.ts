import { cpuSummary, format, median, medianMainMs, withService, type BenchContext, type Row } from '../context.js';
import { runLoad } from '../load.js';
import { measureServiceCpu, type ServiceCpu } from '../proc.js';
import { ratioRow, readRss, runRounds } from '../rounds.js';
import { startBareFastify, type Server } from '../servers.js';

export const warmupSeconds = 1;

export interface VersusBare {
  id: string;
  figure: string;
  path: string;
  /** What the yardstick answers (its cheapest GET when the service's path has no twin). */
  barePath: string;
  /** The yardstick's name; bare Fastify unless said. */
  bareLabel?: string;
  label: string;
  connections: number;
  /** Sent to the service, and to the yardstick too with `headersToBare`. */
  headers?: Record<string, string>;
  headersToBare?: boolean;
  goal: number;
  maxMainMs?: number;
}

/** One GET through the whole service stack against a yardstick server, rounds alternating. */
export async function versusBare(context: BenchContext, service: Server, bare: Server, spec: VersusBare): Promise<Row> {
  const bareName = spec.bareLabel ?? 'bare Fastify';
  const load = (url: string, path: string, headers?: Record<string, string>) => (seconds: number) =>
    runLoad({ url, method: 'GET', path, connections: spec.connections, seconds, ...(headers && { headers }) });
  const ours = load(service.url, spec.path, spec.headers);
  const theirs = load(bare.url, spec.barePath, spec.headersToBare ? spec.headers : undefined);
  await ours(warmupSeconds);
  await theirs(warmupSeconds);
  const bareCpus: ServiceCpu[] = [];
  const [service_, yardstick] = await runRounds(
    context,
    spec.figure,
    [
      {
        name: `${spec.id} ${spec.path} service`,
        run: ours,
        service,
        after: readRss(context, service, spec.figure, (round) => `${spec.id} round ${round}`),
      },
      {
        name: `${spec.id} ${spec.barePath} ${bareName}`,
        run: async (seconds) => {
          const stopCpu = measureServiceCpu(bare.pid);
          const result = await theirs(seconds);
          bareCpus.push(stopCpu(result.responses));
          return result;
        },
      },
    ],
    { ownPids: [service.pid, bare.pid], alternate: true },
  );
  const bareMs = median(bareCpus.map((cpu) => cpu.mainMsPerAnswer));
  return ratioRow({
    id: spec.id,
    label: spec.label,
    ours: service_!,
    theirs: yardstick!.results,
    names: ['service', 'bare'],
    baselineLabel: spec.barePath === spec.path ? bareName : `${bareName} GET ${spec.barePath.replace('/api/v1', '')}`,
    goal: spec.goal,
    ...(spec.maxMainMs !== undefined && { maxMainMs: spec.maxMainMs }),
    notes: [
      cpuSummary(service_!.cpus),
      `${bareName} main thread ${format(bareMs, 3)} ms CPU per answer against the service's ${format(medianMainMs(service_!.cpus), 3)} ms`,
    ],
  });
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
        const label = `GET ${path.replace('/api/v1', '')} req/s, 100 connections`;
        const spec = { id, figure: '1', path, barePath: path, label, connections: 100, goal: 0.85 };
        rows.push(await versusBare(context, service, bare, spec));
      }
      return rows;
    });
  } finally {
    await bare.stop();
  }
}
