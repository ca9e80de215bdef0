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
