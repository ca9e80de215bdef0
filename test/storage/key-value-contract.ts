import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { CounterStore } from '../../src/storage/counters.js';

/**
 * The behaviour every CounterStore must show (docs/reference/rate-limits.md: windowed, atomic counters). Applied to
 * the memory store, to Redis (in both passes) and to a Redis Cluster. `makeStore` may hand back a
 * shared store: each test uses keys of its own, and times near the real clock so a store whose
 * keys also expire in real time (Redis TTLs) behaves the same.
 */
export function keyValueContract(name: string, makeStore: () => CounterStore | Promise<CounterStore>): void {
  describe(`${name}: the key-value contract`, () => {
    let store: CounterStore;
    const key = (label: string) => `kv-contract:${label}:${randomUUID()}`;
    let nowMs: number;
    before(async () => {
      store = await makeStore();
      nowMs = Date.now();
    });
    after(async () => store.close());

    test('increment counts from 1 within a window and reports when the window closes', async () => {
      const k = key('count');
      const first = await store.increment(k, 60, nowMs);
      assert.deepEqual(first, { count: 1, resetAtMs: nowMs + 60_000 });
      assert.deepEqual(await store.increment(k, 60, nowMs + 1_000), { count: 2, resetAtMs: nowMs + 60_000 });
      assert.deepEqual(await store.increment(k, 60, nowMs + 59_999), { count: 3, resetAtMs: nowMs + 60_000 });
    });

    test('a window that has closed restarts the count with a new window', async () => {
      const k = key('restart');
      await store.increment(k, 60, nowMs);
      await store.increment(k, 60, nowMs);
      const restarted = await store.increment(k, 60, nowMs + 60_000);
      assert.deepEqual(restarted, { count: 1, resetAtMs: nowMs + 120_000 });
      assert.deepEqual(await store.increment(k, 60, nowMs + 61_000), { count: 2, resetAtMs: nowMs + 120_000 });
    });

    test('the window length is the one given when the window opened', async () => {
      const k = key('window');
      await store.increment(k, 10, nowMs);
      assert.deepEqual(await store.increment(k, 3_600, nowMs + 5_000), { count: 2, resetAtMs: nowMs + 10_000 });
    });

    test('keys count independently', async () => {
      const a = key('a');
      const b = key('b');
      await store.increment(a, 60, nowMs);
      await store.increment(a, 60, nowMs);
      assert.equal((await store.increment(b, 60, nowMs)).count, 1);
      assert.equal((await store.peek(a, nowMs)).count, 2);
    });

    test('peek reads a counter without changing it', async () => {
      const k = key('peek');
      await store.increment(k, 60, nowMs);
      await store.increment(k, 60, nowMs);
      assert.deepEqual(await store.peek(k, nowMs + 1_000), { count: 2, resetAtMs: nowMs + 60_000 });
      assert.deepEqual(await store.peek(k, nowMs + 1_000), { count: 2, resetAtMs: nowMs + 60_000 });
      assert.equal((await store.increment(k, 60, nowMs + 2_000)).count, 3);
    });

    test('peek of an unknown key or a closed window is a zero count', async () => {
      assert.equal((await store.peek(key('unknown'), nowMs)).count, 0);
      const k = key('closed');
      await store.increment(k, 60, nowMs);
      assert.equal((await store.peek(k, nowMs + 60_000)).count, 0);
      assert.equal((await store.increment(k, 60, nowMs + 60_000)).count, 1, 'peeking did not reopen the old window');
    });

    test('delete forgets a counter, and deleting an unknown key is harmless', async () => {
      const k = key('delete');
      await store.increment(k, 60, nowMs);
      await store.increment(k, 60, nowMs);
      await store.delete(k);
      assert.equal((await store.peek(k, nowMs)).count, 0);
      assert.equal((await store.increment(k, 60, nowMs)).count, 1);
      const unknown = key('never-set');
      await store.delete(unknown);
      assert.equal((await store.peek(unknown, nowMs)).count, 0);
    });

    test('parallel increments are atomic: each sees a distinct count and none is lost', async () => {
      const k = key('parallel');
      const results = await Promise.all(Array.from({ length: 200 }, () => store.increment(k, 60, nowMs)));
      const counts = results.map((r) => r.count).sort((x, y) => x - y);
      assert.deepEqual(
        counts,
        Array.from({ length: 200 }, (_, i) => i + 1),
      );
      assert.equal((await store.peek(k, nowMs)).count, 200);
    });

    test('ping reports a reachable store', async () => {
      assert.equal(await store.ping(), true);
    });
  });
}
