import type { Database, Queryable } from '../../src/storage/database.js';

export interface Recorded {
  sql: string;
  params: readonly unknown[];
}

/**
 * The database the service is given: every statement it sends is kept, then passed on unchanged.
 * A transaction is kept as a `BEGIN` before the statements sent in it.
 */
export function recording(db: Database, log: Recorded[]): Database {
  const wrap = (target: Queryable): Queryable => ({
    async query<Row>(sql: string, params: readonly unknown[] = []) {
      log.push({ sql, params });
      return target.query<Row>(sql, params);
    },
    exec: (sql) => target.exec(sql),
  });
  return {
    ...wrap(db),
    transaction: (work) => {
      log.push({ sql: 'BEGIN', params: [] });
      return db.transaction((tx) => work(wrap(tx)));
    },
    close: () => db.close(),
  };
}
