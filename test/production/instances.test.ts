import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/database.js';
import { backendsBypassing, pgbouncerAdmin, testPoolerAdminVariable } from '../helpers/pgbouncer.js';
import { deleteKeys, requireRedis, testKeyPrefix, testRedisUrl } from '../helpers/redis.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

const auth = '/api/v1/customer/auth';
/** Set when the run goes through PgBouncer (npm run test:pgbouncer). */
const poolerAdminUrl = process.env[testPoolerAdminVariable];

async function post(base: string, path: string, body: unknown, cookie?: string) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie === undefined ? {} : { cookie }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any>, headers: response.headers };
}

/**
 * Both passes: the database is a fresh one on DATABASE_URL's server or on the embedded server
 * `npm test` started; Redis is REDIS_URL or the machine's, under a key prefix of its own.
 */
describe('two instances on one database and one Redis', () => {
  const keyPrefix = testKeyPrefix('instances');
  let scratch: ScratchDatabase;
  let a: ServiceProcess;
  let b: ServiceProcess;

  before(async () => {
    await requireRedis();
    scratch = await createScratchDatabase('sfa_test_instances');
    const env = {
      DATABASE_URL: scratch.url,
      REDIS_URL: testRedisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      APP_SECRET: 'i'.repeat(40),
      // The any-call test below names its own client address.
      TRUST_PROXY: 'true',
    };
    // Started one after the other: the second start also proves migrations are safe to rerun.
    a = await startService(env);
    b = await startService(env);
  });

  after(async () => {
    const started = [a, b].filter((instance) => instance !== undefined);
    const codes = await Promise.all(started.map((instance) => instance.stop()));
    // Only a started instance wrote keys; before that, Redis may be the very thing missing.
    if (started.length > 0) await deleteKeys(keyPrefix);
    await scratch?.drop();
    assert.deepEqual(codes, Array(started.length).fill(0), 'every instance shuts down cleanly on SIGTERM');
  });

  test('a session made through one instance is used and ended through the other', async () => {
    const registered = await post(a.url, `${auth}/register`, {
      name: 'Grace Hopper',
      email: 'grace@example.com',
      password: 'compiler cobol 1959',
      password_confirmation: 'compiler cobol 1959',
    });
    assert.equal(registered.status, 201);
    const loggedIn = await post(a.url, `${auth}/login`, {
      identity: 'grace@example.com',
      password: 'compiler cobol 1959',
    });
    assert.equal(loggedIn.status, 200);
    const cookie = loggedIn.headers.get('set-cookie')!.split(';')[0]!;
    assert.match(cookie, /^storefront_session=/);

    const loggedOut = await post(b.url, `${auth}/logout`, undefined, cookie);
    assert.equal(loggedOut.status, 200);
    assert.equal(loggedOut.body['status'], 'signed_out');
    const again = await post(a.url, `${auth}/logout`, undefined, cookie);
    assert.equal(again.status, 401, 'the session ended through B is gone for A too');
  });

  test('a rate limit reached through one instance holds on the other', async () => {
    const first = await post(a.url, `${auth}/password/forgot`, { identity: 'shared-limit@example.com' });
    assert.equal(first.status, 202);
    const second = await post(b.url, `${auth}/password/forgot`, { identity: 'shared-limit@example.com' });
    assert.equal(second.status, 429);
    assert.equal(second.body['code'], 'rate_limited');
  });

  test('the any-call limit is shared: 200 calls through A, then 200 through B, and 300 to 305 of them pass', async () => {
    const calls = async (base: string) => {
      let passed = 0;
      for (let i = 0; i < 200; i += 1) {
        const response = await fetch(`${base}/api/v1/platform`, { headers: { 'x-forwarded-for': '198.51.100.77' } });
        await response.arrayBuffer();
        if (response.status === 200) passed += 1;
        else assert.equal(response.status, 429);
      }
      return passed;
    };
    assert.equal(await calls(a.url), 200);
    // B counts its first calls before its first batch brings back A's 200: up to one batch (3)
    // more per instance than the limit, the bound docs/reference/rate-limits.md states. Unshared, B would pass 200.
    const throughB = await calls(b.url);
    assert.ok(throughB >= 100 && throughB <= 105, `B let ${throughB} calls through`);
  });

  test('registering one identity through both instances at once creates one account', async () => {
    const body = {
      name: 'Twin',
      email: 'twin@example.com',
      password: 'parallel worlds 22',
      password_confirmation: 'parallel worlds 22',
    };
    const answers = await Promise.all([post(a.url, `${auth}/register`, body), post(b.url, `${auth}/register`, body)]);
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 422]);
    assert.equal(answers.find((answer) => answer.status === 422)!.body['code'], 'identity_unavailable');
  });

  // Only the PgBouncer pass (npm run test:pgbouncer) has a pooler to ask, and it adds this test.
  if (poolerAdminUrl !== undefined)
    test('behind PgBouncer, both instances reach the database through the pooler and nothing bypasses it', async () => {
      // A read through each instance, so each holds a pooled connection.
      for (const instance of [a, b]) {
        const refused = await post(instance.url, `${auth}/login`, {
          identity: 'nobody@example.com',
          password: 'not a password 1',
        });
        assert.equal(refused.status, 401);
      }
      const clients = await pgbouncerAdmin<{ database: string; application_name: string }>(
        poolerAdminUrl,
        'SHOW CLIENTS',
      );
      const services = clients.filter(
        (client) => client.database === scratch.name && client.application_name === 'storefront-auth',
      );
      assert.ok(services.length >= 2, `${services.length} service connections on the pooler`);
      const { seen, bypassing } = await backendsBypassing(poolerAdminUrl, scratch.directUrl, scratch.name);
      assert.ok(seen.length > 0, 'the pooler keeps server connections to the database');
      assert.deepEqual(bypassing, [], 'backends on the database that PgBouncer did not open');
    });
});
