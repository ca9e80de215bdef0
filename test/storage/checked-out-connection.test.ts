import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { DatabaseUnavailableError } from '../../src/storage/database.js';
import { openPostgres, type PostgresDatabase } from '../../src/storage/postgres.js';
import { createScratchDatabase, serverTarget, type ScratchDatabase } from '../helpers/database.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

// pg-pool drops its error listener from a checked-out client: without the pool's own, a connection
// lost between two statements crashed the process.
describe('a pooled connection lost while checked out', () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let db: PostgresDatabase;

  before(async () => {
    scratch = await createScratchDatabase('sfa_test_checked_out');
    proxy = await new TcpProxy(serverTarget(scratch.url)).start();
    // Through the proxy, over TCP even when the server listens on a socket.
    const url = new URL(scratch.url);
    url.searchParams.delete('host');
    url.host = `127.0.0.1:${proxy.port}`;
    // One connection, so the query after the loss shows the pool discarded the dead one.
    db = openPostgres(url.toString(), { max: 1 });
  });

  after(async () => {
    await db?.close();
    await proxy?.close();
    await scratch?.drop();
  });

  test('fails the next statement of its transaction, not the process, and the pool connects anew', async (t) => {
    const uncaught: unknown[] = [];
    let crashed = (_error: unknown) => {};
    const onUncaught = (error: unknown) => {
      uncaught.push(error);
      crashed(error);
    };
    process.on('uncaughtException', onUncaught);
    t.after(() => process.off('uncaughtException', onUncaught));
    // The pool keeps its clients to itself: the checked-out one is whichever ran the transaction's statement.
    const query = t.mock.method(pg.Client.prototype, 'query');

    let lostPid = 0;
    let errorListeners = 0;
    const outcome = await db
      .transaction(async (tx) => {
        const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        lostPid = row!.pid;
        const client = query.mock.calls.at(-1)!.this as pg.Client;
        errorListeners = client.listenerCount('error');
        // The client has seen its connection end once it says 'end' (after 'error'), or the process crashed.
        const lost = new Promise((resolve) => {
          client.once('end', resolve);
          crashed = resolve;
        });
        proxy.set('refuse'); // no statement is running: nothing but the client's listeners hears of it
        await lost;
        await tx.query('SELECT 1');
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );

    assert.deepEqual(uncaught, [], 'no uncaught exception');
    assert.ok(errorListeners > 0, 'the checked-out client had an error listener');
    assert.ok(outcome instanceof DatabaseUnavailableError, String(outcome));
    assert.match(String((outcome.cause as Error).message), /not queryable|Connection terminated/);

    proxy.set('pass');
    const [row] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    assert.notEqual(row!.pid, lostPid, 'the lost connection was discarded, a new one serves');
  });
});
