import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  api,
  auth,
  registeredCustomer,
  registration,
  type HarnessOptions,
  type TestApp,
  useHarness,
} from '../../helpers/harness.js';

const minute = 60;
const hour = 60 * minute;
const otherAddress = '10.0.0.2';

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: any;
}

/** A request from a chosen client address (t.post always comes from 127.0.0.1). */
async function from(t: TestApp, address: string, method: 'GET' | 'POST', url: string, body?: unknown): Promise<Answer> {
  const response = await t.app.inject({
    method,
    url,
    remoteAddress: address,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) }),
  });
  const type = String(response.headers['content-type'] ?? '');
  return {
    status: response.statusCode,
    headers: response.headers,
    body: type.includes('json') ? response.json() : response.body,
  };
}

function seconds(value: unknown, header: string): number {
  assert.equal(typeof value, 'string', `${header} is present`);
  assert.match(value as string, /^\d+$/, `${header} is a whole number of seconds`);
  return Number(value);
}

/** 429 rate_limited with the headers of docs/reference/rate-limits.md (for `limit`, or any of several); returns Retry-After. */
function assertRateLimited(reply: Answer, limit: number | number[], windowSeconds: number): number {
  assert.equal(reply.status, 429, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'rate_limited');
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/);
  const retryAfter = seconds(reply.headers['retry-after'], 'Retry-After');
  assert.ok(retryAfter >= 1 && retryAfter <= windowSeconds, `Retry-After ${retryAfter} within 1..${windowSeconds}`);
  const limits = (Array.isArray(limit) ? limit : [limit]).map(String);
  assert.ok(
    limits.includes(String(reply.headers['ratelimit-limit'])),
    `RateLimit-Limit ${String(reply.headers['ratelimit-limit'])}`,
  );
  assert.equal(reply.headers['ratelimit-remaining'], '0');
  const reset = seconds(reply.headers['ratelimit-reset'], 'RateLimit-Reset');
  assert.ok(reset >= 1 && reset <= windowSeconds, `RateLimit-Reset ${reset} within 1..${windowSeconds}`);
  return retryAfter;
}

const forgot = (t: TestApp, identity: string) => t.post(`${auth}/password/forgot`, { identity });
const resend = (t: TestApp, identity: string) => t.post(`${auth}/verification/resend`, { identity });
const login = (t: TestApp, identity: string, password: string) => t.post(`${auth}/login`, { identity, password });

/**
 * docs/reference/rate-limits.md, through the HTTP API. Run by rate-limits.test.ts on the run's
 * counters (memory, or Redis with REDIS_URL) and by rate-limits-cluster.test.ts on a Redis Cluster.
 */
export function rateLimitSuite(name: string, harnessOptions: HarnessOptions = {}): void {
  describe(name, () => {
    const harness = useHarness(harnessOptions);

    describe('resend and forgot per identity', () => {
      test('answers 429 on the second forgot-password call for one identity within a minute', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        await t.deliver();
        assert.equal((await forgot(t, customer.identity)).status, 202);
        t.clock.advance(30);
        const retryAfter = assertRateLimited(await forgot(t, customer.identity), 1, minute);
        assert.ok(retryAfter <= 30, `Retry-After ${retryAfter} counts from the first call`);
        const sent = await t.deliver();
        assert.equal(sent.filter((m) => m.purpose === 'password_reset').length, 1, 'the limited call sends nothing');
      });

      test('answers 429 on the second resend within a minute, also for an identity with no account', async () => {
        const t = await harness.start();
        assert.equal((await resend(t, 'nobody@example.com')).status, 202);
        assertRateLimited(await resend(t, 'nobody@example.com'), 1, minute);
        assert.equal((await forgot(t, 'nobody@example.com')).status, 202);
        assertRateLimited(await forgot(t, 'nobody@example.com'), 1, minute);
      });

      test('lets the next call through once the minute has passed', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        assert.equal((await resend(t, customer.identity)).status, 202);
        t.clock.advance(minute - 1);
        assertRateLimited(await resend(t, customer.identity), 1, minute);
        t.clock.advance(1);
        assert.equal((await resend(t, customer.identity)).status, 202);
      });

      test('does not hold back a different identity', async () => {
        const t = await harness.start();
        assert.equal((await forgot(t, 'ada@example.com')).status, 202);
        assert.equal((await forgot(t, 'grace@example.com')).status, 202);
      });

      test('answers 429 on the sixth call for one identity within an hour', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        await t.deliver();
        let sent = 0;
        for (let i = 0; i < 5; i += 1) {
          assert.equal((await forgot(t, customer.identity)).status, 202, `call ${i + 1}`);
          sent += (await t.deliver()).length;
          t.clock.advance(minute + 1);
        }
        assert.equal(sent, 5);
        const retryAfter = assertRateLimited(await forgot(t, customer.identity), 5, hour);
        assert.ok(retryAfter > minute, `Retry-After ${retryAfter} points at the end of the hour`);
        assert.deepEqual(await t.deliver(), [], 'the limited call sends nothing');
        t.clock.advance(retryAfter);
        assert.equal((await forgot(t, customer.identity)).status, 202);
      });

      test('answers 429 on the 21st resend or forgot call from one address within an hour', async () => {
        const t = await harness.start();
        for (let i = 0; i < 20; i += 1) {
          const call = i % 2 === 0 ? forgot : resend;
          assert.equal((await call(t, `person${i}@example.com`)).status, 202, `call ${i + 1}`);
        }
        assertRateLimited(await forgot(t, 'person20@example.com'), 20, hour);
        const elsewhere = await from(t, otherAddress, 'POST', `${auth}/password/forgot`, {
          identity: 'person21@example.com',
        });
        assert.equal(elsewhere.status, 202);
      });

      test('a burst of 20 parallel forgot calls for one identity lets exactly one through', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        await t.deliver();
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            from(t, `10.2.0.${i + 1}`, 'POST', `${auth}/password/forgot`, { identity: customer.identity }),
          ),
        );
        assert.equal(replies.filter((r) => r.status === 202).length, 1, replies.map((r) => r.status).join(','));
        // Over both the minute and the hour limit: either may be the one reported.
        for (const reply of replies.filter((r) => r.status !== 202)) assertRateLimited(reply, [1, 5], hour);
        assert.equal((await t.deliver()).length, 1);
      });
    });

    describe('login', () => {
      test('answers 429 on the 21st login attempt from one address within a minute', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        for (let i = 0; i < 20; i += 1) {
          assert.equal(
            (await login(t, `person${i}@example.com`, 'analytical engine 1843')).status,
            401,
            `attempt ${i + 1}`,
          );
        }
        assertRateLimited(await login(t, customer.identity, customer.password), 20, minute);
        const elsewhere = await from(t, otherAddress, 'POST', `${auth}/login`, {
          identity: customer.identity,
          password: customer.password,
        });
        assert.equal(elsewhere.status, 200);
        t.clock.advance(minute);
        assert.equal((await login(t, customer.identity, customer.password)).status, 200);
      });

      test('answers 429 on the 11th login for an identity after 10 failures, even with the right password', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        for (let i = 0; i < 10; i += 1) {
          // Case variants of one identity count as one.
          const identity = i % 2 === 0 ? customer.identity : customer.identity.toUpperCase();
          assert.equal((await login(t, identity, `wrong engine ${i}`)).status, 401, `failure ${i + 1}`);
        }
        assertRateLimited(await login(t, customer.identity, customer.password), 10, 15 * minute);
        const elsewhere = await from(t, otherAddress, 'POST', `${auth}/login`, {
          identity: customer.identity,
          password: customer.password,
        });
        assertRateLimited(elsewhere, 10, 15 * minute);
        assert.equal(
          (await login(t, 'grace@example.com', 'anything 1')).status,
          401,
          'other identities are not held back',
        );
        t.clock.advance(15 * minute);
        assert.equal((await login(t, customer.identity, customer.password)).status, 200);
      });

      test('forgives the failed logins of an identity after a successful login', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        for (let round = 0; round < 2; round += 1) {
          for (let i = 0; i < 9; i += 1)
            assert.equal((await login(t, customer.identity, `wrong engine ${i}`)).status, 401);
          assert.equal((await login(t, customer.identity, customer.password)).status, 200, `round ${round + 1}`);
          t.clock.advance(minute);
        }
        assert.equal((await login(t, customer.identity, 'wrong engine again')).status, 401);
      });

      test('a burst of 20 parallel logins at 19 attempts lets exactly one through', async () => {
        const t = await harness.start();
        for (let i = 0; i < 19; i += 1)
          assert.equal((await login(t, `person${i}@example.com`, 'any engine 1')).status, 401);
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) => login(t, `burst${i}@example.com`, 'any engine 1')),
        );
        assert.equal(replies.filter((r) => r.status === 401).length, 1, replies.map((r) => r.status).join(','));
        for (const reply of replies.filter((r) => r.status !== 401)) assertRateLimited(reply, 20, minute);
      });
    });

    describe('client address', () => {
      test('ignores X-Forwarded-For unless a proxy is trusted', async () => {
        const t = await harness.start();
        for (let i = 0; i < 20; i += 1) {
          const reply = await t.post(
            `${auth}/login`,
            { identity: `person${i}@example.com`, password: 'any engine 1' },
            { 'x-forwarded-for': `198.51.100.${i + 1}` },
          );
          assert.equal(reply.status, 401);
        }
        const spoofed = await t.post(
          `${auth}/login`,
          { identity: 'person20@example.com', password: 'any engine 1' },
          { 'x-forwarded-for': '198.51.100.99' },
        );
        assertRateLimited(spoofed, 20, minute);
      });

      test('counts each forwarded address separately behind a trusted proxy', async () => {
        const t = await harness.start({ env: { TRUST_PROXY: 'true' } });
        for (let i = 0; i < 20; i += 1) {
          const reply = await t.post(
            `${auth}/login`,
            { identity: `person${i}@example.com`, password: 'any engine 1' },
            { 'x-forwarded-for': '198.51.100.1' },
          );
          assert.equal(reply.status, 401);
        }
        const sameClient = await t.post(
          `${auth}/login`,
          { identity: 'person20@example.com', password: 'any engine 1' },
          { 'x-forwarded-for': '198.51.100.1' },
        );
        assertRateLimited(sameClient, 20, minute);
        const otherClient = await t.post(
          `${auth}/login`,
          { identity: 'person21@example.com', password: 'any engine 1' },
          { 'x-forwarded-for': '198.51.100.2' },
        );
        assert.equal(otherClient.status, 401);
      });
    });

    describe('register', () => {
      test('answers 429 on the 21st registration from one address within an hour', async () => {
        const t = await harness.start();
        for (let i = 0; i < 20; i += 1) {
          assert.equal(
            (await t.post(`${auth}/register`, registration({ email: `person${i}@example.com` }))).status,
            201,
          );
        }
        assertRateLimited(await t.post(`${auth}/register`, registration({ email: 'person20@example.com' })), 20, hour);
        const elsewhere = await from(
          t,
          otherAddress,
          'POST',
          `${auth}/register`,
          registration({ email: 'person21@example.com' }),
        );
        assert.equal(elsewhere.status, 201);
        t.clock.advance(hour);
        assert.equal((await t.post(`${auth}/register`, registration({ email: 'person20@example.com' }))).status, 201);
      });

      test('a burst of 20 parallel registrations at 19 lets exactly one through', async () => {
        const t = await harness.start();
        for (let i = 0; i < 19; i += 1) {
          assert.equal(
            (await t.post(`${auth}/register`, registration({ email: `person${i}@example.com` }))).status,
            201,
          );
        }
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            t.post(`${auth}/register`, registration({ email: `burst${i}@example.com` })),
          ),
        );
        assert.equal(replies.filter((r) => r.status === 201).length, 1, replies.map((r) => r.status).join(','));
        for (const reply of replies.filter((r) => r.status !== 201)) assertRateLimited(reply, 20, hour);
        const [customers] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers');
        assert.equal(customers?.n, 20);
      });
    });

    describe('verify and reset attempts', () => {
      test('answers 429 on the 31st verify or reset attempt from one address within ten minutes', async () => {
        const t = await harness.start();
        for (let i = 0; i < 15; i += 1) {
          const verify = await t.post(`${auth}/verify`, { identity: `person${i}@example.com`, code: '123456' });
          assert.equal(verify.status, 422);
          const reset = await t.post(`${auth}/password/reset`, {
            identity: `person${i}@example.com`,
            code: '123456',
            password: 'difference engine 1822',
            password_confirmation: 'difference engine 1822',
          });
          assert.equal(reset.status, 422);
        }
        assertRateLimited(
          await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: '123456' }),
          30,
          10 * minute,
        );
        const reset = await t.post(`${auth}/password/reset`, {
          identity: 'ada@example.com',
          code: '123456',
          password: 'difference engine 1822',
          password_confirmation: 'difference engine 1822',
        });
        assertRateLimited(reset, 30, 10 * minute);
        const elsewhere = await from(t, otherAddress, 'POST', `${auth}/verify`, {
          identity: 'ada@example.com',
          code: '123456',
        });
        assert.equal(elsewhere.body.code, 'invalid_identity_challenge');
        t.clock.advance(10 * minute);
        const later = await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: '123456' });
        assert.equal(later.body.code, 'invalid_identity_challenge');
      });

      test('a limited verify does not spend an attempt on the live code', async () => {
        const t = await harness.start();
        const customer = await registeredCustomer(t);
        const code = await t.codeFor(customer.identity, 'verification');
        for (let i = 0; i < 30; i += 1) {
          assert.equal((await t.post(`${auth}/verify`, { identity: `person${i}@example.com`, code })).status, 422);
        }
        assertRateLimited(await t.post(`${auth}/verify`, { identity: customer.identity, code }), 30, 10 * minute);
        const verified = await from(t, otherAddress, 'POST', `${auth}/verify`, { identity: customer.identity, code });
        assert.equal(verified.status, 200, 'the code is still live');
      });
    });

    describe('every call', () => {
      test('answers 429 on the 301st call from one address within a minute', async () => {
        const t = await harness.start();
        for (let i = 0; i < 300; i += 1) {
          const reply = await t.get(`${api}/platform`);
          if (reply.status !== 200) assert.fail(`call ${i + 1} answered ${reply.status}`);
        }
        assertRateLimited(await t.get(`${api}/platform`), 300, minute);
        assertRateLimited(await forgot(t, 'ada@example.com'), 300, minute);
        assert.equal((await from(t, otherAddress, 'GET', `${api}/platform`)).status, 200);
        t.clock.advance(minute);
        assert.equal((await t.get(`${api}/platform`)).status, 200);
      });

      test('counts customer calls and platform calls together', async () => {
        const t = await harness.start();
        for (let i = 0; i < 150; i += 1) {
          assert.equal((await t.get(`${api}/platform`)).status, 200);
          assert.equal((await t.post(`${auth}/logout`)).status, 401);
        }
        assertRateLimited(await t.get(`${api}/platform`), 300, minute);
      });

      test('counts health probes on their own: 300 a minute per address, apart from every other call', async () => {
        const t = await harness.start();
        for (let i = 0; i < 300; i += 1) {
          const reply = await t.get(`${api}/health/${i % 2 === 0 ? 'live' : 'ready'}`);
          if (reply.status !== 200) assert.fail(`probe ${i + 1} answered ${reply.status}`);
        }
        assertRateLimited(await t.get(`${api}/health/live`), 300, minute);
        assertRateLimited(await t.get(`${api}/health/ready`), 300, minute);
        assert.equal((await from(t, otherAddress, 'GET', `${api}/health/live`)).status, 200);
        // The probes spent none of the address's allowance for everything else, nor the reverse.
        for (let i = 0; i < 300; i += 1) {
          const reply = await t.get(`${api}/platform`);
          if (reply.status !== 200) assert.fail(`call ${i + 1} after the probes answered ${reply.status}`);
        }
        assertRateLimited(await t.get(`${api}/platform`), 300, minute);
        t.clock.advance(minute);
        assert.equal((await t.get(`${api}/health/live`)).status, 200);
      });

      test('a burst of 20 parallel calls at 299 lets exactly one through', async () => {
        const t = await harness.start();
        for (let i = 0; i < 299; i += 1) {
          const reply = await t.get(`${api}/platform`);
          if (reply.status !== 200) assert.fail(`call ${i + 1} answered ${reply.status}`);
        }
        const replies = await Promise.all(Array.from({ length: 20 }, () => t.get(`${api}/platform`)));
        assert.equal(replies.filter((r) => r.status === 200).length, 1, replies.map((r) => r.status).join(','));
        for (const reply of replies.filter((r) => r.status !== 200)) assertRateLimited(reply, 300, minute);
      });
    });
  });
}
