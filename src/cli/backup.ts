import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { createLogger, openDatabase } from '../services.js';
import {
  BackupWriter,
  backupFormat,
  backupFormatVersion,
  secretFingerprint,
  type BackupHeader,
} from '../storage/backup-file.js';
import type { Database, Queryable } from '../storage/database.js';
import { serverFolder } from '../storage/embedded-postgres-folder.js';
import { breachedHashesTable } from '../auth/tables/breached-hashes.js';
import { describeTables, migrationTable, parentsFirst, readTable } from '../storage/table-copy.js';
import { packageVersion } from '../version.js';
import { tableProgress, type TableProgress } from './table-progress.js';

/**
 * `storefront-auth backup <file>`: every table of the database, read in one snapshot, into a
 * backup file (storage/backup-file.ts) that `storefront-auth restore` loads into an empty one.
 */

export interface BackupSummary {
  status: 'backed_up';
  file: string;
  schema_version: number;
  made_at: string;
  /** Rows saved, by table, in the order they were saved (parents first). */
  rows: Record<string, number>;
  bytes: number;
}

/** Refused before anything is written, or said of a backup file that cannot be restored. */
export class BackupRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupRefusedError';
  }
}

async function appliedMigrations(tx: Queryable): Promise<number[]> {
  const [found] = await tx.query<{ present: boolean }>(
    `SELECT to_regclass('${migrationTable}') IS NOT NULL AS present`,
  );
  if (found?.present !== true)
    throw new BackupRefusedError('the database holds no storefront-auth tables: there is nothing to back up');
  const rows = await tx.query<{ version: number }>(`SELECT version FROM ${migrationTable} ORDER BY version`);
  return rows.map((row) => Number(row.version));
}

/**
 * Writes the backup. One repeatable-read transaction reads every table, so the file holds the
 * database as it was at one instant however long the reading takes while the service writes on:
 * a customer registered meanwhile is in none of the tables, never in some of them.
 */
export async function backupDatabase(
  db: Database,
  file: string,
  { secret, progress = tableProgress() }: { secret: string; progress?: TableProgress },
): Promise<BackupSummary> {
  return db.transaction(async (tx) => {
    // Before any read, which is what takes the snapshot. Values are written in the forms any server
    // reads back alike, whatever its own settings: ISO dates in UTC, exact floats, hex bytea.
    await tx.exec(`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
      SET LOCAL DateStyle = 'ISO, YMD'; SET LOCAL TimeZone = 'UTC'; SET LOCAL IntervalStyle = 'postgres';
      SET LOCAL extra_float_digits = 3; SET LOCAL bytea_output = 'hex'`);
    const migrations = await appliedMigrations(tx);
    const tables = await describeTables(tx);
    const header: BackupHeader = {
      format: backupFormat,
      format_version: backupFormatVersion,
      schema_version: Math.max(0, ...migrations),
      migrations,
      made_at: new Date().toISOString(),
      made_by: packageVersion,
      secret_fingerprint: secretFingerprint(secret),
    };
    const writer = await BackupWriter.open(file, header);
    try {
      const saved: Record<string, number> = {};
      // Parents first, so a restore can write the rows in the order they come.
      for (const name of parentsFirst(
        tables,
        [...tables.keys()].filter((table) => table !== migrationTable && table !== breachedHashesTable),
      )) {
        const table = tables.get(name)!;
        if (table.key.length === 0) throw new Error(`the table ${name} has no primary key to read it by`);
        const columns = table.columns.filter((column) => !column.generated).map((column) => column.name);
        const key = table.key.map((column) => table.columns.find((c) => c.name === column)!);
        await writer.startTable(name, columns);
        let rows = 0;
        for await (const page of readTable(tx, name, columns, key)) {
          await writer.writeRows(page);
          rows += page.length;
          progress.rows(name, rows);
        }
        await writer.endTable(rows);
        progress.done(name, rows);
        saved[name] = rows;
      }
      const bytes = await writer.commit(saved);
      return {
        status: 'backed_up',
        file,
        schema_version: header.schema_version,
        made_at: header.made_at,
        rows: saved,
        bytes,
      } satisfies BackupSummary;
    } catch (error) {
      await writer.abandon();
      throw error;
    }
  });
}

/**
 * The command: beside a running service it reads through that service's embedded server (as every
 * command does); without one it starts the server for its length. It never migrates or writes.
 */
export async function runBackup(config: Config, file: string): Promise<BackupSummary> {
  const folder = path.dirname(file);
  try {
    fs.accessSync(folder, fs.constants.W_OK);
  } catch (error) {
    throw new BackupRefusedError(`cannot write ${file}: ${(error as Error).message}`);
  }
  const { database } = config;
  if (database.mode === 'embedded' && !fs.existsSync(path.join(serverFolder(database.dataDir), 'PG_VERSION')))
    throw new BackupRefusedError(`DATA_DIR=${database.dataDir} holds no database: there is nothing to back up`);
  const opened = await openDatabase(config, {
    shareRunning: true,
    max: 2,
    log: createLogger({ level: 'warn', destination: 'stderr' }),
  });
  try {
    return await backupDatabase(opened.maintenance, file, { secret: opened.secret });
  } finally {
    await opened.release();
  }
}
