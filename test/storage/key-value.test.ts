import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryCounterStore } from '../../src/storage/counters.js';
import { keyValueContract } from './key-value-contract.js';

keyValueContract('MemoryCounterStore', () => new MemoryCounterStore());

describe('MemoryCounterStore: bounded memory', () => {
  const nowMs = Date.parse('2026-01-15T10:00:00Z');

  test('a flood of 1000 distinct keys never holds more than maxEntries = 100', async () => {
    const store = new MemoryCounterStore(100);
    for (let i = 0; i < 1000; i += 1) {
      await store.increment(`flood:${i}`, 60, nowMs);
      assert.ok(store.size <= 100, `size ${store.size} after ${i + 1} keys`);
    }
    assert.equal(store.size, 100);
    assert.equal((await store.peek('flood:999', nowMs)).count, 1, 'the newest key is kept');
    assert.equal((await store.peek('flood:0', nowMs)).count, 0, 'the oldest key made room');
  });

  test('a parallel flood of distinct keys stays within maxEntries', async () => {
    const store = new MemoryCounterStore(100);
    await Promise.all(Array.from({ length: 1000 }, (_, i) => store.increment(`parallel:${i}`, 60, nowMs)));
    assert.ok(store.size <= 100, `size ${store.size}`);
  });

  test('when full, expired windows are evicted before live ones', async () => {
    const store = new MemoryCounterStore(100);
    // The 50 oldest keys have long windows still open; the 50 newer ones have windows that will have closed.
    for (let i = 0; i < 50; i += 1) await store.increment(`live:${i}`, 3_600, nowMs);
    for (let i = 0; i < 50; i += 1) await store.increment(`short:${i}`, 1, nowMs);
    assert.equal(store.size, 100);

    const later = nowMs + 10_000;
    for (let i = 0; i < 50; i += 1) await store.increment(`new:${i}`, 3_600, later);
    for (let i = 0; i < 50; i += 1) {
      assert.equal((await store.peek(`live:${i}`, later)).count, 1, `live:${i} survived though it is older`);
      assert.equal((await store.peek(`new:${i}`, later)).count, 1, `new:${i} was stored`);
    }
    assert.ok(store.size <= 100);
  });

  test('the oldest live counter is not evicted while expired windows can make room', async () => {
    const store = new MemoryCounterStore(100);
    await store.increment('hot', 3_600, nowMs);
    for (let i = 0; i < 98; i += 1) await store.increment(`cold:${i}`, 1, nowMs);
    const later = nowMs + 5_000;
    for (let i = 0; i < 500; i += 1) await store.increment(`churn:${i}`, 1, later + i * 2_000);
    // With the cold and churn windows closed, room is made from them: the hot counter keeps counting.
    assert.equal((await store.increment('hot', 3_600, later + 1_000_000)).count, 2);
  });

  test('close empties the store', async () => {
    const store = new MemoryCounterStore(100);
    await store.increment('k', 60, nowMs);
    await store.close();
    assert.equal(store.size, 0);
    assert.equal((await store.peek('k', nowMs)).count, 0);
  });
});
