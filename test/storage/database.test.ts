import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DatabaseUnavailableError, type Database } from '../../src/storage/database.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { openTestDatabase, testBackends, type TestDatabase } from '../helpers/database.js';

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
