import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pg from 'pg';
import { hash as bcryptHash } from '@node-rs/bcrypt';
import {
  format,
  measuredRound,
  median,
  medianMainMs,
  progress,
  withService,
  type BenchContext,
  type Row,
} from './context.js';
import { ensureCustomers, hashingConnections, loginLoad } from './customer-load.js';
import { runLoad, statusText, sum, type LoadResult } from './load.js';
import type { ServiceCpu } from './proc.js';
import { freePort, type Server } from './servers.js';

/**
 * Figure 14: a store moving here. A million customers with bcrypt hashes (cost 10, real ones: a
 * thousand made once with @node-rs/bcrypt, kept in the temporary folder for the next run, and
 * reused across identities) imported through the admin API; the time from the upload's start to
 * its report saying done, and the service's memory during it against its reading just before.
 * Then the logins of imported customers whose first sign-in re-hashed their password, against
 * customers registered here, rounds alternating.
 */

export const importedCustomers = 1_000_000;
const distinctHashes = 1_000;
const rehashedCustomers = 500;
const importGoalSeconds = 5 * 60;
const importMemoryGoalMb = 50;
const adminToken = 'bench-admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

/** A thousand bcrypt hashes of the benchmark's password, made once per machine. */
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

const identity = (n: number) => `imported-${n}@bench.example`;

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

interface ImportRun {
  seconds: number;
  report: Record<string, unknown>;
  idleMb: number;
  peakMb: number;
}

/** Uploads the file to the first store's import, streamed: the location of its report. */
export async function uploadImport(service: Server, file: string, token: string): Promise<string> {
  const answer = await fetch(`${service.adminUrl}/admin/v1/stores/default/customers/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
    body: Readable.toWeb(fs.createReadStream(file)) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  if (answer.status !== 202) throw new Error(`the import answered ${answer.status}: ${await answer.text()}`);
  await answer.arrayBuffer();
  return answer.headers.get('location')!;
}

async function runImport(context: BenchContext, service: Server, file: string): Promise<ImportRun> {
  const idleMb = service.memory().mb;
  const headers = { authorization: `Bearer ${adminToken}` };
  const started = performance.now();
  const location = await uploadImport(service, file, adminToken);
  let peakMb = service.memory().mb;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    peakMb = Math.max(peakMb, service.memory().mb);
    const report = (await (await fetch(`${service.adminUrl}${location}`, { headers })).json()) as Record<
      string,
      unknown
    >;
    progress(
      context,
      `fig 14 import: ${format(Number(report['lines']))} lines, ${report['status']}; ${format(peakMb)} MB at most`,
    );
    if (report['status'] !== 'running')
      return { seconds: (performance.now() - started) / 1000, report, idleMb, peakMb };
  }
}

/**
 * Vacuums and analyzes the customers table, as autovacuum would soon after a million inserts: done
 * here, before the logins are measured, rather than by autovacuum in the middle of their rounds.
 */
async function settle(context: BenchContext): Promise<void> {
  const client = new pg.Client({ connectionString: context.backend.serverUrl(context.backend.serviceDatabase) });
  await client.connect();
  try {
    const started = performance.now();
    await client.query('VACUUM (ANALYZE) customers');
    progress(
      context,
      `fig 14 vacuum and analyze after the import: ${format((performance.now() - started) / 1000, 1)} s`,
    );
  } finally {
    await client.end();
  }
}

/** Signs each of the first imported customers in once: their bcrypt hash becomes the service's argon2id. */
async function rehash(service: Server, password: string): Promise<void> {
  for (let n = 0; n < rehashedCustomers; n += 8) {
    await Promise.all(
      Array.from({ length: 8 }, async (_, k) => {
        const answer = await fetch(`${service.url}/api/v1/customer/auth/login`, {
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
  const hashes = await bcryptHashes(context.password);
  const file = await importFile(hashes);
  const port = await freePort();
  try {
    return await withService(
      context,
      '14',
      async (service) => {
        await ensureCustomers(context, service, rehashedCustomers);
        const imported = await runImport(context, service, file);
        progress(
          context,
          `fig 14 import: done in ${format(imported.seconds, 1)} s, ${format(imported.peakMb - imported.idleMb)} MB over idle`,
        );
        await settle(context);
        await rehash(service, context.password);
        let next = 0;
        const rehashedLoad = (seconds: number) =>
          runLoad({
            url: service.url,
            method: 'POST',
            path: '/api/v1/customer/auth/login',
            connections: hashingConnections,
            seconds,
            body: () => ({ identity: identity(next++ % rehashedCustomers), password: context.password }),
          });
        // Unmeasured: their first logins from the load's client networks are new devices, which queue
        // notices that the customers registered here paid in the figures before.
        await rehashedLoad(context.seconds);
        const ours: LoadResult[] = [];
        const native: LoadResult[] = [];
        const cpus: ServiceCpu[] = [];
        for (let round = 1; round <= context.rounds; round += 1) {
          for (const which of round % 2 === 1 ? (['rehashed', 'native'] as const) : (['native', 'rehashed'] as const)) {
            const { result, cpu } = await measuredRound(
              context,
              '14',
              service,
              () =>
                which === 'rehashed' ? rehashedLoad(context.seconds) : loginLoad(context, service.url, context.seconds),
              (done) => done.responses,
            );
            (which === 'rehashed' ? ours : native).push(result);
            if (which === 'rehashed') cpus.push(cpu);
            progress(
              context,
              `fig 14 ${which} logins round ${round}/${context.rounds}: ${format(result.okPerSecond, 1)}/s (${statusText(result)})`,
            );
          }
        }
        return importRows(imported, ours, native, cpus);
      },
      { port, env: { ADMIN_TOKENS: adminToken } },
    );
  } finally {
    fs.rmSync(file, { force: true });
  }
}

function importRows(imported: ImportRun, ours: LoadResult[], native: LoadResult[], cpus: ServiceCpu[]): Row[] {
  const { report } = imported;
  const clean = report['status'] === 'done' && report['refused'] === 0 && report['created'] === importedCustomers;
  const grownMb = imported.peakMb - imported.idleMb;
  const rate = median(ours.map((result) => result.okPerSecond));
  const nativeRate = median(native.map((result) => result.okPerSecond));
  const non2xx = sum(ours, (result) => result.non2xx) + sum(native, (result) => result.non2xx);
  const errors = sum(ours, (result) => result.errors) + sum(native, (result) => result.errors);
  const outcome = `${report['status']}: ${format(Number(report['created']))} created, ${format(Number(report['refused']))} refused`;
  return [
    {
      id: '14a',
      label: `import of ${format(importedCustomers)} customers with bcrypt hashes (cost 10) through the admin API, seconds from the upload's start to "done"`,
      unit: 's',
      value: imported.seconds,
      goal: { text: `≤ ${importGoalSeconds} s`, met: clean && imported.seconds <= importGoalSeconds },
      non2xx: 0,
      errors: 0,
      rounds: `${format(imported.seconds, 1)} s (${format(importedCustomers / imported.seconds)} lines/s); ${outcome}`,
      notes: [],
    },
    {
      id: '14b',
      label: 'service memory during the import (RSS + database server PSS), MB above its reading just before',
      unit: 'MB',
      value: grownMb,
      baseline: imported.idleMb,
      baselineLabel: 'before the import',
      goal: { text: `≤ ${importMemoryGoalMb} MB`, met: clean && grownMb <= importMemoryGoalMb },
      non2xx: 0,
      errors: 0,
      rounds: `${format(imported.idleMb)} MB before, ${format(imported.peakMb)} MB at most (read every second)`,
      notes: [],
    },
    {
      id: '14c',
      label: `login req/s, ${hashingConnections} connections, of imported customers whose first sign-in re-hashed their bcrypt hash, against customers registered here`,
      unit: 'req/s',
      value: rate,
      baseline: nativeRate,
      baselineLabel: 'customers registered here',
      ratio: rate / nativeRate,
      goal: { text: 'ratio ≥ 0.95', met: rate / nativeRate >= 0.95 && non2xx === 0 && errors === 0 },
      non2xx,
      errors,
      rounds: `re-hashed ${ours.map((result) => format(result.okPerSecond, 1)).join(' / ')}; registered here ${native.map((result) => format(result.okPerSecond, 1)).join(' / ')}`,
      notes: [],
      mainMs: medianMainMs(cpus),
    },
  ];
}
