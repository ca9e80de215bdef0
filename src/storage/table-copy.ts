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
const migrationTable = 'schema_migrations';

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
  /** The source's name of the table. */
  sourceName: string;
  /** Columns written with one value each (CopyOptions.fill). */
  filled: Array<{ column: Column; value: string }>;
  /** The source's key, read to page through it. */
  sourceKey: Column[];
  /** The target's key, for replacing a row it already holds. */
  targetKey: string[];
}

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

async function copyTable(
  source: Pick<Queryable, 'query'>,
  target: Queryable,
  plan: TablePlan,
  { batchSize = defaultBatchSize, progress }: CopyOptions,
): Promise<number> {
  const read = [...plan.columns.map((column) => column.name), ...plan.sourceKey.map((column) => column.name)];
  const selected = read.map((name, index) => `${quote(name)}::text AS r${index}`).join(', ');
  const keyList = plan.sourceKey.map((column) => quote(column.name)).join(', ');
  const after = plan.sourceKey.map((column, index) => `$${index + 1}::${column.type}`).join(', ');
  const insert = insertStatement(plan);
  let last: (string | null)[] | undefined;
  let rows = 0;
  for (;;) {
    const page = await source.query<Record<string, string | null>>(
      `SELECT ${selected} FROM ${quote(plan.sourceName)}
        ${last === undefined ? '' : `WHERE (${keyList}) > (${after})`}
        ORDER BY ${keyList} LIMIT ${batchSize}`,
      last ?? [],
    );
    if (page.length === 0) break;
    await target.query(insert, [
      ...plan.columns.map((_, index) => page.map((row) => row[`r${index}`] ?? null)),
      ...plan.filled.map(({ value }) => page.map(() => value)),
    ]);
    rows += page.length;
    const end = page.at(-1)!;
    last = plan.sourceKey.map((_, index) => end[`r${plan.columns.length + index}`] ?? null);
    progress?.({ table: plan.sourceName, rows, done: false });
    if (page.length < batchSize) break;
  }
  progress?.({ table: plan.sourceName, rows, done: true });
  return rows;
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
    const [{ filled } = { filled: false }] = await target.query<{ filled: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${quote(name)}) AS filled`,
    );
    const sourceNames = new Set(sourceTable.columns.map((column) => column.name));
    const columns = targetTable.columns.filter(
      (column) =>
        sourceNames.has(column.name) &&
        !column.generated &&
        !(filled && column.identity && targetTable.key.includes(column.name)),
    );
    const constants = targetTable.columns
      .filter((column) => !sourceNames.has(column.name) && options.fill?.[column.name] !== undefined)
      .map((column) => ({ column, value: options.fill![column.name]! }));
    const plan: TablePlan = {
      name,
      sourceName,
      filled: constants,
      columns,
      sourceKey: sourceTable.key.map((key) => sourceTable.columns.find((column) => column.name === key)!),
      targetKey: targetTable.key,
    };
    copied[sourceName] = await copyTable(source, target, plan, options);
    await advanceSequences(target, plan);
  }
  return { copied, skipped };
}
