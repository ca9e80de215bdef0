import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { hash as bcryptHash } from '@node-rs/bcrypt';
import pg from 'pg';
import { format, progress, row, sleep, withService, type BenchContext, type Row } from '../context.js';
import { auth, ensureCustomers, hashingConnections, loginLoad } from '../customer-load.js';
import { runLoad } from '../load.js';
import { ratioRow, runRounds } from '../rounds.js';
import type { Server } from '../servers.js';

/**
 * Figure 14: a store moving here. A million customers with bcrypt hashes (cost 10: a thousand real
 * ones made once per machine, reused across identities) imported through the admin API, timed to
 * its report's "done", the service's memory read during it; then the logins of imported customers
 * whose first sign-in re-hashed their password, against customers registered here.
 */

const importedCustomers = 1_000_000;
const distinctHashes = 1_000;
const rehashedCustomers = 500;
const importGoalSeconds = 5 * 60;
const importMemoryGoalMb = 50;
const adminToken = 'bench-admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const identity = (n: number) => `imported-${n}@bench.example`;

async function bcryptHashes(password: string): Promise<string[]> {
  const file = path.join(os.tmpdir(), `sfa-bench-bcrypt-10-${Buffer.from(password).toString('hex').slice(0, 16)}.json`);
  try {
    const kept = JSON.parse(fs.readFileSync(file, 'utf8')) as string[];
    if (kept.length === distinctHashes) return kept;
  } catch {}
  const hashes: string[] = [];
  for (let i = 0; i < distinctHashes; i += 16)
    hashes.push(...(await Promise.all(Array.from({ length: 16 }, () => bcryptHash(password, 10)))));
  fs.writeFileSync(file, JSON.stringify(hashes));
  return hashes;
}

/** The import file: a customer a line, written once per run. */
async function importFile(hashes: string[]): Promise<string> {
  const file = path.join(os.tmpdir(), `sfa-bench-import-${process.pid}.ndjson`);
  const out = fs.createWriteStream(file);
  for (let n = 0; n < importedCustomers; n += 1) {
    const line = `${JSON.stringify({ email: identity(n), name: `Imported ${n}`, verified: true, password_hash: hashes[n % hashes.length] })}\n`;
    if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve) => out.end(() => resolve()));
  return file;
}

/** Uploads the file to the first store's import, streamed; `tick` after it, and with each report polled every second until it ends. */
export async function runImport(
  service: Server,
  file: string,
  token: string,
  tick: (report?: Record<string, unknown>) => void = () => {},
) {
  const headers = { authorization: `Bearer ${token}` };
  const answer = await fetch(`${service.adminUrl}/admin/v1/stores/default/customers/import`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/x-ndjson' },
    body: Readable.toWeb(fs.createReadStream(file)) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  if (answer.status !== 202) throw new Error(`the import answered ${answer.status}: ${await answer.text()}`);
  await answer.arrayBuffer();
  const location = answer.headers.get('location')!;
  tick();
  for (;;) {
    await sleep(1_000);
    const report = (await (await fetch(`${service.adminUrl}${location}`, { headers })).json()) as Record<
      string,
      unknown
    >;
    tick(report);
    if (report['status'] !== 'running') return report;
  }
}

/** VACUUM (ANALYZE) of the customers, as autovacuum would soon do after a bulk insert, but before the rounds. */
export async function vacuumCustomers(context: BenchContext): Promise<number> {
  const client = new pg.Client({ connectionString: context.backend.serverUrl(context.backend.serviceDatabase) });
  await client.connect();
  const started = performance.now();
  try {
    await client.query('VACUUM (ANALYZE) customers');
  } finally {
    await client.end();
  }
  return (performance.now() - started) / 1000;
}

/** Signs each of the first imported customers in once: their bcrypt hash becomes the service's argon2id. */
async function rehash(service: Server, password: string): Promise<void> {
  for (let n = 0; n < rehashedCustomers; n += 8) {
    await Promise.all(
      Array.from({ length: 8 }, async (_, k) => {
        const answer = await fetch(`${service.url}${auth}/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.${k}.${n % 250}.${(n >> 8) + 1}` },
          body: JSON.stringify({ identity: identity(n + k), password }),
        });
        if (answer.status !== 200) throw new Error(`an imported customer's first sign-in answered ${answer.status}`);
        await answer.arrayBuffer();
      }),
    );
  }
}

export async function figureImport(context: BenchContext): Promise<Row[]> {
  const file = await importFile(await bcryptHashes(context.password));
  try {
    return await withService(
      context,
      '14',
      async (service) => {
        await ensureCustomers(context, service, rehashedCustomers);
        const idleMb = service.memory().mb;
        const started = performance.now();
        let peakMb = 0;
        const report = await runImport(service, file, adminToken, (line) => {
          peakMb = Math.max(peakMb, service.memory().mb);
          if (line !== undefined)
            progress(
              context,
              `fig 14 import: ${format(Number(line['lines']))} lines, ${line['status']}; ${format(peakMb)} MB at most`,
            );
        });
        const seconds = (performance.now() - started) / 1000;
        progress(context, `fig 14 import: done in ${format(seconds, 1)} s, ${format(peakMb - idleMb)} MB over idle`);
        progress(context, `fig 14 vacuum and analyze after the import: ${format(await vacuumCustomers(context), 1)} s`);
        await rehash(service, context.password);
        let next = 0;
        const rehashed = (s: number) =>
          runLoad({
            url: service.url,
            method: 'POST',
            path: `${auth}/login`,
            connections: hashingConnections,
            seconds: s,
            body: () => ({ identity: identity(next++ % rehashedCustomers), password: context.password }),
          });
        // Unmeasured: their first logins from the load's networks are new devices, whose notices the
        // customers registered here paid in the figures before.
        await rehashed(context.seconds);
        const [ours, native] = await runRounds(
          context,
          '14',
          [
            { name: 'rehashed logins', run: rehashed, service },
            { name: 'native logins', run: (s) => loginLoad(context, service.url, s), service },
          ],
          { ownPids: [service.pid], alternate: true },
        );
        const clean = report['status'] === 'done' && report['refused'] === 0 && report['created'] === importedCustomers;
        const outcome = `${report['status']}: ${format(Number(report['created']))} created, ${format(Number(report['refused']))} refused`;
        const grownMb = peakMb - idleMb;
        return [
          row(
            '14a',
            `import of ${format(importedCustomers)} customers with bcrypt hashes (cost 10) through the admin API, seconds from the upload's start to "done"`,
            's',
            seconds,
            { text: `≤ ${importGoalSeconds} s`, met: clean && seconds <= importGoalSeconds },
            `${format(seconds, 1)} s (${format(importedCustomers / seconds)} lines/s); ${outcome}`,
          ),
          row(
            '14b',
            'service memory during the import (RSS + database server PSS), MB above its reading just before',
            'MB',
            grownMb,
            { text: `≤ ${importMemoryGoalMb} MB`, met: clean && grownMb <= importMemoryGoalMb },
            `${format(idleMb)} MB before, ${format(peakMb)} MB at most (read every second)`,
            { baseline: idleMb, baselineLabel: 'before the import' },
          ),
          ratioRow({
            id: '14c',
            label: `login req/s, ${hashingConnections} connections, of imported customers whose first sign-in re-hashed their bcrypt hash, against customers registered here`,
            ours: ours!,
            theirs: native!.results,
            names: ['re-hashed', 'registered here'],
            baselineLabel: 'customers registered here',
            goal: 0.95,
            notes: [],
          }),
        ];
      },
      { ADMIN_TOKENS: adminToken },
    );
  } finally {
    fs.rmSync(file, { force: true });
  }
}
