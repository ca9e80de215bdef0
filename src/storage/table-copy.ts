import type { Queryable } from './database.js';

/**
 * Copies the rows of one database's tables into another's, read from the catalogs of both: every
 * table both have (the migration history excepted), in the columns both have, parents before the
 * tables whose foreign keys name them. Rows are read in key order a batch at a time and written a
 * batch per statement, so no table is ever held in memory whole. Values travel as text and are cast
 * to the target's column types, so nothing depends on how a driver parses them.
 */

export interface Column {
  name: string;
  /** The column's type as SQL spells it, for the cast. */
  type: string;
  /** Made by the database from an identity sequence. */
  identity: boolean;
  /** Computed by the database from other columns; never written. */
  generated: boolean;
}

export interface Table {
  name: string;
  columns: Column[];
  /** The primary key's columns, in key order; empty without one. */
  key: string[];
  /** The other tables its foreign keys reference. */
  references: string[];
}

export interface CopyProgress {
  table: string;
  /** Rows of this table written so far. */
  rows: number;
  done: boolean;
}

export interface CopyOptions {
  /** Rows per read and per write. */
  batchSize?: number;
  progress?: (progress: CopyProgress) => void;
  /** Source tables the target names otherwise (`{ store: 'stores' }`). */
  renamed?: Record<string, string>;
  /** Target columns the source lacks, written with one value in every row (`{ store_id: 'default' }`). */
  fill?: Record<string, string>;
}

export interface CopyReport {
  /** Rows written, by table, in the order they were copied. */
  copied: Record<string, number>;
  /** Tables of the source the target does not have; their rows are left behind. */
  skipped: string[];
}

/** Not copied: each side keeps its own record of the migrations applied to it. */
export const migrationTable = 'schema_migrations';

const defaultBatchSize = 2_000;

function quote(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The tables of the connection's current schema, with their columns, keys and references. */
export async function describeTables(db: Pick<Queryable, 'query'>): Promise<Map<string, Table>> {
  const columns = await db.query<{
    table_name: string;
    column_name: string;
    type: string;
    identity: string;
    generated: string;
    key_position: number | null;
  }>(
    `SELECT c.relname AS table_name, a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS type,
            a.attidentity::text AS identity, a.attgenerated::text AS generated,
            array_position(pk.conkey, a.attnum) AS key_position
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       LEFT JOIN pg_constraint pk ON pk.conrelid = c.oid AND pk.contype = 'p'
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
      ORDER BY c.relname, a.attnum`,
  );
  const references = await db.query<{ table_name: string; referenced: string }>(
    `SELECT DISTINCT c.relname AS table_name, r.relname AS referenced
       FROM pg_constraint f
       JOIN pg_class c ON c.oid = f.conrelid
       JOIN pg_class r ON r.oid = f.confrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE f.contype = 'f' AND n.nspname = current_schema()`,
  );
  const tables = new Map<string, Table>();
  const keyPositions = new Map<string, Map<string, number>>();
  for (const row of columns) {
    let table = tables.get(row.table_name);
    if (table === undefined) {
      table = { name: row.table_name, columns: [], key: [], references: [] };
      tables.set(row.table_name, table);
      keyPositions.set(row.table_name, new Map());
    }
    table.columns.push({
      name: row.column_name,
      type: row.type,
      identity: row.identity !== '',
      generated: row.generated !== '',
    });
    if (row.key_position !== null) keyPositions.get(row.table_name)!.set(row.column_name, Number(row.key_position));
  }
  for (const [name, positions] of keyPositions) {
    tables.get(name)!.key = [...positions].sort((a, b) => a[1] - b[1]).map(([column]) => column);
  }
  for (const { table_name, referenced } of references) {
    if (table_name !== referenced) tables.get(table_name)?.references.push(referenced);
  }
  return tables;
}

/** `names` with every table after the tables it references (among `names`). */
export function parentsFirst(tables: Map<string, Table>, names: readonly string[]): string[] {
  const wanted = new Set(names);
  const ordered: string[] = [];
  const visiting = new Set<string>();
  const visit = (name: string) => {
    if (ordered.includes(name)) return;
    if (visiting.has(name)) throw new Error(`the foreign keys of ${name} form a cycle`);
    visiting.add(name);
    for (const parent of tables.get(name)?.references ?? []) if (wanted.has(parent)) visit(parent);
    visiting.delete(name);
    ordered.push(name);
  };
  for (const name of [...names].sort()) visit(name);
  return ordered;
}

interface TablePlan {
  name: string;
  /** Written columns with the target's types. */
  columns: Column[];
  /** Columns written with one value each (CopyOptions.fill). */
  filled: Array<{ column: Column; value: string }>;
  /** The target's key, for replacing a row it already holds. */
  targetKey: string[];
}

/** One row's values as text (null for NULL), in the order of the columns they belong to. */
export type TextRow = Array<string | null>;

/**
 * The statement that writes one batch: each column arrives as a text array and is cast to its
 * type. A row whose key the target already holds (the one store row) is replaced by the source's.
 */
function insertStatement(plan: TablePlan): string {
  const written = [...plan.columns, ...plan.filled.map((fill) => fill.column)];
  const names = written.map((column) => quote(column.name)).join(', ');
  const arrays = written.map((_, index) => `$${index + 1}::text[]`).join(', ');
  const aliases = written.map((_, index) => `c${index}`).join(', ');
  const casts = written.map((column, index) => `u.c${index}::${column.type}`).join(', ');
  const overriding = written.some((column) => column.identity) ? ' OVERRIDING SYSTEM VALUE' : '';
  const keyWritten = plan.targetKey.length > 0 && plan.targetKey.every((key) => written.some((c) => c.name === key));
  const others = written.filter((column) => !plan.targetKey.includes(column.name));
  const conflict = !keyWritten
    ? ''
    : others.length === 0
      ? ` ON CONFLICT (${plan.targetKey.map(quote).join(', ')}) DO NOTHING`
      : ` ON CONFLICT (${plan.targetKey.map(quote).join(', ')}) DO UPDATE SET ${others
          .map((column) => `${quote(column.name)} = EXCLUDED.${quote(column.name)}`)
          .join(', ')}`;
  return `INSERT INTO ${quote(plan.name)} (${names})${overriding}
          SELECT ${casts} FROM unnest(${arrays}) AS u(${aliases})${conflict}`;
}

/**
 * The rows of `table`, `columns` of each as text, read in the order of `key` a page at a time: each
 * page starts after the last key of the one before (never OFFSET), so a read stays one index range.
 */
export async function* readTable(
  source: Pick<Queryable, 'query'>,
  table: string,
  columns: readonly string[],
  key: readonly Column[],
  batchSize = defaultBatchSize,
): AsyncGenerator<TextRow[]> {
  const read = [...columns, ...key.map((column) => column.name)];
  const selected = read.map((name, index) => `${quote(name)}::text AS r${index}`).join(', ');
  const keyList = key.map((column) => quote(column.name)).join(', ');
  const after = key.map((column, index) => `$${index + 1}::${column.type}`).join(', ');
  let last: TextRow | undefined;
  for (;;) {
    const page = await source.query<Record<string, string | null>>(
      `SELECT ${selected} FROM ${quote(table)}
        ${last === undefined ? '' : `WHERE (${keyList}) > (${after})`}
        ORDER BY ${keyList} LIMIT ${batchSize}`,
      last ?? [],
    );
    if (page.length === 0) return;
    yield page.map((row) => columns.map((_, index) => row[`r${index}`] ?? null));
    const end = page.at(-1)!;
    last = key.map((_, index) => end[`r${columns.length + index}`] ?? null);
    if (page.length < batchSize) return;
  }
}

/** Moves the sequences behind the copied columns past the largest value now in them. */
async function advanceSequences(target: Queryable, plan: TablePlan): Promise<void> {
  const sequences = await target.query<{ column_name: string; sequence: string | null }>(
    'SELECT c AS column_name, pg_get_serial_sequence($1, c) AS sequence FROM unnest($2::text[]) AS c',
    [quote(plan.name), plan.columns.map((column) => column.name)],
  );
  for (const { column_name, sequence } of sequences) {
    if (sequence === null) continue;
    await target.query(
      `SELECT setval($1::regclass, m) FROM (SELECT max(${quote(column_name)}) AS m FROM ${quote(plan.name)}) t
        WHERE m IS NOT NULL`,
      [sequence],
    );
  }
}

/** Writes rows into one table, a batch per statement. */
export interface TableWriter {
  /** The columns whose values `write` takes, in this order. */
  readonly columns: readonly Column[];
  write(rows: readonly TextRow[]): Promise<void>;
  /** Moves the sequences behind the written columns past the largest value now in them. */
  finish(): Promise<void>;
}

/**
 * A writer into `table` of `target` for rows that have `sourceColumns`: it writes the columns both
 * have (never a generated one), and `fill`'s constants into columns the source lacks. Where the
 * target already holds rows of a table whose key an identity sequence makes, the key is left to
 * the sequence rather than clash with those rows.
 */
export async function tableWriter(
  target: Queryable,
  table: Table,
  sourceColumns: readonly string[],
  fill: Record<string, string> = {},
): Promise<TableWriter> {
  const [{ filled } = { filled: false }] = await target.query<{ filled: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${quote(table.name)}) AS filled`,
  );
  const sourceNames = new Set(sourceColumns);
  const plan: TablePlan = {
    name: table.name,
    columns: table.columns.filter(
      (column) =>
        sourceNames.has(column.name) &&
        !column.generated &&
        !(filled && column.identity && table.key.includes(column.name)),
    ),
    filled: table.columns
      .filter((column) => !sourceNames.has(column.name) && fill[column.name] !== undefined)
      .map((column) => ({ column, value: fill[column.name]! })),
    targetKey: table.key,
  };
  const insert = insertStatement(plan);
  return {
    columns: plan.columns,
    async write(rows) {
      if (rows.length === 0) return;
      await target.query(insert, [
        ...plan.columns.map((_, index) => rows.map((row) => row[index] ?? null)),
        ...plan.filled.map(({ value }) => rows.map(() => value)),
      ]);
    },
    finish: () => advanceSequences(target, plan),
  };
}

/**
 * Copies every table of `source` that `target` also has, in the caller's transaction on `target`.
 * Where the target already holds rows of a table whose key an identity sequence makes, the copied
 * rows get new keys from it rather than clash with those rows.
 */
export async function copyTables(
  source: Pick<Queryable, 'query'>,
  target: Queryable,
  options: CopyOptions = {},
): Promise<CopyReport> {
  const [from, to] = [await describeTables(source), await describeTables(target)];
  const targetName = (name: string) => options.renamed?.[name] ?? name;
  const sourceNameOf = new Map([...from.keys()].map((name) => [targetName(name), name]));
  const shared = [...from.keys()].filter((name) => name !== migrationTable && to.has(targetName(name)));
  const skipped = [...from.keys()].filter((name) => name !== migrationTable && !to.has(targetName(name))).sort();
  const copied: Record<string, number> = {};
  for (const name of parentsFirst(to, shared.map(targetName))) {
    const sourceName = sourceNameOf.get(name)!;
    const sourceTable = from.get(sourceName)!;
    const targetTable = to.get(name)!;
    if (sourceTable.key.length === 0)
      throw new Error(`the table ${name} of the source has no primary key to read it by`);
    const writer = await tableWriter(
      target,
      targetTable,
      sourceTable.columns.map((column) => column.name),
      options.fill,
    );
    const sourceKey = sourceTable.key.map((key) => sourceTable.columns.find((column) => column.name === key)!);
    const written = writer.columns.map((column) => column.name);
    let rows = 0;
    for await (const page of readTable(source, sourceName, written, sourceKey, options.batchSize)) {
      await writer.write(page);
      rows += page.length;
      options.progress?.({ table: sourceName, rows, done: false });
    }
    options.progress?.({ table: sourceName, rows, done: true });
    copied[sourceName] = rows;
    await writer.finish();
  }
  return { copied, skipped };
}
