import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config.js';
import { configuredCounterStore, createLogger } from '../../src/services.js';
import type { CounterStore } from '../../src/storage/counters.js';
import { requireRedis, testRedisUrl } from '../helpers/redis.js';

const silent = createLogger({ level: 'silent' });

// Both passes: REDIS_URL, else the machine's Redis. Every key written is deleted afterwards.
describe('REDIS_KEY_PREFIX: deployments sharing one Redis', () => {
  const opened: CounterStore[] = [];
  const written: string[] = [];
  let raw: Redis;

  before(async () => {
    await requireRedis();
    raw = new Redis(testRedisUrl);
  });

  async function deployment(env: Record<string, string>): Promise<CounterStore> {
    const config = loadConfig({ REDIS_URL: testRedisUrl, APP_SECRET: 'p'.repeat(40), ...env });
    const store = await configuredCounterStore(config, silent);
    opened.push(store);
    return store;
  }

  after(async () => {
    await Promise.all(opened.map((store) => store.close()));
    if (raw === undefined) return;
    if (written.length > 0) await raw.del(...written);
    raw.disconnect();
  });

  test('two deployments with their own prefixes count the same key apart, each under its own prefix', async () => {
    const tag = randomBytes(6).toString('hex');
    const [prefixA, prefixB] = [`sfa-test-a-${tag}:`, `sfa-test-b-${tag}:`];
    const a = await deployment({ REDIS_KEY_PREFIX: prefixA });
    const b = await deployment({ REDIS_KEY_PREFIX: prefixB });
    const key = `login:${randomUUID()}`;
    written.push(`${prefixA}${key}`, `${prefixB}${key}`);
    const nowMs = Date.now();

    for (let i = 1; i <= 3; i += 1) assert.equal((await a.increment(key, 60, nowMs)).count, i);
    assert.equal((await b.increment(key, 60, nowMs)).count, 1, "B's counter starts at 1 beside A's 3");
    assert.equal((await a.peek(key, nowMs)).count, 3);
    await b.delete(key);
    assert.equal((await a.peek(key, nowMs)).count, 3, "deleting B's key leaves A's alone");

    assert.equal(await raw.exists(`${prefixA}${key}`), 1, 'A keeps its counter under its prefix');
    assert.equal(await raw.exists(`${prefixB}${key}`), 0);
  });

  test('without REDIS_KEY_PREFIX the keys live under storefront-auth:', async () => {
    const store = await deployment({});
    // A key no other deployment on this Redis writes, deleted after the file.
    const key = `login:${randomUUID()}`;
    written.push(`storefront-auth:${key}`);
    await store.increment(key, 60, Date.now());
    assert.equal(await raw.exists(`storefront-auth:${key}`), 1);
  });
});
