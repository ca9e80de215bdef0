import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { createArgon2Hasher, testArgon2 } from '../../src/auth/password.js';
import { loadConfig } from '../../src/config.js';
import { openServices, type Services } from '../../src/services.js';
import { createScratchDatabase, testBackends } from '../helpers/database.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const redisUrl = process.env['REDIS_URL'];
const production = testBackends.database === 'postgres' && testBackends.cache === 'redis';

/** Polls `check` until it holds or `timeoutMs` passes; returns how long it took. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe(
  'dependency faults in production mode',
  { skip: production ? false : 'needs DATABASE_URL and REDIS_URL' },
  () => {
    let pgProxy: TcpProxy;
    let redisProxy: TcpProxy;
    let services: Services;
    let app: FastifyInstance;
    let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;

    before(async () => {
      scratch = await createScratchDatabase('sfa_test_faults');
      const pg = new URL(scratch.url);
      const redis = new URL(redisUrl!);
      pgProxy = await new TcpProxy(pg.hostname, Number(pg.port || 5432)).start();
      redisProxy = await new TcpProxy(redis.hostname, Number(redis.port || 6379)).start();
      pg.host = `127.0.0.1:${pgProxy.port}`;
      redis.host = `127.0.0.1:${redisProxy.port}`;
      redis.pathname = `/${1 + (process.pid % 15)}`;
      const config = loadConfig({
        DATABASE_URL: pg.toString(),
        REDIS_URL: redis.toString(),
        APP_SECRET: 'f'.repeat(40),
      });
      services = await openServices(config, pino({ level: 'silent' }), {
        hasher: createArgon2Hasher(testArgon2),
        manualDispatch: true,
      });
      app = await buildApp(services);
      await app.ready();
    });

    after(async () => {
      await app.close();
      await services.close();
      await pgProxy.close();
      await redisProxy.close();
      await scratch.drop();
    });

    const login = () =>
      app.inject({
        method: 'POST',
        url: '/api/v1/customer/auth/login',
        payload: { identity: 'nobody@example.com', password: 'whatever1' },
      });
    const ready = () => app.inject({ method: 'GET', url: '/api/v1/health/ready' });

    test('with PostgreSQL gone, customer calls answer 503 service_unavailable within 2 s, liveness stays up, and all recovers alone', async (t) => {
      assert.equal((await login()).statusCode, 401);
      pgProxy.set('refuse');
      const started = performance.now();
      const down = await login();
      const elapsed = performance.now() - started;
      assert.equal(down.statusCode, 503);
      assert.equal(down.json().code, 'service_unavailable');
      assert.ok(Number(down.headers['retry-after']) > 0);
      assert.ok(elapsed < 2_000, `answered in ${elapsed.toFixed(0)} ms`);
      const readiness = await ready();
      assert.equal(readiness.statusCode, 503);
      assert.equal(readiness.json().code, 'deployment_not_ready');
      assert.equal(readiness.json().checks.database, false);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/health/live' })).statusCode, 200);

      pgProxy.set('pass');
      const recovery = await waitFor(async () => (await login()).statusCode === 401, 10_000);
      await waitFor(async () => (await ready()).statusCode === 200, 5_000);
      t.diagnostic(
        `503 after ${elapsed.toFixed(0)} ms with the database down; recovered ${recovery.toFixed(0)} ms after it returned`,
      );
    });

    test('with PostgreSQL hanging, readiness still answers within 1.5 s and customer calls within 2 s', async () => {
      pgProxy.set('hang');
      await new Promise((resolve) => setTimeout(resolve, 1_100)); // let the 1 s readiness result expire
      let started = performance.now();
      const readiness = await ready();
      const readyElapsed = performance.now() - started;
      assert.equal(readiness.statusCode, 503);
      assert.equal(readiness.json().checks.database, false);
      assert.ok(readyElapsed < 1_500, `readiness took ${readyElapsed.toFixed(0)} ms`);
      started = performance.now();
      const down = await login();
      const loginElapsed = performance.now() - started;
      assert.equal(down.json().code, 'service_unavailable');
      assert.ok(loginElapsed < 2_000, `login took ${loginElapsed.toFixed(0)} ms`);
      pgProxy.set('pass');
      await waitFor(async () => (await login()).statusCode === 401, 10_000);
    });

    test('with Redis gone, customer calls keep working, limits hold per instance, readiness says cache false, and it recovers', async () => {
      redisProxy.set('refuse');
      await waitFor(async () => (await ready()).json().checks?.cache === false, 5_000);
      assert.equal((await login()).statusCode, 401);
      const forgot = () =>
        app.inject({
          method: 'POST',
          url: '/api/v1/customer/auth/password/forgot',
          payload: { identity: 'limit@example.com' },
        });
      assert.equal((await forgot()).statusCode, 202);
      const second = await forgot();
      assert.equal(second.statusCode, 429, 'the limit is still enforced without Redis');
      assert.equal(second.json().code, 'rate_limited');
      redisProxy.set('pass');
      await waitFor(async () => (await ready()).statusCode === 200, 10_000);
    });

    test('readiness answers 503 while the instance drains for shutdown', async () => {
      app.draining = true;
      try {
        await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the 1 s result reuse
        const readiness = await ready();
        assert.equal(readiness.statusCode, 503);
        assert.equal(readiness.json().code, 'deployment_not_ready');
      } finally {
        app.draining = false;
      }
    });
  },
);
