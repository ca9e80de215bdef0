import { randomInt } from 'node:crypto';
import { Algorithm, hash } from '@node-rs/argon2';
import pg from 'pg';
import { productionArgon2 } from '../../src/auth/rules/password.js';
import { format, median, progress, withService, type BenchContext, type Row } from '../context.js';
import { auth, hashingConnections, sessionLoad } from '../customer-load.js';
import { runLoad } from '../load.js';
import { waitUntilIdle } from '../proc.js';
import { p99s, rates, ratioRow, runRounds, type Series } from '../rounds.js';

/** Customers (each with one live session) in the database at each step. */
export const growthSizes = [1_000, 100_000, 1_000_000] as const;
/** Short rounds: the figure compares sizes within itself, and seeding a million rows takes its own time. */
export const growthSeconds = 2;
/** At the largest size, throughput at least this share of the smallest's, and p99 at most its inverse times. */
const growthGoal = 0.9;

/**
 * Adds customers from+1 … to, each with the session `growth-session-<n>`, in plain SQL: one real
 * PHC string (the production parameters) serves every row.
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
  login: Series;
  session: Series;
}

function growthRow(id: string, label: string, steps: Step[], pick: (step: Step) => Series): Row {
  const [first, last] = [steps[0]!, steps[steps.length - 1]!];
  const p99 = (step: Step) => median(p99s(pick(step).results));
  const p99Limit = 1 / growthGoal;
  return ratioRow({
    id,
    label: `${label} with ${format(last.size)} customers and sessions (${growthSeconds} s rounds)`,
    ours: pick(last),
    theirs: pick(first).results,
    names: ['', ''],
    baselineLabel: `with ${format(first.size)}`,
    goal: growthGoal,
    also: { text: `p99 ≤ ${format(p99Limit, 2)}× the smaller's`, met: p99(last) / p99(first) <= p99Limit },
    countTheirs: false,
    counted: steps.slice(0, -1).flatMap((step) => pick(step).results),
    rounds: steps
      .map(
        (step) =>
          `${format(step.size)}: ${format(median(rates(pick(step).results)), 1)}/s, p99 ${format(p99(step), 1)} ms`,
      )
      .join('; '),
  });
}

/**
 * Figure 11: does a login or a session read slow down as the tables grow? The same service process
 * measures both at each size, the rows added between steps by `seed`.
 */
export async function figureGrowth(context: BenchContext): Promise<Row[]> {
  const passwordHash = await hash(context.password, { algorithm: Algorithm.Argon2id, ...productionArgon2 });
  return withService(context, '11', async (service) => {
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
            path: `${auth}/login`,
            connections: hashingConnections,
            seconds,
            body: () => ({ identity: `growth-${randomInt(1, size + 1)}@bench.example`, password: context.password }),
          });
        const read = (seconds: number) =>
          sessionLoad(
            service.url,
            `${auth}/session`,
            () => `storefront_session=growth-session-${randomInt(1, size + 1)}`,
            seconds,
          );
        await read(1);
        const [logins, sessions] = await runRounds(
          context,
          '11',
          [
            { name: `${format(size)} login`, run: login, service },
            { name: `${format(size)} session`, run: read, service },
          ],
          { ownPids: [service.pid], seconds: growthSeconds },
        );
        steps.push({ size, login: logins!, session: sessions! });
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
