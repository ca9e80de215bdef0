import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { configuredCounterStore, createLogger } from '../../src/services.js';
import { BatchedCounters } from '../../src/storage/batched-counters.js';
import { MemoryCounterStore, type CounterStore, type WindowCount } from '../../src/storage/counters.js';
import { deleteKeys, requireRedis, testKeyPrefix, testRedisUrl } from '../helpers/redis.js';

const limit = 300;
const batch = 3;
const window = 60;
const start = Date.UTC(2026, 10, 27, 12);

/** The memory store, keeping what it was sent: each batch's amount and its answer, to be awaited. */
class RecordingStore extends MemoryCounterStore {
  readonly sent: Array<{ key: string; amount: number; answer: Promise<WindowCount> }> = [];
  gate: Promise<void> | undefined;

  override increment(key: string, windowSeconds: number, nowMs: number, amount = 1): Promise<WindowCount> {
    const answer = (this.gate ?? Promise.resolve()).then(() => super.increment(key, windowSeconds, nowMs, amount));
    this.sent.push({ key, amount, answer });
    return answer;
  }

  landed(): Promise<unknown> {
    return Promise.all(this.sent.map((batch) => batch.answer));
  }
}

async function call(counters: BatchedCounters, key = 'rl:any:a', nowMs = start): Promise<boolean> {
  return (await counters.increment(key, window, batch, nowMs)).count <= limit;
}

describe('batched counters: counted here, shared in batches', () => {
  test('one instance counts its own calls exactly: 300 of 400 are within the limit', async () => {
    const counters = new BatchedCounters(new MemoryCounterStore());
    let within = 0;
    for (let i = 0; i < 400; i += 1) if (await call(counters)) within += 1;
    assert.equal(within, limit);
  });

  test('nothing is sent until a batch is full; then one increment carries the batch', async () => {
    const store = new RecordingStore();
    const counters = new BatchedCounters(store);
    assert.equal(await call(counters), true);
    assert.equal(await call(counters), true);
    assert.equal(store.sent.length, 0, 'two calls are still this instance’s own');
    assert.equal(await call(counters), true);
    assert.deepEqual(
      store.sent.map(({ key, amount }) => [key, amount]),
      [['rl:any:a', batch]],
    );
    await store.landed();
    assert.equal((await store.peek('rl:any:a', start)).count, batch);
  });

  test('a call that would hold more than a batch unacknowledged waits for the batch on its way', async () => {
    const store = new RecordingStore();
    let open!: () => void;
    store.gate = new Promise<void>((resolve) => (open = resolve));
    const counters = new BatchedCounters(store);
    for (let i = 0; i < batch; i += 1) await call(counters);
    const fourth = counters.increment('rl:any:a', window, batch, start);
    assert.ok(fourth instanceof Promise, 'the fourth call is not answered from memory');
    let answered = false;
    void fourth.then(() => (answered = true));
    await Promise.resolve();
    assert.equal(answered, false);
    open();
    assert.equal((await fourth).count, batch + 1);
  });

  test('a total reached through another instance stops this one within one batch', async () => {
    const shared = new MemoryCounterStore();
    const first = new BatchedCounters(shared);
    const second = new BatchedCounters(shared);
    for (let i = 0; i < limit; i += 1) assert.equal(await call(first), true);
    let within = 0;
    for (let i = 0; i < 20; i += 1) if (await call(second)) within += 1;
    assert.ok(within <= batch, `the second instance let ${within} through, more than one batch`);
    assert.ok(within > 0, 'it had not heard of the total before its first batch');
  });

  test('a new window counts from one again, in the window the shared store decided', async () => {
    const store = new RecordingStore();
    const counters = new BatchedCounters(store);
    for (let i = 0; i < 400; i += 1) await call(counters);
    await store.landed();
    assert.equal(await call(counters, 'rl:any:a', start + window * 1000 - 1), false);
    assert.equal(await call(counters, 'rl:any:a', start + window * 1000), true);
  });

  test('the map keeps to its size, and a key it drops hands its unsent calls to the shared store', async () => {
    const store = new RecordingStore();
    const counters = new BatchedCounters(store, 10);
    // Two calls a key: none is a single call, so the oldest, the first, is dropped first.
    for (const key of ['busy', ...Array.from({ length: 40 }, (_, i) => String(i))]) {
      await call(counters, `rl:any:${key}`);
      await call(counters, `rl:any:${key}`);
    }
    assert.ok(counters.size <= 10, `${counters.size} entries`);
    await store.landed();
    assert.deepEqual(
      store.sent.filter(({ key }) => key === 'rl:any:busy').map(({ amount }) => amount),
      [2],
    );
  });
});

// Both passes: REDIS_URL, else the machine's Redis, under a prefix of its own.
describe('the any-call limit across many instances on one Redis', () => {
  const keyPrefix = testKeyPrefix('batched');
  const opened: CounterStore[] = [];
  const silent = createLogger({ level: 'silent' });

  after(async () => {
    await Promise.all(opened.map((store) => store.close()));
    await deleteKeys(keyPrefix);
  });

  test('eight instances, one address, calls interleaved: at least the limit passes, and less than a batch more per instance', async () => {
    await requireRedis();
    const config = loadConfig({ REDIS_URL: testRedisUrl, REDIS_KEY_PREFIX: keyPrefix, APP_SECRET: 'b'.repeat(40) });
    const instances = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const store = await configuredCounterStore(config, silent);
        opened.push(store);
        return new BatchedCounters(store);
      }),
    );
    // Waves of parallel calls, each to a random instance: batches cross on the way, as under load.
    let within = 0;
    for (let wave = 0; wave < 40; wave += 1) {
      const answers = await Promise.all(
        Array.from({ length: 25 }, () =>
          call(instances[Math.floor(Math.random() * instances.length)]!, 'rl:any:one-address', Date.now()),
        ),
      );
      within += answers.filter(Boolean).length;
    }
    assert.ok(within >= limit, `${within} calls passed, fewer than the limit`);
    assert.ok(within < limit + instances.length * batch, `${within} calls passed, past the bound`);
  });
});
