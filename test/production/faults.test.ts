import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { loadConfig } from '../../src/config.js';
import { createLogger, openServices, type Services } from '../../src/services.js';
import { MemoryCounterStore } from '../../src/storage/counters.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { testArgon2 } from '../helpers/argon2.js';
import { createScratchDatabase, serverTarget, testDirectUrlVariable } from '../helpers/database.js';
import { registration } from '../helpers/harness.js';
import { deleteKeys, requireRedis, testKeyPrefix, testRedisUrl } from '../helpers/redis.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/** Polls `check` until it holds or `timeoutMs` passes; returns how long it took. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The service as production runs it (DATABASE_URL and REDIS_URL), each server behind a proxy the
 * test cuts. Both passes: the database is a fresh one on DATABASE_URL's server or on the embedded
 * server `npm test` started; Redis is REDIS_URL or the machine's, under a key prefix of its own.
 */
describe('dependency faults in production mode', () => {
  const keyPrefix = testKeyPrefix('faults');
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let services: Services;
  let app: FastifyInstance;
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;

  /** The scratch database reached through the proxy: over TCP, even when the server listens on a socket. */
  function throughProxy(): string {
    const url = new URL(scratch.url);
    url.searchParams.delete('host');
    url.host = `127.0.0.1:${pgProxy.port}`;
    return url.toString();
  }

  before(async () => {
    await requireRedis();
    scratch = await createScratchDatabase('sfa_test_faults');
    const redis = new URL(testRedisUrl);
    pgProxy = await new TcpProxy(serverTarget(scratch.url)).start();
    redisProxy = await new TcpProxy(redis.hostname, Number(redis.port || 6379)).start();
    redis.host = `127.0.0.1:${redisProxy.port}`;
    const config = loadConfig({
      DATABASE_URL: throughProxy(),
      REDIS_URL: redis.toString(),
      REDIS_KEY_PREFIX: keyPrefix,
      APP_SECRET: 'f'.repeat(40),
    });
    services = await openServices(config, createLogger({ level: 'silent' }), {
      hasher: createArgon2Hasher(testArgon2),
      manualDispatch: true,
    });
    app = await buildApp(services);
    await app.ready();
  });

  after(async () => {
    await app?.close();
    await services?.close();
    await pgProxy?.close();
    await redisProxy?.close();
    // Only a service that opened wrote keys; before that, Redis may be the very thing missing.
    if (services !== undefined) await deleteKeys(keyPrefix);
    await scratch?.drop();
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

  test('with PostgreSQL hanging, readiness still answers within 2 s and customer calls within 2 s', async () => {
    pgProxy.set('hang');
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // let the 1 s readiness result expire
    let started = performance.now();
    const readiness = await ready();
    const readyElapsed = performance.now() - started;
    assert.equal(readiness.statusCode, 503);
    assert.equal(readiness.json().checks.database, false);
    // The database and store checks each wait out their 1 s limit; in parallel that is about 1 s, one
    // after the other 2 s. The bound sits there, leaving a busy host a second of slack.
    assert.ok(readyElapsed < 2_000, `readiness took ${readyElapsed.toFixed(0)} ms`);
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

  test('with PostgreSQL silent on an open pooled connection, a login answers 503 within about 2 s, and that connection is never handed out again', async (t) => {
    // A service of its own with a one-connection pool: the login gets the pool's only connection,
    // and once the network heals the next statement shows whether that connection came back.
    const config = loadConfig({ DATABASE_URL: throughProxy(), DATABASE_POOL_SIZE: '1', APP_SECRET: 'f'.repeat(40) });
    const own = await openServices(config, createLogger({ level: 'silent' }), {
      counters: new MemoryCounterStore(),
      hasher: createArgon2Hasher(testArgon2),
      manualDispatch: true,
      manualJanitor: true,
    });
    const ownApp = await buildApp(own);
    const ownLogin = () =>
      ownApp.inject({
        method: 'POST',
        url: '/api/v1/customer/auth/login',
        payload: { identity: 'nobody@example.com', password: 'whatever1' },
      });
    const backend = async () => (await own.db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
    try {
      await ownApp.ready();
      assert.equal((await ownLogin()).statusCode, 401);
      await own.background.drain(); // the audit entry's write, so nothing else holds the connection
      const established = await backend();

      pgProxy.set('freeze');
      const started = performance.now();
      const stalled = await ownLogin();
      const elapsed = performance.now() - started;
      assert.equal(stalled.statusCode, 503);
      assert.equal(stalled.json().code, 'service_unavailable');
      assert.ok(Number(stalled.headers['retry-after']) > 0);
      // The request path's 2 s query timeout, with slack for a busy host; 12 s before it had one.
      assert.ok(elapsed < 4_000, `answered in ${elapsed.toFixed(0)} ms`);
      t.diagnostic(`503 after ${elapsed.toFixed(0)} ms on a silent pooled connection`);

      // The stalled statement's answer now arrives late: on a reused connection it would be read
      // as the answer to whatever ran there next.
      pgProxy.thaw();
      assert.equal((await ownLogin()).statusCode, 401);
      // Behind a pooler the server's pid says nothing about the pool's own connection: PgBouncer may
      // give the new one the same server backend. Directly, a new pid is a new connection.
      if (process.env[testDirectUrlVariable] === undefined) {
        assert.notEqual(await backend(), established, 'a new connection, the timed-out one discarded');
      } else {
        t.diagnostic('behind a pooler: the new connection is not told apart by the server pid');
      }
    } finally {
      pgProxy.set('pass');
      await ownApp.close();
      await own.close();
    }
  });

  test('with PostgreSQL silent on open connections, every customer call answers 503 service_unavailable with Retry-After, not 500', async () => {
    // Shorter client timeouts than the service's two seconds, so the test waits under a second per call.
    const pgUrl = throughProxy();
    const db = openPostgres(pgUrl, { max: 10, statementTimeoutMs: 500, queryTimeoutMs: 800 });
    const config = loadConfig({ DATABASE_URL: pgUrl, APP_SECRET: 'f'.repeat(40) });
    const silentServices = await openServices(config, createLogger({ level: 'silent' }), {
      db,
      secret: 'f'.repeat(40),
      counters: new MemoryCounterStore(),
      hasher: createArgon2Hasher(testArgon2),
      manualDispatch: true,
    });
    const silentApp = await buildApp(silentServices);
    try {
      await silentApp.ready();
      // Open ten connections and leave them idle in the pool: the calls below find them there.
      await Promise.all(Array.from({ length: 10 }, () => db.query('SELECT pg_sleep(0.05)')));
      pgProxy.set('freeze');
      // resend and forgot do their work behind the answer: only the store gate reads the
      // database before it, when its cached store context is due for a refresh.
      silentServices.store.invalidate();
      const identity = 'ada@example.com';
      const calls = {
        login: { method: 'POST', url: '/login', payload: { identity, password: 'whatever1' } },
        register: { method: 'POST', url: '/register', payload: registration() },
        verify: { method: 'POST', url: '/verify', payload: { identity, code: '123456' } },
        resend: { method: 'POST', url: '/verification/resend', payload: { identity } },
        forgot: { method: 'POST', url: '/password/forgot', payload: { identity } },
        reset: {
          method: 'POST',
          url: '/password/reset',
          payload: {
            identity,
            code: '123456',
            password: 'brand new words 9',
            password_confirmation: 'brand new words 9',
          },
        },
        logout: { method: 'POST', url: '/logout', cookie: 'storefront_session=abc' },
        session: { method: 'GET', url: '/session', cookie: 'storefront_session=abc' },
      } as const;
      const answers = await Promise.all(
        Object.entries(calls).map(async ([name, call]) => {
          const response = await silentApp.inject({
            method: call.method,
            url: `/api/v1/customer/auth${call.url}`,
            headers: 'cookie' in call ? { cookie: call.cookie } : {},
            ...('payload' in call ? { payload: call.payload } : {}),
          });
          return {
            name,
            status: response.statusCode,
            code: response.json().code,
            retryAfter: response.headers['retry-after'],
          };
        }),
      );
      for (const answer of answers) {
        assert.deepEqual(
          { name: answer.name, status: answer.status, code: answer.code },
          { name: answer.name, status: 503, code: 'service_unavailable' },
        );
        assert.ok(Number(answer.retryAfter) > 0, `${answer.name} carries Retry-After`);
      }
    } finally {
      pgProxy.set('pass');
      await silentApp.close();
      await silentServices.close();
    }
    await waitFor(async () => (await login()).statusCode === 401, 10_000);
  });
});
