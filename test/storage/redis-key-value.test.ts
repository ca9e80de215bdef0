import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryCounterStore, type CounterStore } from '../../src/storage/counters.js';
import { FallbackCounterStore } from '../../src/storage/redis.js';
import { openTestCounterStore } from '../helpers/database.js';
import { testRedisUrl } from '../helpers/redis.js';
import { keyValueContract } from './key-value-contract.js';

// Both passes: REDIS_URL, else the machine's Redis, under a key prefix deleted on close. A Redis that
// does not answer fails the suite.
keyValueContract('RedisCounterStore', () => openTestCounterStore(testRedisUrl));
keyValueContract(
  'FallbackCounterStore over Redis',
  async () => new FallbackCounterStore(await openTestCounterStore(testRedisUrl)),
);

/** A store whose server is gone: every call fails, as ioredis does with its offline queue off. */
class UnreachableStore implements CounterStore {
  calls = 0;
  private fail(): never {
    this.calls += 1;
    throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
  }
  async increment() {
    return this.fail();
  }
  async peek() {
    return this.fail();
  }
  async delete() {
    return this.fail();
  }
  async ping(): Promise<boolean> {
    return this.fail();
  }
  async close() {}
}

describe('FallbackCounterStore', () => {
  const nowMs = Date.parse('2026-01-15T10:00:00Z');

  test('keeps counting in memory while the primary is unreachable, so limits never fail open', async () => {
    const primary = new UnreachableStore();
    const fallbacks: unknown[] = [];
    const store = new FallbackCounterStore(primary, new MemoryCounterStore(), (error) => fallbacks.push(error));
    assert.deepEqual(await store.increment('k', 60, nowMs), { count: 1, resetAtMs: nowMs + 60_000 });
    assert.deepEqual(await store.increment('k', 60, nowMs), { count: 2, resetAtMs: nowMs + 60_000 });
    assert.equal(await store.ping(), false, 'ping reports the primary, for readiness');
    assert.equal(fallbacks.length, 1, 'after one failure the primary is left alone for a moment');
    assert.equal(
      primary.calls,
      2,
      'the first increment and the ping reached the primary; the second increment did not',
    );
  });

  test('tries the primary again after the pause', async () => {
    const primary = new UnreachableStore();
    const store = new FallbackCounterStore(primary, new MemoryCounterStore(), () => {}, 0);
    await store.increment('k', 60, nowMs);
    await store.increment('k', 60, nowMs);
    assert.equal(primary.calls, 2);
  });
});
