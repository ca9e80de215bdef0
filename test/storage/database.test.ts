import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { DatabaseUnavailableError, deleteInBatch, type Database } from '../../src/storage/database.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { openTestDatabase, testBackends, testDirectUrlVariable, type TestDatabase } from '../helpers/database.js';
import { forceNestedLoopRescans } from '../helpers/query-plans.js';
import { until, waitingOnLocks } from '../helpers/races.js';

/** What the domain relies on from any Database: run on the embedded server, and on PostgreSQL with DATABASE_URL. */
describe(`the database layer (${testBackends.database})`, () => {
  let test_db: TestDatabase;
  let db: Database;
  before(async () => {
    test_db = await openTestDatabase();
    db = test_db.db;
    await db.exec(`
      CREATE TABLE things (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text UNIQUE, data jsonb, at timestamptz);
      CREATE TABLE counters (name text PRIMARY KEY, n integer NOT NULL);
    `);
  });
  after(async () => test_db.drop());

  test('query returns plain arrays of plain rows, with parameters bound by position', async () => {
    const rows = await db.query<{ one: number; text: string }>('SELECT 1::int AS one, $1::text AS text', ['hello']);
    assert.ok(Array.isArray(rows) && Object.getPrototypeOf(rows) === Array.prototype);
    assert.deepEqual(rows, [{ one: 1, text: 'hello' }]);
    assert.deepEqual(await db.query('SELECT 1 WHERE false'), []);
  });

  test('JSON bound as text and cast to jsonb comes back as an object, and timestamps as Dates', async () => {
    const at = new Date('2026-03-04T05:06:07.089Z');
    const [row] = await db.query<{ id: string; data: unknown; at: Date }>(
      'INSERT INTO things (name, data, at) VALUES ($1, $2::text::jsonb, $3) RETURNING id::text AS id, data, at',
      ['json', JSON.stringify({ a: 1, b: ['x'] }), at],
    );
    assert.deepEqual(row!.data, { a: 1, b: ['x'] });
    assert.ok(row!.at instanceof Date);
    assert.equal(row!.at.toISOString(), at.toISOString());
    const [merged] = await db.query<{ data: unknown }>(
      `UPDATE things SET data = data || $2::text::jsonb WHERE name = $1 RETURNING data`,
      ['json', JSON.stringify({ c: true })],
    );
    assert.deepEqual(merged!.data, { a: 1, b: ['x'], c: true });
  });

  test('a transaction commits what it did when it resolves and nothing when it throws', async () => {
    await db.transaction(async (tx) => {
      await tx.query("INSERT INTO things (name) VALUES ('committed')");
    });
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO things (name) VALUES ('rolled back')");
        throw new Error('stop');
      }),
      /stop/,
    );
    const names = (
      await db.query<{ name: string }>("SELECT name FROM things WHERE name IN ('committed', 'rolled back')")
    ).map((r) => r.name);
    assert.deepEqual(names, ['committed']);
  });

  test('a unique violation inside a transaction rejects and leaves no partial work', async () => {
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO things (name) VALUES ('partial')");
        await tx.query("INSERT INTO things (name) VALUES ('committed')");
      }),
    );
    assert.equal((await db.query("SELECT 1 FROM things WHERE name = 'partial'")).length, 0);
  });

  test('concurrent conditional increments inside transactions lose no update', async () => {
    await db.query("INSERT INTO counters (name, n) VALUES ('c', 0)");
    await Promise.all(
      Array.from({ length: 40 }, () =>
        db.transaction(async (tx) => {
          await tx.query("UPDATE counters SET n = n + 1 WHERE name = 'c'");
        }),
      ),
    );
    const [row] = await db.query<{ n: number }>("SELECT n FROM counters WHERE name = 'c'");
    assert.equal(row!.n, 40);
  });

  test('ON CONFLICT DO NOTHING lets exactly one of many concurrent inserts win', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        db.query("INSERT INTO things (name) VALUES ('only-one') ON CONFLICT (name) DO NOTHING RETURNING id"),
      ),
    );
    assert.equal(results.filter((rows) => rows.length === 1).length, 1);
  });

  test('a transaction the server undoes to break a deadlock runs again and commits', async () => {
    await db.query("INSERT INTO counters (name, n) VALUES ('deadlock-a', 0), ('deadlock-b', 0)");
    // The other side waits long before looking for a deadlock, so the server undoes ours.
    const other = new pg.Client({ connectionString: test_db.url });
    await other.connect();
    const watcher = new pg.Client({ connectionString: test_db.url });
    await watcher.connect();
    try {
      await other.query('BEGIN');
      await other.query("SET LOCAL deadlock_timeout = '60s'");
      await other.query("UPDATE counters SET n = n + 1 WHERE name = 'deadlock-b'");
      let attempts = 0;
      const ours = db.transaction(async (tx) => {
        attempts += 1;
        await tx.query("UPDATE counters SET n = n + 1 WHERE name = 'deadlock-a'");
        await tx.query("UPDATE counters SET n = n + 1 WHERE name = 'deadlock-b'");
      });
      await until(async () => (await waitingOnLocks(watcher)) === 1, 'our transaction waits on the other');
      // Each now waits on the other; ours is undone, the other takes its row and commits.
      await other.query("UPDATE counters SET n = n + 1 WHERE name = 'deadlock-a'");
      await other.query('COMMIT');
      await ours;
      assert.equal(attempts, 2);
      const rows = await db.query<{ name: string; n: number }>(
        "SELECT name, n FROM counters WHERE name LIKE 'deadlock-%' ORDER BY name",
      );
      assert.deepEqual(
        rows.map((row) => [row.name, row.n]),
        [
          ['deadlock-a', 2],
          ['deadlock-b', 2],
        ],
      );
    } finally {
      await other.end();
      await watcher.end();
    }
  });

  test('deleteInBatch deletes at most its limit of matching rows, by a composite key too, and counts them', async () => {
    await db.exec(`
      CREATE TABLE pairs (a integer, b integer, at integer NOT NULL, PRIMARY KEY (a, b));
      INSERT INTO pairs SELECT 1, n, n FROM generate_series(1, 5) AS n;
      INSERT INTO pairs SELECT 2, n, n FROM generate_series(1, 5) AS n;
    `);
    const old = { table: 'pairs', key: ['a', 'b'], where: 'at <= $1 AND a = $2' } as const;
    assert.equal(await deleteInBatch(db, old, [3, 1], 2), 2);
    assert.equal(await deleteInBatch(db, old, [3, 1], 2), 1);
    assert.equal(await deleteInBatch(db, old, [3, 1], 2), 0);
    const left = await db.query<{ a: number; b: number }>('SELECT a, b FROM pairs ORDER BY a, b');
    assert.deepEqual(
      left.map(({ a, b }) => `${a}.${b}`),
      ['1.4', '1.5', '2.1', '2.2', '2.3', '2.4', '2.5'],
    );
  });

  test('deleteInBatch keeps to its limit when the plan scans the batch again for every row', async () => {
    await db.exec(`
      CREATE TABLE queue (id integer PRIMARY KEY, done boolean NOT NULL);
      INSERT INTO queue SELECT n, true FROM generate_series(1, 5) AS n;
    `);
    const done = { table: 'queue', key: ['id'], where: 'done' } as const;
    // A rescanned LIMIT … FOR UPDATE skips the rows the statement itself just deleted and hands
    // over the next ones: without a batch picked once, this deleted all five.
    const removed = await db.transaction(async (tx) => {
      await forceNestedLoopRescans(tx);
      return deleteInBatch(tx, done, [], 1);
    });
    assert.equal(removed, 1);
    assert.equal((await db.query('SELECT id FROM queue')).length, 4);
  });

  test(
    'deleteInBatch skips rows another transaction holds instead of waiting for them',
    { timeout: 10_000 },
    async () => {
      const named = (names: string[]) => db.query(`INSERT INTO things (name) SELECT unnest($1::text[])`, [names]);
      await named(['held', 'free-1', 'free-2']);
      const gone = { table: 'things', key: ['id'], where: "name IN ('held', 'free-1', 'free-2')" };
      const removed = await db.transaction(async (tx) => {
        await tx.query("SELECT 1 FROM things WHERE name = 'held' FOR UPDATE");
        return deleteInBatch(db, gone, [], 10);
      });
      assert.equal(removed, 2);
      assert.deepEqual(await db.query("SELECT name FROM things WHERE name IN ('held', 'free-1', 'free-2')"), [
        { name: 'held' },
      ]);
    },
  );

  test('deleteInBatch refuses a table or key that is not a plain SQL name', async () => {
    for (const target of [
      { table: 'things; DROP TABLE things', key: ['id'] },
      { table: 'things', key: ['id) OR (1=1'] },
      { table: 'things', key: [] },
    ]) {
      await assert.rejects(deleteInBatch(db, { ...target, where: 'true' }, [], 1), /SQL name|no key/);
    }
    assert.ok((await db.query('SELECT 1 FROM things')).length > 0);
  });
});

describe(`the PostgreSQL pool's idle connections (${testBackends.database})`, () => {
  let test_db: TestDatabase;
  before(async () => {
    test_db = await openTestDatabase();
  });
  after(async () => test_db.drop());

  // Behind PgBouncer a client connection is served by whichever server process is free, so the
  // server's process id says nothing about the pool's own connection.
  test(
    'outlast a lull of four minutes, so a burst after it opens none, and close after five',
    { skip: process.env[testDirectUrlVariable] !== undefined && 'behind a pooler' },
    async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const db = openPostgres(test_db.url, { max: 1 });
      const serverProcess = async () => (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
      try {
        const first = await serverProcess();
        t.mock.timers.tick(4 * 60_000);
        assert.equal(await serverProcess(), first, 'the connection of four minutes ago answered');
        t.mock.timers.tick(5 * 60_000);
        assert.notEqual(await serverProcess(), first, 'after five quiet minutes a new connection answered');
      } finally {
        await db.close();
      }
    },
  );
});

describe('the PostgreSQL driver when the server is not there', () => {
  test('turns a refused connection into DatabaseUnavailableError within two seconds', async () => {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    const db = openPostgres('postgres://postgres@127.0.0.1:1/none');
    const started = performance.now();
    try {
      await assert.rejects(db.query('SELECT 1'), DatabaseUnavailableError);
      assert.ok(performance.now() - started < 2_000);
    } finally {
      await db.close();
    }
  });
});
