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

/** Thrown when the database cannot be reached; the edge answers 503 service_unavailable. */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super('database unavailable', { cause });
    this.name = 'DatabaseUnavailableError';
  }
}
