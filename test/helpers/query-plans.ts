import type { Queryable } from '../../src/storage/database.js';

/**
 * Leaves the planner nothing but a nested loop that scans a `WHERE … IN (SELECT … LIMIT n FOR
 * UPDATE)` subquery again for every outer row: the plan it may pick on its own for small or
 * unanalysed tables. For this transaction only.
 */
export async function forceNestedLoopRescans(tx: Queryable): Promise<void> {
  for (const setting of ['hashjoin', 'mergejoin', 'hashagg', 'sort', 'material', 'seqscan']) {
    await tx.query(`SET LOCAL enable_${setting} = off`);
  }
}

/** A node of a plan as `EXPLAIN (FORMAT JSON)` writes it, with the fields the plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Scan Direction'?: string;
  Plans?: PlanNode[];
}

/** Every node of the statement's plan, the top one first. */
export async function planNodes(db: Queryable, sql: string, params: readonly unknown[]): Promise<PlanNode[]> {
  const [row] = await db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)];
  return flatten(row!['QUERY PLAN'][0]!.Plan);
}
