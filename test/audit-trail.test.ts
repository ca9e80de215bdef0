import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../src/services.js';
import { AuditTrail, listAudit } from '../src/audit.js';
import { BackgroundWork } from '../src/background.js';
import { FakeClock } from './helpers/clock.js';
import { seedFirstStore, truncateAll, useMigratedDatabase } from './helpers/database.js';
import { firstStoreId } from '../src/store/store.js';

const silent = createLogger({ level: 'silent' });

/** A background queue with room for one task, held busy until `release` is called. */
function blockedBackground() {
  const background = new BackgroundWork(silent, { concurrency: 1, maxPending: 1 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  background.run('blocker', () => held);
  return { background, release };
}

describe('the audit trail under pressure', () => {
  const database = useMigratedDatabase();

  const entry = (requestId: string) => ({
    storeId: firstStoreId,
    event: 'login.failed' as const,
    clientAddress: '127.0.0.1',
    requestId,
  });

  test('a flush dropped by a full background queue does not stop later entries from being written', async () => {
    await truncateAll(database.db);
    const store = await seedFirstStore(database.db);
    const { background, release } = blockedBackground();
    const trail = new AuditTrail(database.db, new FakeClock(), (write) => background.run('audit', write));
    trail.record(entry('while-full'));
    release();
    await background.drain();
    trail.record(entry('after-full'));
    await background.drain();
    const written = (await listAudit(store, {})).map((row) => row.request_id).reverse();
    assert.deepEqual(written, ['while-full', 'after-full']);
    assert.equal(trail.queued, 0);
  });

  test('a failed flush does not stop later ones', async () => {
    await truncateAll(database.db);
    const store = await seedFirstStore(database.db);
    const background = new BackgroundWork(silent);
    let failNext = true;
    const flaky = {
      query: async <Row>(sql: string, params?: readonly unknown[]) => {
        if (failNext) {
          failNext = false;
          throw new Error('write refused');
        }
        return database.db.query<Row>(sql, params);
      },
      exec: (sql: string) => database.db.exec(sql),
    };
    const dropped: Array<[number, string]> = [];
    const trail = new AuditTrail(flaky, new FakeClock(), (write) => background.run('audit', write), {
      dropped: (count, reason) => dropped.push([count, reason]),
    });
    trail.record(entry('lost'));
    await background.drain();
    trail.record(entry('kept'));
    await background.drain();
    const written = (await listAudit(store, {})).map((row) => row.request_id);
    assert.deepEqual(written, ['kept']);
    assert.deepEqual(dropped, [[1, 'write_failed']]);
  });

  test('keeps at most `maxQueued` entries while it cannot write, and reports how many it dropped', async () => {
    await truncateAll(database.db);
    const store = await seedFirstStore(database.db);
    const { background, release } = blockedBackground();
    const dropped: Array<[number, string]> = [];
    const trail = new AuditTrail(database.db, new FakeClock(), (write) => background.run('audit', write), {
      maxQueued: 5,
      dropped: (count, reason) => dropped.push([count, reason]),
    });
    for (let i = 0; i < 12; i += 1) trail.record(entry(`entry-${String(i).padStart(2, '0')}`));
    assert.equal(trail.queued, 5);
    assert.equal(
      dropped.reduce((sum, [count]) => sum + count, 0),
      7,
    );
    assert.ok(dropped.every(([, reason]) => reason === 'queue_full'));
    release();
    await background.drain();
    await trail.flush();
    const written = (await listAudit(store, {})).map((row) => row.request_id).reverse();
    assert.deepEqual(written, ['entry-00', 'entry-01', 'entry-02', 'entry-03', 'entry-04']);
  });
});
