import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type OpenedDatabase } from '../../src/services.js';
import { DatabaseUnavailableError } from '../../src/storage/database.js';
import { maintenanceDeadline, requestDeadline } from '../../src/storage/postgres.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/database.js';

/** The statement limit a transaction of `db` runs under, as the server reports it. */
async function statementLimit(db: OpenedDatabase['db']): Promise<string> {
  const [row] = await db.transaction((tx) =>
    tx.query<{ limit: string }>("SELECT current_setting('statement_timeout') AS limit"),
  );
  return row!.limit;
}

/**
 * The database the configuration opens, under its two deadlines: customer calls get one near two
 * seconds, the long work (migrations, the janitor, the command line) keeps the long one, on the same
 * pool. Checked inside transactions, where the limit holds behind PgBouncer too.
 */
describe('the statement deadlines of the configured database', () => {
  let scratch: ScratchDatabase;
  let opened: OpenedDatabase;
  before(async () => {
    scratch = await createScratchDatabase('sfa_test_deadlines');
    opened = await openDatabase(loadConfig({ DATABASE_URL: scratch.url, APP_SECRET: 'd'.repeat(40) }));
  });
  after(async () => {
    await opened?.release();
    await scratch?.drop();
  });

  test('the request path is bounded near two seconds, maintenance work at ten', async () => {
    assert.ok(requestDeadline.statementTimeoutMs < requestDeadline.queryTimeoutMs, 'the server cancels first');
    assert.ok(requestDeadline.queryTimeoutMs <= 2_000);
    assert.ok(maintenanceDeadline.statementTimeoutMs >= 10_000);
    assert.ok(maintenanceDeadline.statementTimeoutMs < maintenanceDeadline.queryTimeoutMs);
    assert.equal(await statementLimit(opened.db), '1500ms');
    assert.equal(await statementLimit(opened.maintenance), '10s');
    // A single maintenance statement (a janitor batch) runs in a transaction of its own for its limit.
    const [single] = await opened.maintenance.query<{ limit: string }>(
      "SELECT current_setting('statement_timeout') AS limit",
    );
    assert.equal(single!.limit, '10s');
  });

  test('a 2.5 s statement is cancelled on the request path and runs to its end as maintenance work', async () => {
    const sleep = (db: OpenedDatabase['db']) => db.transaction((tx) => tx.query('SELECT pg_sleep(2.5)'));
    const started = performance.now();
    const refused = await sleep(opened.db).then(
      () => undefined,
      (error: unknown) => error,
    );
    const refusedAfter = performance.now() - started;
    assert.ok(refused instanceof DatabaseUnavailableError, String(refused));
    assert.equal((refused.cause as { code?: string }).code, '57014', 'cancelled by the server, not timed out');
    assert.ok(refusedAfter < 2_400, `cancelled after ${refusedAfter.toFixed(0)} ms`);
    await sleep(opened.maintenance);
  });
});
