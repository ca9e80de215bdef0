import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import pg from 'pg';
import type { Database } from '../../src/storage/database.js';
import { migrate } from '../../src/storage/migrations.js';
import { StoreDirectory } from '../../src/store/directory.js';
import {
  addStoreHost,
  createStore,
  ensureStore,
  markStoreDeleted,
  normalizeHost,
  removeStoreHost,
  requestHost,
  updateStore,
} from '../../src/store/store.js';
import { FakeClock } from '../helpers/clock.js';
import { hostChanges } from '../helpers/host-changes.js';
import { openTestDatabase, truncateAll, useMigratedDatabase } from '../helpers/database.js';
import { until, waitingOnLocks } from '../helpers/races.js';

const clock = new FakeClock();
const initial = { name: 'First', identityMode: 'email', verificationRequired: false } as const;

describe('host names as stores are keyed by them', () => {
  test('are lowercased, stripped of a trailing dot and turned to punycode', () => {
    assert.equal(normalizeHost('Shop.Example.'), 'shop.example');
    assert.equal(normalizeHost('bücher.example'), 'xn--bcher-kva.example');
    assert.equal(normalizeHost('xn--bcher-kva.example'), 'xn--bcher-kva.example');
  });

  test('refuse ports, wildcards, addresses, paths and empty labels', () => {
    for (const bad of [
      'shop.example:8080',
      '*.shop.example',
      '192.0.2.1',
      '[::1]',
      'shop/x',
      'a..b',
      '',
      '-a.example',
    ]) {
      assert.equal(normalizeHost(bad), null, bad);
    }
  });

  test('a request host loses its port before it is compared', () => {
    assert.equal(requestHost('A.Shop.Test:3000'), 'a.shop.test');
    assert.equal(requestHost(undefined), null);
    assert.equal(requestHost('[::1]:3000'), null);
  });
});

describe('the store directory', () => {
  const database = useMigratedDatabase();
  let directory: StoreDirectory;

  beforeEach(async () => {
    await truncateAll(database.db);
    await ensureStore(database.db, clock, initial);
    directory = new StoreDirectory(database.db, 3);
    await directory.refresh();
  });

  async function secondStore(slug = 'second', hosts = ['b.shop.test']) {
    const created = await createStore(database.db, clock, { slug, name: slug, identityMode: 'email', hosts });
    assert.ok(created.ok);
    return created.store;
  }

  test('resolves every host to the only store while it has no hosts', async () => {
    assert.equal((await directory.resolve('anything.example'))?.id, 'default');
    assert.equal((await directory.resolve(null))?.id, 'default');
  });

  test('resolves by host once a second store exists, and a host of neither to none', async () => {
    const second = await secondStore();
    await directory.refresh();
    assert.equal((await directory.resolve('b.shop.test'))?.id, second.id);
    assert.equal(await directory.resolve('a.shop.test'), null);
    assert.equal(await directory.resolve(null), null);
  });

  test('sees a change to a cached store after one read of the change feed', async () => {
    const second = await secondStore();
    await directory.refresh();
    assert.equal((await directory.resolve('b.shop.test'))?.status, 'active');
    assert.ok((await updateStore(database.db, clock, { status: 'paused' }, { store: 'second' })).ok);
    assert.equal(
      (await directory.resolve('b.shop.test'))?.status,
      'active',
      'served from the cache until the feed is read',
    );
    assert.equal(await directory.refresh(), 1);
    assert.equal((await directory.resolve('b.shop.test'))?.status, 'paused');
    assert.equal((await directory.byId(second.id))?.status, 'paused');
  });

  test('a host remembered as naming no store names one once it is added', async () => {
    const second = await secondStore();
    await directory.refresh();
    assert.equal(await directory.resolve('c.shop.test'), null);
    assert.ok((await addStoreHost(database.db, clock, second.id, 'c.shop.test', hostChanges)).ok);
    await directory.refresh();
    assert.equal((await directory.resolve('c.shop.test'))?.id, second.id);
  });

  test('a removed host stops resolving, and a deleted store stops resolving at once and frees its hosts', async () => {
    // With a host of its own, the first store stops answering on every host once it is the only one.
    assert.ok((await addStoreHost(database.db, clock, 'default', 'a.shop.test', hostChanges)).ok);
    const second = await secondStore('second', ['b.shop.test', 'c.shop.test']);
    await directory.refresh();
    assert.equal((await directory.resolve('c.shop.test'))?.id, second.id);
    assert.ok((await removeStoreHost(database.db, clock, second.id, 'c.shop.test', hostChanges)).ok);
    await directory.refresh();
    assert.equal(await directory.resolve('c.shop.test'), null);

    assert.ok(await markStoreDeleted(database.db, clock, second.id));
    await directory.refresh();
    assert.equal(await directory.resolve('b.shop.test'), null);
    const third = await secondStore('second', ['b.shop.test']);
    await directory.refresh();
    assert.equal((await directory.resolve('b.shop.test'))?.id, third.id, 'the slug and the host are free again');
  });

  test('keeps no more stores than its bound, dropping the least recently used', async () => {
    for (const n of [1, 2, 3, 4, 5]) await secondStore(`store-${n}`, [`s${n}.shop.test`]);
    await directory.refresh();
    for (const n of [1, 2, 3, 4, 5]) assert.ok(await directory.resolve(`s${n}.shop.test`));
    assert.equal(directory.cachedStores, 3);
  });

  test('a host another store holds is refused, and nothing of the new store is made', async () => {
    await secondStore();
    const refused = await createStore(database.db, clock, {
      slug: 'third',
      name: 'Third',
      identityMode: 'email',
      hosts: ['b.shop.test'],
    });
    assert.deepEqual(refused, { ok: false, reason: 'host_taken', host: 'b.shop.test' });
    const [row] = await database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM stores WHERE slug = 'third'`);
    assert.equal(row?.n, 0);
  });

  test('a restart does not make the first store again once every store was deleted', async () => {
    assert.ok(await markStoreDeleted(database.db, clock, 'default'));
    await database.db.query(`DELETE FROM stores WHERE id = 'default'`);
    await ensureStore(database.db, clock, initial);
    const [row] = await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM stores');
    assert.equal(row?.n, 0);
  });
});

describe('the first store, two instances starting at once on a fresh database', () => {
  test('the second waits for the first’s uncommitted store row instead of finding the sequence used and no store', async () => {
    const database = await openTestDatabase();
    const watcher = new pg.Client({ connectionString: database.url });
    // The first instance's ensureStore, held open after its insert, before its commit.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let first: Promise<void> = Promise.resolve();
    try {
      await migrate(database.db);
      await watcher.connect();
      let inserted!: () => void;
      const insertedYet = new Promise<void>((resolve) => (inserted = resolve));
      const holding: Database = {
        query: (sql, params) => database.db.query(sql, params),
        exec: (sql) => database.db.exec(sql),
        close: () => database.db.close(),
        transaction: (work) =>
          database.db.transaction(async (tx) => {
            const result = await work(tx);
            inserted();
            await held;
            return result;
          }),
      };
      first = ensureStore(holding, clock, initial);
      await insertedYet;
      let secondDone = false;
      const second = ensureStore(database.db, clock, initial).then(() => (secondDone = true));
      await until(async () => (await waitingOnLocks(watcher)) > 0, 'the second instance waits');
      assert.equal(secondDone, false);
      release();
      await Promise.all([first, second]);
      // What the second instance's store directory reads next: the first store.
      const directory = new StoreDirectory(database.db);
      await directory.refresh();
      assert.equal((await directory.resolve(null))?.id, 'default');
    } finally {
      release();
      await first.catch(() => {});
      await watcher.end();
      await database.drop();
    }
  });
});
