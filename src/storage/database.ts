/** The smallest surface the domain needs from PostgreSQL, the embedded server or another one. */
export interface Queryable {
  // JSON goes in as text cast in SQL (`$1::text::jsonb`): drivers disagree on encoding a string
  // bound straight to a jsonb parameter (postgres.js would store it as a JSON string).
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * A handle on the database bound to one store. The modules that own the store's tables take only
 * this, and scope every statement by `storeId`: a flow cannot reach another store's rows, because
 * nothing it holds names another store.
 */
export interface StoreQueryable extends Queryable {
  readonly storeId: string;
}

export interface StoreDatabase extends StoreQueryable {
  transaction<T>(work: (tx: StoreQueryable) => Promise<T>): Promise<T>;
}

const preparedNames = new Map<string, string>();

/**
 * Marks a statement as one of the hot path's (the session check, the login's lookup): PostgreSQL
 * then parses and plans it once per connection rather than on every run, which halved the session
 * check's database work. Only for fixed texts, never one built from a varying list: each costs
 * every pooled connection a cached plan. Returns the text.
 */
export function prepared(text: string): string {
  if (!preparedNames.has(text)) preparedNames.set(text, `sfa_${preparedNames.size + 1}`);
  return text;
}

/** The name a statement marked by `prepared` runs under; undefined for any other. */
export function preparedName(text: string): string | undefined {
  return preparedNames.get(text);
}

/** A statement runner (a transaction, usually) bound to a store. */
export function inStore(db: Queryable, storeId: string): StoreQueryable {
  return {
    storeId,
    query: <Row>(sql: string, params?: readonly unknown[]) => db.query<Row>(sql, params),
    exec: (sql: string) => db.exec(sql),
  };
}

/** The database bound to a store: its transactions are too. */
export function forStore(db: Database, storeId: string): StoreDatabase {
  return {
    ...inStore(db, storeId),
    transaction: (work) => db.transaction((tx) => work(inStore(tx, storeId))),
  };
}

/** Thrown when the database cannot be reached; the edge answers 503 service_unavailable. */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super('database unavailable', { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

/**
 * The parameters of one statement whose parts different table owners write: each part asks for
 * the placeholders of its own values, so no module counts another's parameters.
 */
export class StatementParams {
  readonly values: unknown[] = [];

  /** The placeholder (`$n`) of `value`, added as the next parameter. */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** What stands in for personal data erased with an account: an outbox recipient, an audit detail. */
export const erasedValue = '(erased)';

/**
 * Whether text can be a `uuid` column's value: one from a request that is not is no row, and is
 * answered so without a query (which PostgreSQL would refuse).
 */
export function isUuid(text: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text);
}

/** Rows a table's own module wants gone; every name is a constant of that module, never input. */
export interface BatchDelete {
  table: string;
  /** The column or columns that identify a row. */
  key: readonly string[];
  /** A condition over `table`'s own columns, with parameters $1…$n. */
  where: string;
}

const sqlName = /^[a-z_][a-z0-9_]*$/;

/**
 * Deletes up to `limit` rows matching `where` and returns how many. Rows another transaction has
 * locked are skipped, never waited for, so janitors in several instances share the work without
 * deleting a row twice, and the small batch keeps any one statement's row locks short-lived.
 */
export async function deleteInBatch(
  db: Queryable,
  { table, key, where }: BatchDelete,
  params: readonly unknown[],
  limit: number,
): Promise<number> {
  for (const name of [table, ...key]) {
    if (!sqlName.test(name)) throw new Error(`not a plain SQL name: ${JSON.stringify(name)}`);
  }
  if (key.length === 0) throw new Error(`no key columns for ${table}`);
  const columns = key.join(', ');
  const [row] = await db.query<{ n: number }>(
    // The batch is picked once (a materialized CTE): as a plain `IN (subquery)` the planner may run
    // the subquery again for every row, and each run skips the rows this statement has just
    // deleted and hands over the next ones, past the limit.
    `WITH batch AS MATERIALIZED (
       SELECT ${columns} FROM ${table} WHERE ${where}
        LIMIT $${params.length + 1} FOR UPDATE OF ${table} SKIP LOCKED),
     gone AS (
       DELETE FROM ${table} WHERE (${columns}) IN (SELECT ${columns} FROM batch)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [...params, limit],
  );
  return row?.n ?? 0;
}
