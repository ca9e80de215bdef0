import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { lockCustomersByIdentity, pageOfCustomers } from '../../src/auth/tables/imported-customers.js';
import { linksOfCustomers } from '../../src/auth/tables/provider-links.js';
import { forStore } from '../../src/storage/database.js';
import { createHarness } from '../helpers/harness.js';
import { testBackends } from '../helpers/database.js';
import { recording, type Recorded } from '../helpers/recording-db.js';

/**
 * An import's batch finds the customers it names, and an export's page their provider links, by
 * one index lookup each, also in a table that grew since the planner last looked at it: an import
 * adds a million rows in minutes, before autovacuum analyzes them. Planned from such statistics,
 * `identity_value = ANY($3)` read every customer of the store for each batch of 500, and an import
 * slowed as it went (from 9,000 lines a second to under 2,000 at a million).
 */

const seeded = 20_000;

interface PlanNode {
  'Node Type': string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Rows the plan's scans read: what they returned, and what they read to throw away. */
function rowsRead(node: PlanNode): number {
  const scan =
    /Scan$/.test(node['Node Type']) && node['Node Type'] !== 'Function Scan' && node['Node Type'] !== 'Subquery Scan';
  const own = scan
    ? (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) +
      (node['Rows Removed by Filter'] ?? 0) +
      (node['Rows Removed by Index Recheck'] ?? 0)
    : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child), 0);
}

describe(`an import's lookups in a table the planner has not seen grow (${testBackends.database})`, () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  const log: Recorded[] = [];
  let db: ReturnType<typeof recording>;

  before(async () => {
    harness = await createHarness();
    await harness.start();
    db = recording(harness.db, log);
    // Planned once while nearly empty, then grown without an ANALYZE: as a fresh import leaves it.
    await harness.db.exec(`ANALYZE customers; ANALYZE provider_links;`);
    await harness.db.exec(`
      INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, created_at, updated_at)
        SELECT 'default', gen_random_uuid(), '', 'email', 'grown-' || n || '@example.com', NULL, now(), now()
          FROM generate_series(1, ${seeded}) AS n;
      INSERT INTO provider_links (store_id, issuer, subject, customer_id, provider_id, email, linked_at)
        SELECT store_id, 'https://id.example', id::text, id, 'example', NULL, now() FROM customers;
    `);
  });
  after(async () => harness.close());

  async function readByLastStatement(run: () => Promise<unknown>): Promise<number> {
    log.length = 0;
    await run();
    const statement = log.find((entry) => /^\s*SELECT/i.test(entry.sql))!;
    const [row] = await harness.db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`,
      statement.params,
    );
    return rowsRead(row!['QUERY PLAN'][0]!.Plan);
  }

  test("a batch's 500 identities are 500 lookups, not a read of the store's customers", async () => {
    const values = Array.from({ length: 500 }, (_, i) => `grown-${i * 37 + 1}@example.com`);
    let found = 0;
    const read = await readByLastStatement(() =>
      forStore(db, 'default').transaction(async (tx) => {
        found = (await lockCustomersByIdentity(tx, 'email', values)).length;
      }),
    );
    assert.equal(found, 500);
    assert.ok(read <= 2 * values.length, `${read} rows read for ${values.length} identities`);
  });

  test("an export page's provider links are read by customer, not by store", async () => {
    const page = await pageOfCustomers(forStore(harness.db, 'default'), null, 1_000);
    let links = 0;
    const read = await readByLastStatement(async () => {
      links = (
        await linksOfCustomers(
          forStore(db, 'default'),
          page.map((customer) => customer.id),
        )
      ).length;
    });
    assert.equal(links, 1_000);
    assert.ok(read <= 2 * page.length, `${read} rows read for ${page.length} customers`);
  });
});
