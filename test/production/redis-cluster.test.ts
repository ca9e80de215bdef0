import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Cluster } from 'ioredis';
import { createScratchDatabase } from '../helpers/database.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { counterKey, limits } from '../../src/http/core/rate-limit.js';
import { deriveKeys } from '../../src/keys.js';
import { firstStoreId } from '../../src/store/store.js';

const appSecret = 'r'.repeat(40);

const auth = '/api/v1/customer/auth';

interface Answer {
  status: number;
  body: Record<string, any>;
  ms: number;
}

async function call(base: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, any>,
    ms: performance.now() - started,
  };
}

/** Polls `check` until it holds, or fails the test after `timeoutMs`. */
async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (performance.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// Runs in both passes of `npm test`: the database is this run's (embedded or DATABASE_URL), the
// Redis Cluster is the test's own, three masters without replicas on spare ports.
describe('production mode on a Redis Cluster', () => {
  const prefix = `sfa-test-${randomBytes(6).toString('hex')}:`;
  let cluster: RedisCluster;
  let raw: Cluster;
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let service: ServiceProcess;
  let base: string;

  before(async () => {
    // Three seconds before the surviving masters give up on a lost one; the checks right after
    // the loss run while the others still serve their slots.
    cluster = await startRedisCluster({ masters: 3, nodeTimeoutMs: 3_000 });
    raw = new Cluster(cluster.nodes);
    scratch = await createScratchDatabase('sfa_test_cluster');
    service = await startService({
      DATABASE_URL: scratch.url,
      REDIS_URL: cluster.url,
      REDIS_KEY_PREFIX: prefix,
      APP_SECRET: appSecret,
      NODE_ENV: 'production',
      DELIVERY_LOG_IN_PRODUCTION: 'true',
    });
    base = service.url;
  });

  after(async () => {
    if (service !== undefined) assert.equal(await service.stop(), 0, 'the service shuts down cleanly on SIGTERM');
    raw?.disconnect();
    await cluster?.stop();
    await scratch?.drop();
  });

  // Counter names carry a MAC of the subject under the deployment secret's counters key.
  const counters = deriveKeys(appSecret).counters;
  const forgotKey = (identity: string) =>
    `${prefix}${counterKey(counters, limits.messagesPerIdentityMinute, `forgot-password:${identity}`, firstStoreId)}`;

  /** A made-up identity whose per-minute forgot counter lives on node `index`. */
  async function identityOn(index: number, label: string): Promise<string> {
    for (let i = 0; ; i += 1) {
      const identity = `${label}-${i}@example.com`;
      if (cluster.ownerOf(Number(await raw.cluster('KEYSLOT', forgotKey(identity)))) === index) return identity;
    }
  }

  const forgot = (identity: string) => call(base, 'POST', `${auth}/password/forgot`, { identity });
  const ready = () => call(base, 'GET', '/api/v1/health/ready');

  test('with every master up, readiness says cache true and a limit counts in the cluster', async () => {
    const answer = await ready();
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body['checks'].cache, true);
    const identity = await identityOn(0, 'up');
    assert.equal((await forgot(identity)).status, 202);
    assert.equal((await forgot(identity)).status, 429);
    assert.equal(await raw.hget(forgotKey(identity), 'c'), '2', 'the counter is in the cluster, under the prefix');
  });

  test('with one master killed, customers register and log in, limits hold per instance, and readiness says cache false', async (t) => {
    const identity = await identityOn(0, 'lost');
    const elsewhere = await identityOn(1, 'down');
    await cluster.killMaster(0);
    await waitFor('readiness reports cache false', async () => (await ready()).body['checks']?.cache === false, 5_000);
    const notReady = await ready();
    assert.equal(notReady.status, 503);
    assert.equal(notReady.body['code'], 'deployment_not_ready');
    assert.deepEqual(notReady.body['checks'], { database: true, cache: false, search: true, store: true });
    assert.equal((await call(base, 'GET', '/api/v1/health/live')).status, 200);

    const customer = { identity: 'kay@example.com', password: 'lost master 77' };
    const registered = await call(base, 'POST', `${auth}/register`, {
      name: 'Kay',
      email: customer.identity,
      password: customer.password,
      password_confirmation: customer.password,
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const loggedIn = await call(base, 'POST', `${auth}/login`, customer);
    assert.equal(loggedIn.status, 200, JSON.stringify(loggedIn.body));

    // Its counter's slot is on the lost master: this instance counts it in its own memory.
    const first = await forgot(identity);
    assert.equal(first.status, 202);
    const second = await forgot(identity);
    assert.equal(second.status, 429, 'the limit still holds');
    assert.equal(second.body['code'], 'rate_limited');
    await waitFor(
      'the fallback to memory is logged',
      async () =>
        service.logs.some(
          (line) => line['msg'] === 'Redis unreachable: rate limits are counted in this instance until it returns',
        ),
      5_000,
    );
    // The limit check on the lost slots is bounded by the client's timeouts, not left hanging.
    const slowest = Math.max(first.ms, second.ms);
    assert.ok(slowest < 2_000, `forgot answered within 2 s (slowest ${slowest.toFixed(0)} ms)`);

    // Later the other masters mark it failed and refuse every key: still served, from memory.
    await waitFor(
      'the other masters call the cluster down',
      async () => (await cluster.clusterState(1)) === 'fail',
      10_000,
    );
    assert.equal((await forgot(elsewhere)).status, 202);
    assert.equal((await forgot(elsewhere)).status, 429);
    assert.equal((await call(base, 'POST', `${auth}/login`, customer)).status, 200);
    t.diagnostic(
      `with a master lost: register ${registered.ms.toFixed(0)} ms, login ${loggedIn.ms.toFixed(0)} ms, forgot ${first.ms.toFixed(0)} and ${second.ms.toFixed(0)} ms`,
    );
  });

  test('once the node is back, readiness says cache true and counters are in the cluster again', async () => {
    await cluster.restartNode(0);
    await cluster.waitUntilOk();
    await waitFor('readiness 200', async () => (await ready()).status === 200, 20_000);
    // The instance leaves the cluster alone for a second after its last failure: poll for a
    // counter that lands there.
    let attempt = 0;
    await waitFor(
      'a counter in the cluster',
      async () => {
        const identity = await identityOn(0, `back-${(attempt += 1)}`);
        assert.equal((await forgot(identity)).status, 202);
        return (await raw.hget(forgotKey(identity), 'c')) === '1';
      },
      10_000,
    );
  });
});
