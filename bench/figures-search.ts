import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { format, progress, withService, type BenchContext, type Row } from './context.js';
import { uploadImport } from './figures-import.js';
import { freePort, type Server } from './servers.js';

/**
 * Figure 16: staff finding a customer. A store of 100,000 customers (imported through the admin
 * API, then analyzed as autovacuum would), searched the way support types: the first 2 to 6
 * characters of an email or of a name, one call after another, each answering its first page of
 * 100. The goal is that a search never reads the store: p99 under 50 ms.
 */

const customers = 100_000;
const goalMs = 50;
// Each admin token may make 1,000 calls a minute: the searches spread over as many as their pace needs.
const tokens = Array.from(
  { length: 64 },
  (_, n) => `bench-search-token-${String(n).padStart(2, '0')}-AAAAAAAAAAAAAAAAAAAA`,
);
const adminToken = tokens[0]!;
const given = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'frances', 'john', 'margaret', 'ken'];
const family = [
  'lovelace',
  'hopper',
  'turing',
  'dijkstra',
  'liskov',
  'knuth',
  'allen',
  'backus',
  'hamilton',
  'thompson',
];

function customerLine(n: number): string {
  const first = given[n % given.length]!;
  const last = family[Math.floor(n / given.length) % family.length]!;
  const name = `${first[0]!.toUpperCase()}${first.slice(1)} ${last[0]!.toUpperCase()}${last.slice(1)} ${n}`;
  return `${JSON.stringify({ email: `${first}.${last}.${n}@example.com`, name, verified: n % 3 !== 0 })}\n`;
}

async function importCustomers(context: BenchContext, service: Server): Promise<void> {
  const file = path.join(os.tmpdir(), `storefront-search-${process.pid}.ndjson`);
  fs.writeFileSync(file, Array.from({ length: customers }, (_, n) => customerLine(n)).join(''));
  const headers = { authorization: `Bearer ${adminToken}` };
  try {
    const location = await uploadImport(service, file, adminToken);
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const report = (await (await fetch(`${service.adminUrl}${location}`, { headers })).json()) as Record<
        string,
        unknown
      >;
      if (report['status'] === 'running') continue;
      if (report['status'] !== 'done' || report['created'] !== customers)
        throw new Error(`the import ended ${JSON.stringify(report)}`);
      progress(context, `fig 16: ${format(customers)} customers imported`);
      return;
    }
  } finally {
    fs.rmSync(file, { force: true });
  }
}

async function analyze(context: BenchContext): Promise<void> {
  const client = new pg.Client({ connectionString: context.backend.serverUrl(context.backend.serviceDatabase) });
  await client.connect();
  try {
    await client.query('VACUUM (ANALYZE) customers');
  } finally {
    await client.end();
  }
}

/** What support types: the start of an email or of a name, 2 to 13 characters of it. */
function queries(count: number): string[] {
  return Array.from({ length: count }, (_, n) => {
    const [line] = customerLine((n * 7919) % customers)
      .match(/"(?:email|name)":"[^"]*"/g)!
      .slice(n % 2, (n % 2) + 1);
    const text = line!.slice(line!.indexOf(':') + 2, -1);
    return text.slice(0, 2 + (n % 12));
  });
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export async function figureSearch(context: BenchContext): Promise<Row> {
  const port = await freePort();
  return withService(
    context,
    '16',
    async (service) => {
      await importCustomers(context, service);
      await analyze(context);
      const timings: number[] = [];
      let refused = 0;
      let empty = 0;
      const deadline = performance.now() + context.seconds * context.rounds * 1000;
      for (const [n, query] of queries(100_000).entries()) {
        if (performance.now() > deadline) break;
        const started = performance.now();
        const answer = await fetch(
          `${service.adminUrl}/admin/v1/stores/default/customers?query=${encodeURIComponent(query)}&limit=100`,
          { headers: { authorization: `Bearer ${tokens[n % tokens.length]}` } },
        );
        const body = (await answer.json()) as { customers?: unknown[] };
        timings.push(performance.now() - started);
        if (answer.status !== 200) refused += 1;
        else if ((body.customers ?? []).length === 0) empty += 1;
      }
      const p50 = percentile(timings, 50);
      const p99 = percentile(timings, 99);
      progress(context, `fig 16: ${timings.length} searches, p50 ${format(p50, 1)} ms, p99 ${format(p99, 1)} ms`);
      return {
        id: '16',
        label: `staff search of a store of ${format(customers)} customers by the start of an email or name, first page of 100, milliseconds per call (p99)`,
        unit: 'ms',
        value: p99,
        goal: { text: `p99 < ${goalMs} ms`, met: p99 < goalMs && refused === 0 && empty === 0 },
        non2xx: refused,
        errors: 0,
        rounds: `${timings.length} searches one after another; p50 ${format(p50, 1)} ms, p99 ${format(p99, 1)} ms, max ${format(Math.max(...timings), 1)} ms; ${empty} found nothing`,
        notes: [],
      };
    },
    { port, env: { ADMIN_TOKENS: tokens.join(',') } },
  );
}
