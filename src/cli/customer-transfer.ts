import type { Keys } from '../keys.js';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { exportCustomers } from '../auth/flows/customer-export.js';
import { reportedImport } from '../auth/flows/customer-import.js';
import { importLines, ImportInputError, type ImportRefusal } from '../auth/rules/import-line.js';
import { startImport, type ImportCounts } from '../auth/tables/customer-imports.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { configuredHasher } from '../services.js';
import { forStore, type Database } from '../storage/database.js';
import { commandStore } from './commands.js';
import { counted } from './counted.js';

/**
 * `customers import` and `customers export`: the admin API's import and export from the command
 * line, through the same code, on a file. The import shows its progress on standard error: a bar
 * with lines, lines a second and the time left on a terminal, a line every ten seconds elsewhere.
 */

export type CustomersCommand =
  | { name: 'customers.import'; store?: string; file: string; dryRun: boolean }
  | { name: 'customers.export'; store?: string; file?: string };

/** What the command printed, and its exit code (1 when a line was refused or the store is unknown). */
export interface TransferOutcome {
  code: number;
  output?: unknown;
}

const liveRedrawMs = 200;
const plainLineMs = 10_000;

export async function runCustomersCommand(
  db: Database,
  clock: Clock,
  config: Config,
  keys: Keys,
  command: CustomersCommand,
  stream: NodeJS.WriteStream = process.stderr,
): Promise<TransferOutcome> {
  const store = await commandStore(db, command.store);
  if (typeof store === 'string') {
    stream.write(`storefront-auth: ${store}\n`);
    return { code: 1 };
  }
  const sdb = forStore(db, store.id);
  if (command.name === 'customers.export') {
    const output = command.file === undefined ? process.stdout : fs.createWriteStream(command.file, { mode: 0o600 });
    await pipeline(exportCustomers(sdb), output);
    return { code: 0 };
  }
  if (!fs.existsSync(command.file)) {
    stream.write(`storefront-auth: ${command.file}: no such file\n`);
    return { code: 1 };
  }
  const size = fs.statSync(command.file).size;
  const importId = randomUUID();
  if (!(await startImport(sdb, clock, importId, command.dryRun))) {
    stream.write(`storefront-auth: an import of store ${store.slug} is running; wait for it to end\n`);
    return { code: 1 };
  }
  const refusalsFile = `${command.file}.refused`;
  const refusals = fs.createWriteStream(refusalsFile, { mode: 0o600 });
  let bytesRead = 0;
  const counting = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytesRead += chunk.length;
      callback(null, chunk);
    },
  });
  const lines = importLines(fs.createReadStream(command.file).pipe(counting));
  const progress = progressLine(stream, size, () => bytesRead);
  const deps = {
    db: sdb,
    clock,
    hasher: configuredHasher(config),
    keys,
    allowedCallingCodes: config.smsAllowedCallingCodes,
    // Invitations wait in the outbox until a running service's dispatcher next looks.
    messagesQueued: () => {},
    eventsRecorded: () => {},
  };
  let counts: ImportCounts;
  try {
    counts = await reportedImport(deps, store, importId, lines, {
      dryRun: command.dryRun,
      progress: progress.update,
      refused: (refused: ImportRefusal[]) => {
        for (const { line, field, reason } of refused) refusals.write(`line ${line}: ${field}: ${reason}\n`);
      },
    });
  } catch (error) {
    refusals.destroy();
    fs.rmSync(refusalsFile, { force: true });
    if (!(error instanceof ImportInputError)) throw error;
    stream.write(`\nstorefront-auth: ${command.file}: ${error.message}\n`);
    return { code: 1 };
  }
  progress.end(counts);
  await new Promise<void>((resolve) => refusals.end(() => resolve()));
  const summary = { import_id: importId, dry_run: command.dryRun, ...withoutRefusals(counts) };
  if (counts.refused === 0) {
    fs.rmSync(refusalsFile, { force: true });
    return { code: 0, output: summary };
  }
  stream.write(`storefront-auth: ${counted(counts.refused, 'line')} refused: see ${refusalsFile}\n`);
  return { code: 1, output: { ...summary, refusals_file: refusalsFile } };
}

function withoutRefusals({ refusals: _refusals, ...counts }: ImportCounts): Omit<ImportCounts, 'refusals'> {
  return counts;
}

/** The progress of an import of a file of `size` bytes, of which `read()` have been read. */
function progressLine(stream: NodeJS.WriteStream, size: number, read: () => number) {
  const live = stream.isTTY === true;
  const startedMs = performance.now();
  let shownMs = -Infinity;
  const describe = (counts: ImportCounts) => {
    const seconds = (performance.now() - startedMs) / 1000;
    const rate = seconds > 0 ? Math.round(counts.lines / seconds) : 0;
    const share = size > 0 ? Math.min(1, read() / size) : 1;
    const left = share > 0 ? Math.round((seconds / share) * (1 - share)) : 0;
    return { rate, share, left };
  };
  return {
    update(counts: ImportCounts) {
      const nowMs = performance.now();
      if (nowMs - shownMs < (live ? liveRedrawMs : plainLineMs)) return;
      shownMs = nowMs;
      const { rate, share, left } = describe(counts);
      const text = `${counts.lines} lines, ${rate} lines/s, ${formatDuration(left)} left`;
      if (!live) return void stream.write(`storefront-auth: import: ${text}\n`);
      const width = 24;
      const filled = Math.round(share * width);
      stream.write(
        `\r\x1b[Kstorefront-auth: [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round(share * 100)}% ${text}`,
      );
    },
    end(counts: ImportCounts) {
      const seconds = Math.round((performance.now() - startedMs) / 1000);
      const totals = `${counts.created} created, ${counts.updated} updated, ${counts.unchanged} unchanged, ${counts.refused} refused${counts.invited > 0 ? `, ${counts.invited} invited` : ''}`;
      stream.write(
        `${live ? '\r\x1b[K' : ''}storefront-auth: import: ${counted(counts.lines, 'line')} in ${formatDuration(seconds)}: ${totals}\n`,
      );
    },
  };
}

function formatDuration(seconds: number): string {
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes}m ${seconds % 60}s` : `${seconds}s`;
}
