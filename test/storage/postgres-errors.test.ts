import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import pg from 'pg';
import { DatabaseUnavailableError } from '../../src/storage/database.js';
import { isDatabaseUnavailable, translateDriverError } from '../../src/storage/postgres-errors.js';
import { openTestDatabase } from '../helpers/database.js';

/** An error as node-postgres reports one the server sent (it carries `severity` and `code`). */
function serverError(code: string, message: string): Error {
  return Object.assign(new Error(message), { severity: 'ERROR', code });
}

function socketError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, errno: -1, syscall: 'connect' });
}

describe('classifying database driver errors', () => {
  const unavailable: Array<[string, Error]> = [
    ['the query read timeout (a server that stopped answering)', new Error('Query read timeout')],
    ['the pool timing out while waiting for a client', new Error('timeout exceeded when trying to connect')],
    [
      'a new connection timing out',
      new Error('Connection terminated due to connection timeout', { cause: new Error('timeout expired') }),
    ],
    ['the client connect timeout itself', new Error('timeout expired')],
    ['a connection lost mid-query', new Error('Connection terminated unexpectedly')],
    ['a connection ended', new Error('Connection terminated')],
    [
      'a client broken by an earlier error',
      new Error('Client has encountered a connection error and is not queryable'),
    ],
    ['a closed client', new Error('Client was closed and is not queryable')],
    ['a pool already ended (shutdown)', new Error('Cannot use a pool after calling end on the pool')],
    ['connection refused', socketError('ECONNREFUSED')],
    ['connection reset', socketError('ECONNRESET')],
    ['a socket timeout', socketError('ETIMEDOUT')],
    ['a broken pipe', socketError('EPIPE')],
    ['an unreachable network', socketError('ENETUNREACH')],
    ['an unreachable host', socketError('EHOSTUNREACH')],
    ['a name that does not resolve (yet)', socketError('EAI_AGAIN')],
    ['statement_timeout (a locked table)', serverError('57014', 'canceling statement due to statement timeout')],
    ['lock_timeout', serverError('55P03', 'canceling statement due to lock timeout')],
    ['the server shutting down', serverError('57P01', 'terminating connection due to administrator command')],
    ['the server starting up', serverError('57P03', 'the database system is starting up')],
    ['too many connections', serverError('53300', 'sorry, too many clients already')],
    ['a connection exception', serverError('08006', 'connection failure')],
  ];
  for (const [what, error] of unavailable) {
    test(`${what} means the database is unavailable (503)`, () => {
      assert.equal(isDatabaseUnavailable(error), true);
      const translated = translateDriverError(error);
      assert.ok(translated instanceof DatabaseUnavailableError);
      assert.equal((translated as DatabaseUnavailableError).cause, error);
    });
  }

  const real: Array<[string, Error]> = [
    ['a syntax error', serverError('42601', 'syntax error at or near "SELEC"')],
    ['a unique violation', serverError('23505', 'duplicate key value violates unique constraint')],
    ['a missing table', serverError('42P01', 'relation "nope" does not exist')],
    ['a bug in our code', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a server error whose text mentions a timeout', serverError('P0001', 'Query read timeout')],
  ];
  for (const [what, error] of real) {
    test(`${what} stays a real error (500)`, () => {
      assert.equal(isDatabaseUnavailable(error), false);
      assert.equal(translateDriverError(error), error);
    });
  }

  test('what node-postgres really throws for a refused port and a silent server is classified as unavailable', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await new pg.Client({ host: '127.0.0.1', port: closedPort }).connect().catch((error) => error);
    assert.equal(isDatabaseUnavailable(refused), true, String(refused));

    // Accepts and never answers: the pool gives up waiting for a client.
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const pool = new pg.Pool({
      host: '127.0.0.1',
      port: (silent.address() as net.AddressInfo).port,
      connectionTimeoutMillis: 200,
    });
    const timedOut = await pool.query('SELECT 1').catch((error) => error);
    assert.equal(isDatabaseUnavailable(timedOut), true, String(timedOut));
    await pool.end();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
});

describe('a real SQL error from a PostgreSQL server', () => {
  test('stays a real error (500), in a query and in a transaction', async () => {
    const { db, drop } = await openTestDatabase();
    try {
      const direct = await db.query('SELEC 1').catch((error: unknown) => error);
      assert.ok(direct instanceof Error && !(direct instanceof DatabaseUnavailableError), String(direct));
      assert.equal((direct as { code?: string }).code, '42601');
      const inTransaction = await db
        .transaction((tx) => tx.query('SELECT * FROM no_such_table'))
        .catch((error: unknown) => error);
      assert.ok(inTransaction instanceof Error && !(inTransaction instanceof DatabaseUnavailableError));
      assert.deepEqual(await db.query('SELECT 1 AS ok'), [{ ok: 1 }], 'the connection was rolled back and reused');
    } finally {
      await drop();
    }
  });
});
