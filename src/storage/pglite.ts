import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import type { Database, Queryable } from './database.js';

/**
 * 16 MB of buffers instead of PostgreSQL's 128 MB: the store's working set is small, and PGlite's
 * WebAssembly memory never shrinks, so the default cost a reopened database about 130 MB of RSS.
 */
const settings = ['shared_buffers = 16MB'];

function wrap(client: Pick<PGlite, 'query' | 'exec'>): Queryable {
  return {
    async exec(sql: string) {
      await client.exec(sql);
    },
    async query<Row>(sql: string, params: readonly unknown[] = []) {
      const result = await client.query<Row>(sql, params as unknown[]);
      return result.rows;
    },
  };
}

/**
 * Creating a database (initdb) takes PGlite's WebAssembly memory to about 900 MB, which it then
 * keeps for the life of the process. A short-lived child process does it instead, so the service
 * only ever opens an existing folder.
 */
async function createDataFolder(dataDir: string): Promise<void> {
  const script = `
    const { PGlite } = await import(${JSON.stringify(import.meta.resolve('@electric-sql/pglite'))});
    const pg = await PGlite.create({ dataDir: process.argv[1] });
    await pg.close();
  `;
  await promisify(execFile)(process.execPath, ['--input-type=module', '--eval', script, dataDir], {
    timeout: 120_000,
  });
}

/** PGlite: a real PostgreSQL compiled to WebAssembly, in a folder or (no folder) in memory. */
export async function openPglite(dataDir?: string, { creating }: { creating?: () => void } = {}): Promise<Database> {
  if (dataDir !== undefined && !fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    creating?.();
    await createDataFolder(dataDir);
  }
  const pg = await PGlite.create({ ...(dataDir === undefined ? {} : { dataDir }), postgresqlconf: settings });
  const base = wrap(pg);
  return {
    ...base,
    transaction: (work) => pg.transaction((tx) => work(wrap(tx))),
    close: () => pg.close(),
  };
}
