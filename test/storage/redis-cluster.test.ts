import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Cluster } from 'ioredis';
import { loadConfig } from '../../src/config.js';
import { configuredCounterStore, createLogger } from '../../src/services.js';
import { keyName, MemoryCounterStore, slotTagged } from '../../src/storage/counters.js';
import { FallbackCounterStore, RedisCounterStore } from '../../src/storage/redis.js';
import { openTestCounterStore } from '../helpers/database.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { keyValueContract } from './key-value-contract.js';

/** Polls `check` until it holds, or fails the test after `timeoutMs`. */
async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (performance.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function clusterClient(store: RedisCounterStore): Cluster {
  assert.ok(store.client instanceof Cluster, 'a redis+cluster:// URL makes a cluster client');
  return store.client;
}

/** The slot the cluster puts `key` in (the client's prefix is not added to CLUSTER KEYSLOT's argument). */
async function slotOf(client: Cluster, key: string): Promise<number> {
  return Number(await client.cluster('KEYSLOT', key));
}

describe('Redis Cluster', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startRedisCluster({ masters: 3 });
  });
  after(async () => cluster?.stop());

  keyValueContract('RedisCounterStore on a Redis Cluster', () => openTestCounterStore(cluster.url));
  keyValueContract(
    'FallbackCounterStore over a Redis Cluster',
    async () => new FallbackCounterStore(await openTestCounterStore(cluster.url)),
  );

  describe('hash slots', () => {
    let store: RedisCounterStore;
    let client: Cluster;
    const prefix = `sfa-test:${randomBytes(6).toString('hex')}:`;
    before(async () => {
      store = new RedisCounterStore(cluster.url, { keyPrefix: prefix });
      assert.equal(await store.connected(), true);
      client = clusterClient(store);
    });
    after(async () => store?.close());

    test('keys made with one slotTagged tag land in one slot: a multi-key command and a two-key script on them succeed', async () => {
      const tag = `customer-${randomBytes(4).toString('hex')}`;
      const keys = ['a', 'b', 'c'].map((name) => slotTagged(tag, keyName('rl', name, 'ada@example.com')));
      const slots = await Promise.all(keys.map((key) => slotOf(client, `${prefix}${key}`)));
      assert.equal(new Set(slots).size, 1, `slots ${slots.join(', ')}`);
      assert.equal(await client.mset(keys[0]!, '1', keys[1]!, '2', keys[2]!, '3'), 'OK');
      assert.deepEqual(await client.mget(...keys), ['1', '2', '3']);
      const swapped = await client.eval(
        "local a = redis.call('GET', KEYS[1]); redis.call('SET', KEYS[1], redis.call('GET', KEYS[2])); redis.call('SET', KEYS[2], a); return redis.call('MGET', KEYS[1], KEYS[2])",
        2,
        keys[0]!,
        keys[1]!,
      );
      assert.deepEqual(swapped, ['2', '1']);
      assert.equal(await client.del(...keys), 3);
    });

    test('the same commands on keys without a shared tag are refused (CROSSSLOT, or the same-slot check of the client), so the test above can fail', async () => {
      // Counter names hash whole: find two that the cluster puts in different slots.
      const first = keyName('rl', 'login', '203.0.113.1');
      let second = first;
      for (
        let i = 2;
        (await slotOf(client, `${prefix}${second}`)) === (await slotOf(client, `${prefix}${first}`));
        i += 1
      ) {
        second = keyName('rl', 'login', `203.0.113.${i}`);
      }
      await assert.rejects(client.mset(first, '1', second, '2'), /CROSSSLOT|belong to the same slot/);
      await assert.rejects(
        client.eval("return redis.call('MGET', KEYS[1], KEYS[2])", 2, first, second),
        /CROSSSLOT|belong to the same slot/,
      );
    });

    test('braces in a subject do not make a hash tag: made-up identities spread over the slots, not into the one of their tag', async () => {
      const identities = Array.from({ length: 12 }, (_, i) => `{x}${i}@example.com`);
      const escaped = await Promise.all(
        identities.map((identity) => slotOf(client, `${prefix}${keyName('rl', 'login-failed', identity)}`)),
      );
      assert.ok(new Set(escaped).size > 1, `the escaped names spread over ${new Set(escaped).size} slot(s)`);
      // Written as they come, the names would all hash by "x": what the escaping prevents.
      const raw = await Promise.all(
        identities.map((identity) => slotOf(client, `${prefix}rl:login-failed:${identity}`)),
      );
      assert.equal(new Set(raw).size, 1);
      assert.equal(keyName('rl', 'login-failed', '{x}%1@example.com'), 'rl:login-failed:%7Bx%7D%251@example.com');
    });

    test('counters spread over every master', async () => {
      const nowMs = Date.now();
      await Promise.all(
        Array.from({ length: 60 }, (_, i) => store.increment(keyName('rl', 'any', `198.51.100.${i}`), 60, nowMs)),
      );
      const perMaster = await Promise.all(
        client.nodes('master').map(async (node) => (await node.keys(`${prefix}*`)).length),
      );
      assert.equal(perMaster.length, 3);
      assert.ok(
        perMaster.every((count) => count > 0),
        `keys per master: ${perMaster.join(', ')}`,
      );
      assert.equal(
        perMaster.reduce((sum, count) => sum + count, 0),
        60,
      );
    });
  });

  describe('REDIS_URL and REDIS_KEY_PREFIX', () => {
    test('configuredCounterStore reaches the cluster through REDIS_URL, each key under REDIS_KEY_PREFIX', async () => {
      const prefix = `sfa-test-${randomBytes(6).toString('hex')}:`;
      const config = loadConfig({ REDIS_URL: cluster.url, REDIS_KEY_PREFIX: prefix, APP_SECRET: 'c'.repeat(40) });
      const store = await configuredCounterStore(config, createLogger({ level: 'silent' }));
      const raw = new Cluster(cluster.nodes);
      try {
        assert.equal((await store.increment('login:ada', 60, Date.now())).count, 1);
        assert.equal(await raw.exists(`${prefix}login:ada`), 1);
        assert.equal(await store.ping(), true);
      } finally {
        await raw.del(`${prefix}login:ada`);
        raw.disconnect();
        await store.close();
      }
    });
  });
});

// Its own cluster: it kills masters, which the suites above must not see.
describe('a Redis Cluster losing masters', () => {
  let cluster: RedisCluster;
  let store: RedisCounterStore;
  let client: Cluster;
  const prefix = `sfa-test:${randomBytes(6).toString('hex')}:`;
  const nowMs = Date.now();
  before(async () => {
    // Three seconds before the survivors give up on a silent master: stage 1 below fits well inside.
    cluster = await startRedisCluster({ masters: 3, nodeTimeoutMs: 3_000 });
    store = new RedisCounterStore(cluster.url, { keyPrefix: prefix });
    assert.equal(await store.connected(), true);
    client = clusterClient(store);
  });
  after(async () => {
    await store?.close();
    await cluster?.stop();
  });

  /** A counter name whose slot node `index` serves. */
  async function keyOn(index: number, label: string): Promise<string> {
    for (let i = 0; ; i += 1) {
      const key = keyName('rl', label, `192.0.2.${i}`);
      if (cluster.ownerOf(await slotOf(client, `${prefix}${key}`)) === index) return key;
    }
  }

  test('readiness goes false and limits count in memory through each stage of the loss, then Redis is used again', async (t) => {
    const onDead = await keyOn(0, 'dead');
    const onLive = await keyOn(1, 'live');
    const errors: unknown[] = [];
    // No pause after a failure, so each call below reaches the cluster and shows its error.
    const fallback = new FallbackCounterStore(store, new MemoryCounterStore(), (error) => errors.push(error), 0);
    const lastError = () => String((errors.at(-1) as Error | undefined)?.message);

    assert.equal(await store.ping(), true);
    assert.equal((await fallback.increment(onDead, 60, nowMs)).count, 1);
    assert.equal(errors.length, 0, 'every master up: the cluster counts');

    // 1. One master gone, the others still call the cluster ok: its slots' connections are refused.
    await cluster.killMaster(0);
    let started = performance.now();
    assert.equal(await store.ping(), false, 'readiness sees the lost master at once');
    const pingMs = performance.now() - started;
    started = performance.now();
    assert.equal((await fallback.increment(onDead, 60, nowMs)).count, 1, 'counted in memory, from 1');
    const failMs = performance.now() - started;
    // Refused by the lost node, timed out, or sent back and forth: the others still name it the slot's
    // master (MOVED), and the client gives up after its few redirections.
    const lostError = lastError();
    assert.match(lostError, /Connection is closed|Command timed out|MOVED \d+ 127\.0\.0\.1:/);
    assert.ok(failMs < 1_000, `a call on the lost slots failed over in ${failMs.toFixed(0)} ms`);
    assert.equal((await fallback.increment(onDead, 60, nowMs)).count, 2, 'and keeps counting there');
    assert.equal(await cluster.clusterState(1), 'ok');
    assert.equal((await store.increment(onLive, 60, nowMs)).count, 1, 'the other masters still serve their slots');

    // 2. The others mark it failed (cluster-node-timeout): the cluster refuses every key.
    await waitFor(
      'the survivors call the cluster down',
      async () => (await cluster.clusterState(1)) === 'fail',
      10_000,
    );
    // CLUSTERDOWN from a survivor, or, when the client's slot map still sent it to the lost node,
    // its closed connection after the client's few redirections: refused either way.
    const refusal = /CLUSTERDOWN|Connection is closed/;
    await assert.rejects(store.increment(onLive, 60, nowMs), (error: Error) => refusal.test(error.message));
    assert.equal((await fallback.increment(onLive, 60, nowMs)).count, 1, 'counted in memory');
    assert.match(lastError(), refusal);
    assert.equal(await store.ping(), false);

    // 3. Every node gone: the client loses the topology ("Failed to refresh slots cache") and reconnects.
    await cluster.killMaster(1);
    await cluster.killMaster(2);
    await waitFor('the client notices', async () => client.status !== 'ready', 10_000);
    assert.equal((await fallback.increment(onLive, 60, nowMs)).count, 2);
    assert.match(lastError(), /not connected|Connection is closed|CLUSTERDOWN/);
    assert.equal(await store.ping().catch(() => false), false);

    // 4. Back: the nodes rejoin from their configuration files and the client finds them by itself.
    await Promise.all([0, 1, 2].map((index) => cluster.restartNode(index)));
    await cluster.waitUntilOk();
    started = performance.now();
    await waitFor('readiness true again', () => store.ping(), 20_000);
    await waitFor(
      'counting in the cluster again',
      async () => (await store.increment(onDead, 60, nowMs)).count === 1,
      10_000,
    );
    const errorsNow = errors.length;
    assert.equal((await fallback.increment(onDead, 60, nowMs)).count, 2, 'the fallback uses the cluster again');
    assert.equal(errors.length, errorsNow);
    t.diagnostic(
      `lost master: ping false in ${pingMs.toFixed(0)} ms, a call on its slots failed over in ${failMs.toFixed(0)} ms (${lostError}); back in ${(performance.now() - started).toFixed(0)} ms after the nodes agreed`,
    );
  });
});
