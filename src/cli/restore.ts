import type { Config } from '../config.js';
import { createLogger, openDatabase } from '../services.js';
import { BackupFileError, openBackup, secretFingerprint, type BackupHeader } from '../storage/backup-file.js';
import type { Database, Queryable } from '../storage/database.js';
import { applyMigrations, migrationLockKey, migrations } from '../storage/migrations.js';
import { describeTables, migrationTable, tableWriter, type Table, type TableWriter } from '../storage/table-copy.js';
import { BackupRefusedError } from './backup.js';
import { counted } from './counted.js';
import { tableProgress, type TableProgress } from './table-progress.js';

/**
 * `storefront-auth restore <file>`: a backup loaded into an empty database in one transaction, on
 * the schema it was made from, which this version's later migrations then bring up to date.
 */

export interface RestoreSummary {
  status: 'restored';
  file: string;
  made_at: string;
  schema_version: number;
  /** This version's migrations that came after the backup's schema, run on its rows. */
  migrations_applied: number[];
  /** Rows restored, by table. */
  rows: Record<string, number>;
  /** Whether this deployment's secret is the backed-up one's (APP_SECRET or an APP_SECRET_PREVIOUS entry). */
  secret: 'same' | 'previous' | 'different';
}

export interface CheckedBackup {
  header: BackupHeader;
  /** Rows by table, as the file holds them. */
  rows: Record<string, number>;
}

/**
 * Reads the whole file once before anything is opened: one that is damaged, cut short, or made by
 * a newer version is refused without a database being started or touched.
 */
export async function checkBackup(file: string): Promise<CheckedBackup> {
  const { header, events } = await openBackup(file);
  const known = new Set(migrations.map((migration) => migration.version));
  if (!header.migrations.every((version) => known.has(version))) {
    await events.return(undefined);
    const latest = Math.max(...known);
    throw new BackupFileError(
      `${file} was made by storefront-auth ${header.made_by} on schema version ${header.schema_version}, newer than this version's (${latest}): restore it with that version or a newer one; nothing was restored`,
    );
  }
  const rows: Record<string, number> = {};
  for await (const event of events) if (event.kind === 'end') rows[event.table] = event.rows;
  return { header, rows };
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** What the target holds, said for the refusal. */
async function holdings(tx: Queryable, tables: Map<string, Table>, filled: string[]): Promise<string> {
  if (!tables.has('customers') || !tables.has('stores')) return `rows (in ${filled.join(', ')})`;
  const [row] = await tx.query<{ customers: number; stores: number }>(
    'SELECT (SELECT count(*) FROM customers)::int AS customers, (SELECT count(*) FROM stores)::int AS stores',
  );
  return `${counted(row!.customers, 'customer')} in ${counted(row!.stores, 'store')}`;
}

/**
 * Leaves the target without tables. One that holds a row is refused unless `force` says to
 * replace it; one that only has empty tables (a `migrate` ran) is cleared without asking.
 */
async function clearTarget(tx: Queryable, force: boolean): Promise<void> {
  const tables = await describeTables(tx);
  if (tables.size === 0) return;
  const filled: string[] = [];
  for (const name of tables.keys()) {
    if (name === migrationTable) continue;
    const [row] = await tx.query<{ filled: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quote(name)}) AS filled`);
    if (row?.filled === true) filled.push(name);
  }
  if (filled.length > 0 && !force)
    throw new BackupRefusedError(
      `the database to restore into is not empty: it holds ${await holdings(tx, tables, filled)}. Restore into a fresh data folder (or an empty database), or add --force to replace everything it holds; nothing was restored`,
    );
  await tx.exec(`DROP TABLE ${[...tables.keys()].map(quote).join(', ')} CASCADE`);
}

/** Loads the rows of `file` into the database, in one transaction: a failure leaves none of them. */
export async function restoreDatabase(
  db: Database,
  file: string,
  {
    force = false,
    expected = {},
    progress = tableProgress(),
  }: { force?: boolean; expected?: Record<string, number>; progress?: TableProgress } = {},
): Promise<Omit<RestoreSummary, 'secret'>> {
  return db.transaction(async (tx) => {
    // Instances starting meanwhile wait, rather than migrate a half-restored schema.
    await tx.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey]);
    await clearTarget(tx, force);
    const { header, events } = await openBackup(file);
    await applyMigrations(tx, header.schema_version);
    const tables = await describeTables(tx);
    const restored: Record<string, number> = {};
    let current: { name: string; writer: TableWriter; order: number[]; rows: number } | undefined;
    for await (const event of events) {
      if (event.kind === 'table') {
        const table = tables.get(event.table);
        const missing = event.columns.filter((name) => !table?.columns.some((column) => column.name === name));
        if (table === undefined || missing.length > 0)
          throw new BackupFileError(
            `${file} does not match schema version ${header.schema_version}: ${table === undefined ? `it has a table ${event.table}` : `${event.table} has columns ${missing.join(', ')}`} that the schema lacks; nothing was restored`,
          );
        const writer = await tableWriter(tx, table, event.columns);
        // The file's order of the values of each row, as the writer takes them.
        const order = writer.columns.map((column) => event.columns.indexOf(column.name));
        current = { name: event.table, writer, order, rows: 0 };
      } else if (event.kind === 'rows') {
        await current!.writer.write(event.rows.map((row) => current!.order.map((index) => row[index] ?? null)));
        current!.rows += event.rows.length;
        progress.rows(current!.name, current!.rows, expected[current!.name]);
      } else {
        await current!.writer.finish();
        restored[event.table] = current!.rows;
        progress.done(event.table, current!.rows);
      }
    }
    const later = await applyMigrations(tx);
    return {
      status: 'restored',
      file,
      made_at: header.made_at,
      schema_version: header.schema_version,
      migrations_applied: later,
      rows: restored,
    };
  });
}

/**
 * The command. In embedded mode it starts the server of DATA_DIR (making it, in a fresh folder)
 * and refuses a folder a running service uses; with DATABASE_URL it writes to that database.
 */
export async function runRestore(config: Config, file: string, force: boolean): Promise<RestoreSummary> {
  const progress = tableProgress();
  const checked = await checkBackup(file);
  const { header } = checked;
  progress.say(
    `${file}: made ${header.made_at} by storefront-auth ${header.made_by}, schema version ${header.schema_version}, ${counted(Object.keys(checked.rows).length, 'table')}`,
  );
  const opened = await openDatabase(config, {
    shareRunning: false,
    max: 2,
    log: createLogger({ level: 'warn', destination: 'stderr' }),
  });
  try {
    const restored = await restoreDatabase(opened.maintenance, file, {
      force,
      expected: checked.rows,
      progress,
    });
    const secrets = [opened.secret, ...config.appSecretPrevious].map(secretFingerprint);
    const index = secrets.indexOf(header.secret_fingerprint);
    const secret = index === 0 ? 'same' : index > 0 ? 'previous' : 'different';
    if (secret === 'different')
      progress.say(
        `warning: the backup was made under another deployment secret. Passwords and sessions work; sign-in providers' client secrets, queued messages and codes sent before it do not, until ${config.database.mode === 'embedded' ? `DATA_DIR/secret (${config.database.dataDir}/secret) holds` : 'APP_SECRET is'} the backed-up deployment's secret (or APP_SECRET_PREVIOUS names it)`,
      );
    return { ...restored, secret };
  } finally {
    await opened.release();
  }
}
