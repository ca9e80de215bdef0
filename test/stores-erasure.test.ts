import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eraseDeletedStores } from '../src/janitor.js';
import { checkProvider, saveProvider } from '../src/providers/configured.js';
import { spendProviderState } from '../src/providers/states.js';
import { forStore } from '../src/storage/database.js';
import { markStoreDeleted } from '../src/store/store.js';
import { auth, registration, useHarness, type TestApp } from './helpers/harness.js';
import { rowsOf, storeTables, twoStores } from './helpers/stores.js';

/** A customer of the store on `host`: registered, verified, signed in (sessions, codes, messages, audit). */
async function fillStore(t: TestApp, host: string, email: string): Promise<void> {
  const headers = { host };
  const body = registration({ email });
  assert.equal((await t.post(`${auth}/register`, body, headers)).status, 201);
  const code = await t.codeFor(email, 'verification');
  assert.equal((await t.post(`${auth}/verify`, { identity: email, code }, headers)).status, 200);
  assert.equal((await t.post(`${auth}/login`, { identity: email, password: body.password }, headers)).status, 200);
  assert.equal((await t.post(`${auth}/password/forgot`, { identity: email }, headers)).status, 202);
  await t.deliver();
}

describe('deleting a store', () => {
  const harness = useHarness();

  test('erases everything the store held, in batches that a stop can interrupt, and nothing of another store', async () => {
    const t = await harness.start();
    const b = (await twoStores(t)).b.id;
    for (const n of [1, 2, 3]) await fillStore(t, 'b.shop.test', `b${n}@example.com`);
    await fillStore(t, 'a.shop.test', 'a1@example.com');
    // A sign-in provider with a link and a spent state, each a row that holds the store row up.
    const bDb = forStore(t.db, b);
    const provider = checkProvider({ id: 'google', preset: 'google', client_id: 'c', client_secret: 's' });
    assert.ok(provider.ok);
    await saveProvider(bDb, t.clock, t.services.keys, provider.provider);
    await spendProviderState(bDb, 'a-state', new Date(t.clock.now().getTime() + 600_000));
    await bDb.query(
      `INSERT INTO provider_links (store_id, issuer, subject, customer_id, provider_id, email, linked_at)
       SELECT store_id, 'https://accounts.google.com', 'sub-1', id, 'google', identity_value, now() FROM customers
        WHERE store_id = $1 LIMIT 1`,
      [b],
    );
    const before = await rowsOf(t, b);
    assert.ok(
      before['customers'] === 3 && before['sessions']! > 0 && before['outbox']! > 0 && before['audit_events']! > 0,
    );
    assert.deepEqual([before['store_providers'], before['provider_links'], before['provider_states']], [1, 1, 1]);
    const aBefore = await rowsOf(t, 'default');

    assert.ok(await markStoreDeleted(t.db, t.clock, b));
    await t.services.store.refresh();
    assert.equal((await t.get(`${auth}/session`, { host: 'b.shop.test' })).status, 404);

    // A pass stopped after a few batches leaves the store marked deleted, with some rows left.
    let batches = 0;
    await eraseDeletedStores(t.db, { batchSize: 1, stopping: () => (batches += 1) > 3 });
    const partway = await rowsOf(t, b);
    assert.ok(
      Object.entries(partway).some(([table, n]) => table !== 'stores' && n > 0),
      'rows are left for the next pass',
    );
    const [marked] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM stores WHERE id = $1', [b]);
    assert.equal(marked?.n, 1);

    // The next pass takes up where that one stopped.
    await eraseDeletedStores(t.db, { batchSize: 2, stopping: () => false });
    assert.deepEqual(await rowsOf(t, b), Object.fromEntries(storeTables.map((table) => [table, 0])));
    const [gone] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM stores WHERE id = $1', [b]);
    assert.equal(gone?.n, 0);
    assert.deepEqual(await rowsOf(t, 'default'), aBefore);
    assert.equal((await t.get('/api/v1/csrf-cookie', { host: 'a.shop.test' })).status, 204);
  });
});
