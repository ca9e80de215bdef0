import { randomInt } from 'node:crypto';
import { Algorithm, hash } from '@node-rs/argon2';
import pg from 'pg';
import { productionArgon2 } from '../src/auth/rules/password.js';
import { format, measuredRound, median, progress, withService, type BenchContext, type Row } from './context.js';
import { hashingConnections, sessionLoad } from './customer-load.js';
import { runLoad, statusText, sum, type LoadResult } from './load.js';
import { waitUntilIdle } from './proc.js';
import type { Server } from './servers.js';

/** Customers (each with one live session) in the database at each step. */
export const growthSizes = [1_000, 100_000, 1_000_000] as const;
/** Short rounds: the figure compares sizes within itself, and seeding a million rows takes its own time. */
export const growthSeconds = 2;
/** At the largest size, throughput at least this share of the smallest's, and p99 at most its inverse times. */
const growthGoal = 0.9;

function identity(n: number): string {
  return `growth-${n}@bench.example`;
}
/** Seeded session n's cookie value; `seed` stores its SHA-256, as the service stores a session id's. */
function sessionId(n: number): string {
  return `growth-session-${n}`;
}

/**
 * Adds customers (from+1 … to) and one session each, in plain SQL on the service's database, not
 * through the API: one real PHC string (the production parameters) serves every row, and each
 * customer gets the session `sessionId(n)`.
 */
async function seed(client: pg.Client, passwordHash: string, from: number, to: number): Promise<void> {
  await client.query(
    `WITH added AS (
       INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, verified_at, created_at, updated_at)
         SELECT 'default', gen_random_uuid(), 'Growth ' || n, 'email', 'growth-' || n || '@bench.example', $1, now(), now(), now()
           FROM generate_series($2::int, $3::int) AS n
       RETURNING store_id, id, name)
     INSERT INTO sessions (store_id, id_hash, customer_id, created_at, last_seen_at, expires_at)
       SELECT store_id, rtrim(translate(encode(sha256(convert_to('growth-session-' || substr(name, 8), 'UTF8')), 'base64'), '+/', '-_'), '='),
              id, now(), now(), now() + interval '1 day'
         FROM added`,
    [passwordHash, from + 1, to],
  );
  await client.query('ANALYZE customers');
  await client.query('ANALYZE sessions');
}

interface Step {
  size: number;
  login: LoadResult[];
  session: LoadResult[];
}

function growthRow(id: string, label: string, steps: Step[], pick: (step: Step) => LoadResult[]): Row {
  const first = steps[0]!;
  const last = steps[steps.length - 1]!;
  const rate = (step: Step) => median(pick(step).map((result) => result.okPerSecond));
  const p99 = (step: Step) => median(pick(step).map((result) => result.latency.p99));
  const ratio = rate(last) / rate(first);
  const p99Ratio = p99(last) / p99(first);
  const all = steps.flatMap(pick);
  const non2xx = sum(all, (result) => result.non2xx);
  const errors = sum(all, (result) => result.errors);
  return {
    id,
    label: `${label} with ${format(last.size)} customers and sessions (${growthSeconds} s rounds)`,
    unit: 'req/s',
    value: rate(last),
    baseline: rate(first),
    baselineLabel: `with ${format(first.size)}`,
    ratio,
    goal: {
      text: `ratio ≥ ${growthGoal.toFixed(2)}, p99 ≤ ${format(1 / growthGoal, 2)}× the smaller's`,
      met: ratio >= growthGoal && p99Ratio <= 1 / growthGoal && non2xx === 0 && errors === 0,
    },
    non2xx,
    errors,
    rounds: steps
      .map((step) => `${format(step.size)}: ${format(rate(step), 1)}/s, p99 ${format(p99(step), 1)} ms`)
      .join('; '),
    notes: all.filter((result) => result.non2xx + result.errors > 0).map(statusText),
  };
}

/**
 * Figure 11: does a login or a session read slow down as the tables grow? The same service
 * process measures both at each size, the rows added between steps by `seed`.
 */
export async function figureGrowth(context: BenchContext): Promise<Row[]> {
  const passwordHash = await hash(context.password, { algorithm: Algorithm.Argon2id, ...productionArgon2 });
  return withService(context, '11', async (service: Server) => {
    const client = new pg.Client({ connectionString: context.backend.serverUrl(context.backend.serviceDatabase) });
    await client.connect();
    try {
      const steps: Step[] = [];
      let seeded = 0;
      for (const size of growthSizes) {
        const started = performance.now();
        await seed(client, passwordHash, seeded, size);
        seeded = size;
        await waitUntilIdle(service.pid, { maxMs: 60_000 });
        progress(
          context,
          `fig 11: ${format(size)} customers and sessions seeded (${format((performance.now() - started) / 1000, 1)} s)`,
        );
        const login = (seconds: number) =>
          runLoad({
            url: service.url,
            method: 'POST',
            path: '/api/v1/customer/auth/login',
            connections: hashingConnections,
            seconds,
            body: () => ({ identity: identity(randomInt(1, size + 1)), password: context.password }),
          });
        const read = (seconds: number) =>
          sessionLoad(
            service.url,
            '/api/v1/customer/auth/session',
            () => `storefront_session=${sessionId(randomInt(1, size + 1))}`,
            seconds,
          );
        const step: Step = { size, login: [], session: [] };
        await read(1);
        for (let round = 1; round <= context.rounds; round += 1) {
          for (const [name, load] of [
            ['login', login],
            ['session', read],
          ] as const) {
            const { result } = await measuredRound(
              context,
              '11',
              service,
              () => load(growthSeconds),
              (done) => done.responses,
            );
            step[name].push(result);
            progress(
              context,
              `fig 11 ${format(size)} ${name} round ${round}/${context.rounds}: ${format(result.okPerSecond, 1)}/s, p99 ${format(result.latency.p99, 1)} ms (${statusText(result)})`,
            );
          }
        }
        steps.push(step);
      }
      return [
        growthRow('11a', 'login req/s', steps, (step) => step.login),
        growthRow('11b', 'session read req/s', steps, (step) => step.session),
      ];
    } finally {
      await client.end();
    }
  });
}
