import { countCustomers, lockCustomers } from '../auth/tables/customers.js';
import { attributeUnownedMessages } from '../delivery/outbox.js';
import { forStore, type Database } from '../storage/database.js';
import { announceStoreChange, firstStoreId } from '../store/store.js';
import { migrations } from '../storage/migrations.js';
import { LegacyFolderError, openLegacyFolder, type OpenOptions } from '../storage/pglite-folder.js';
import { copyTables, type CopyProgress } from '../storage/table-copy.js';
import { counted } from './counted.js';

/**
 * `storefront-auth import <folder>`: the rows of a PGlite data folder of an earlier version, copied
 * into this version's store in one transaction. The store's tables must already be those of this
 * version (the caller migrates first) and it must hold no customer.
 */

export interface ImportSummary {
  status: 'imported';
  source: string;
  /** The migrations the earlier version had applied to its folder. */
  source_migrations: number[];
  /** Rows copied, by table, in the order they were copied. */
  rows: Record<string, number>;
  /** Messages of the outbox given the customer they are about (a column the earlier version lacked). */
  messages_attributed: number;
}

/** Refused before anything is written; the message says why. */
export class ImportRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportRefusedError';
  }
}

/** Every this many rows of one table, a progress line besides the one at its end. */
const progressEvery = 100_000;

async function sourceMigrations(source: Awaited<ReturnType<typeof openLegacyFolder>>, folder: string) {
  const [found] = await source.query<{ present: boolean }>(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS present",
  );
  if (found?.present !== true)
    throw new LegacyFolderError(`${folder} holds no storefront-auth tables (it has no schema_migrations)`);
  const rows = await source.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  const versions = rows.map((row) => Number(row.version));
  const known = new Set(migrations.map((migration) => migration.version));
  const unknown = versions.filter((version) => !known.has(version));
  if (unknown.length > 0)
    throw new LegacyFolderError(
      `${folder} has migrations this version does not know (${unknown.join(', ')}): it is from a newer version`,
    );
  return versions;
}

/** Reads `folder` through a copy in `options.scratch` (see openLegacyFolder): the folder is never written. */
export async function importLegacyFolder(
  db: Database,
  folder: string,
  report: (line: string) => void = () => {},
  options: OpenOptions = {},
): Promise<ImportSummary> {
  const source = await openLegacyFolder(folder, options);
  try {
    const versions = await sourceMigrations(source, folder);
    let nextMark = progressEvery;
    const progress = ({ table, rows, done }: CopyProgress) => {
      if (done) {
        report(`${table}: ${counted(rows, 'row')}`);
        nextMark = progressEvery;
      } else if (rows >= nextMark) {
        report(`${table}: ${counted(rows, 'row')} so far`);
        nextMark = (Math.floor(rows / progressEvery) + 1) * progressEvery;
      }
    };
    // An earlier version had one store, with the id the first store keeps: its rows become that store's.
    return await forStore(db, firstStoreId).transaction(async (tx) => {
      await lockCustomers(tx);
      const customers = await countCustomers(tx);
      if (customers > 0)
        throw new ImportRefusedError(
          `the store already holds ${counted(customers, 'customer')}: import only into a store without customers; nothing was imported`,
        );
      report(`reading ${folder} (migrations ${versions.join(', ')})`);
      const { copied, skipped } = await copyTables(source, tx, {
        progress,
        renamed: { store: 'stores' },
        // The earlier `store` table had no slug; the first store's is its id.
        fill: { store_id: firstStoreId, slug: firstStoreId },
      });
      await announceStoreChange(tx, firstStoreId);
      for (const table of skipped) report(`${table}: skipped, this version has no such table`);
      const attributed = await attributeUnownedMessages(tx);
      return {
        status: 'imported',
        source: folder,
        source_migrations: versions,
        rows: copied,
        messages_attributed: attributed,
      } satisfies ImportSummary;
    });
  } finally {
    await source.close();
  }
}
