import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { configuredCounterStore } from '../../src/services.js';
import type { CounterStore } from '../../src/storage/counters.js';
import { RedisCounterStore } from '../../src/storage/redis.js';
import { api, createHarness, testSecret } from '../helpers/harness.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls.js';
import { startTlsRedis, type TlsServer } from '../helpers/tls-servers.js';
import { keyValueContract } from './key-value-contract.js';
import { capturingLogger } from '../helpers/logs.js';

let certificates: TestCertificates;
let redis: TlsServer;
const ready = (async () => {
  certificates = await makeTestCertificates();
  redis = await startTlsRedis(certificates);
})();
ready.catch(() => {}); // reported by the hooks that await it
after(async () => {
  await ready.catch(() => {});
  await redis?.stop();
  certificates?.remove();
});

const prefix = () => `sfa-tls-test:${process.pid}:${Math.random().toString(36).slice(2)}:`;

keyValueContract('RedisCounterStore over rediss:// with REDIS_CA_FILE', async () => {
  await ready;
  const config = loadConfig({
    REDIS_URL: `rediss://127.0.0.1:${redis.port}`,
    REDIS_CA_FILE: certificates.caFile,
    REDIS_KEY_PREFIX: prefix(),
  });
  if (config.counters.kind !== 'redis') assert.fail('REDIS_URL names a Redis');
  const { url, keyPrefix, tls } = config.counters;
  const store = new RedisCounterStore(url, { keyPrefix, ca: tls?.ca });
  assert.equal(await store.connected(5_000), true, 'the TLS connection is up');
  return store;
});

describe('Redis over TLS: verified certificates', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  const opened: CounterStore[] = [];
  before(async () => {
    [harness] = await Promise.all([createHarness(), ready]);
  });
  after(async () => {
    await harness.close();
    await Promise.all(opened.map((store) => store.close()));
  });

  async function deployment(env: Record<string, string>) {
    const { logger, lines } = capturingLogger();
    const config = loadConfig({ APP_SECRET: testSecret, REDIS_KEY_PREFIX: prefix(), ...env });
    const counters = await configuredCounterStore(config, logger);
    opened.push(counters);
    return { counters, lines };
  }

  test('the server speaks TLS only: a plain redis:// client gets no answer', async () => {
    const plain = new RedisCounterStore(`redis://127.0.0.1:${redis.port}`, { keyPrefix: prefix() });
    try {
      assert.equal(await plain.connected(1_500), false);
      await assert.rejects(plain.ping());
    } finally {
      await plain.close();
    }
  });

  test('with REDIS_CA_FILE the deployment counts in Redis and readiness reports cache true', async () => {
    const { counters, lines } = await deployment({
      REDIS_URL: `rediss://127.0.0.1:${redis.port}`,
      REDIS_CA_FILE: certificates.caFile,
    });
    assert.equal(await counters.ping(), true);
    const t = await harness.start({ overrides: { counters } });
    const readiness = await t.get(`${api}/health/ready`);
    assert.equal(readiness.status, 200);
    assert.equal(readiness.body.checks.cache, true);
    assert.deepEqual(
      lines.filter((line) => String(line['msg']).startsWith('Redis')),
      [],
      'no warning about Redis',
    );
  });

  test("a connection that errs twice (a refused certificate, then the server's alert) ends no process, and counting goes on", async () => {
    const config = loadConfig({ REDIS_URL: `rediss://127.0.0.1:${redis.port}`, REDIS_CA_FILE: certificates.caFile });
    if (config.counters.kind !== 'redis') assert.fail('REDIS_URL names a Redis');
    const counters = new RedisCounterStore(config.counters.url, { keyPrefix: prefix(), ca: config.counters.tls?.ca });
    opened.push(counters);
    const client = counters.client as Redis;
    assert.equal(await counters.connected(5_000), true, 'the TLS connection is up');
    // ioredis's own listeners are `once`: without one that lasts, the second emit throws.
    client.stream.emit('error', new Error('certificate verification failed'));
    client.stream.emit('error', new Error('tlsv1 alert decode error'));
    const closed = once(client, 'close');
    client.stream.destroy();
    await closed;
    assert.equal(await counters.connected(5_000), true, 'reconnected');
    const nowMs = Date.now();
    assert.equal((await counters.increment('tls-twice', 60, nowMs)).count, 1);
    assert.equal(client.status, 'ready', 'counted in Redis, not in memory');
  });

  for (const [name, env, reason] of [
    [
      'a CA bundle that did not sign the certificate',
      () => ({ REDIS_URL: `rediss://127.0.0.1:${redis.port}`, REDIS_CA_FILE: certificates.otherCaFile }),
      /certificate verification failed: self-signed certificate in certificate chain/,
    ],
    [
      'no REDIS_CA_FILE (the public roots do not know the private CA)',
      () => ({ REDIS_URL: `rediss://127.0.0.1:${redis.port}` }),
      /certificate verification failed: self-signed certificate in certificate chain/,
    ],
    [
      'a host name the certificate does not carry (127.0.0.2)',
      () => ({ REDIS_URL: `rediss://127.0.0.2:${redis.port}`, REDIS_CA_FILE: certificates.caFile }),
      /certificate verification failed: Hostname\/IP does not match certificate's altnames/,
    ],
  ] as const) {
    test(`${name}: refused, never used; readiness reports cache false and limits count in memory`, async () => {
      const { counters, lines } = await deployment(env());
      assert.equal(await counters.ping(), false);
      const warning = lines.find((line) => String(line['msg']).startsWith('Redis not reachable at start'));
      assert.ok(warning !== undefined, 'the start warns about Redis');
      assert.match(String(warning['msg']), reason);
      assert.match(String(warning['msg']), /REDIS_CA_FILE/);

      const t = await harness.start({ overrides: { counters } });
      const readiness = await t.get(`${api}/health/ready`);
      assert.equal(readiness.status, 503);
      assert.equal(readiness.body.checks.cache, false);
      const nowMs = Date.now();
      assert.equal((await counters.increment('tls-refused', 60, nowMs)).count, 1);
      assert.equal((await counters.increment('tls-refused', 60, nowMs)).count, 2, 'counted in this instance');
    });
  }
});
