import { PGlite } from '@electric-sql/pglite';
import type { Database, Queryable } from './database.js';

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

/** PGlite: a real PostgreSQL compiled to WebAssembly, in a folder or (no folder) in memory. */
export async function openPglite(dataDir?: string): Promise<Database> {
  const pg = await PGlite.create(dataDir === undefined ? undefined : { dataDir });
  const base = wrap(pg);
  return {
    ...base,
    transaction: (work) => pg.transaction((tx) => work(wrap(tx))),
    close: () => pg.close(),
  };
}
