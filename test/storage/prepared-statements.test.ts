import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { prepared } from '../../src/storage/database.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/database.js';
import { startPgBouncer } from '../helpers/pgbouncer.js';

// A statement of this file's own: the names are handed out in the order statements are marked.
const doubled = prepared('SELECT $1::int * 2 AS n');

/** Every pass: a scratch database on the test server, reached directly or through a PgBouncer of the test's own. */
describe('named statements for the hot path', () => {
  let scratch: ScratchDatabase;
  before(async () => {
    scratch = await createScratchDatabase('sfa_test_prepared');
  });
  after(async () => {
    await scratch?.drop();
  });

  test('a statement marked prepared runs under its name on the connection; any other runs unnamed', async () => {
    const db = openPostgres(scratch.directUrl, { max: 1 });
    try {
      assert.deepEqual(await db.query(doubled, [21]), [{ n: 42 }]);
      assert.deepEqual(await db.query('SELECT $1::int + 1 AS n', [1]), [{ n: 2 }]);
      // One connection: this reads the session that ran both statements.
      const named = await db.query<{ statement: string }>(
        'SELECT statement FROM pg_prepared_statements WHERE NOT from_sql ORDER BY prepare_time',
      );
      assert.deepEqual(
        named.map((row) => row.statement),
        [doubled],
      );
    } finally {
      await db.close();
    }
  });

  test('behind a PgBouncer that lets statement_timeout through unnoticed, the first named statement it refuses turns naming off, and that statement runs unnamed', async () => {
    // One server connection for two client connections: the second's Parse finds the name taken.
    const bouncer = await startPgBouncer({
      upstream: scratch.directUrl,
      poolSize: 1,
      settings: { ignore_startup_parameters: 'statement_timeout' },
    });
    const notices: string[] = [];
    const db = openPostgres(bouncer.url(scratch.name), { max: 2, notice: (message) => notices.push(message) });
    try {
      const answers = await Promise.all([db.query(doubled, [1]), db.query(doubled, [2])]);
      assert.deepEqual(answers, [[{ n: 2 }], [{ n: 4 }]]);
      for (let i = 0; i < 10; i += 1) assert.deepEqual(await db.query(doubled, [i]), [{ n: 2 * i }]);
      assert.equal(notices.length, 1, notices.join('\n'));
      assert.match(notices[0]!, /named statement/);
    } finally {
      await db.close();
      await bouncer.stop();
    }
  });
});
