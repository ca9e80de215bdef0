import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { hashSessionId } from '../../src/auth/tables/sessions.js';
import { MemoryCounterStore } from '../../src/storage/counters.js';
import { api, auth, useHarness, registration, type TestApp } from '../helpers/harness.js';
import { otherThan } from '../helpers/assertions.js';
import { auditRows } from '../helpers/audit.js';
import { counterKey, limits } from '../../src/http/core/rate-limit.js';
import { firstStoreId } from '../../src/store/store.js';

/**
 * Spoofing and step skipping: a client that lies about its address, rotates addresses inside
 * one IPv6 /64, forges cookies, or calls a later step of a flow without the earlier one.
 */

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: any;
  cookies: Array<{ name: string; value: string }>;
}

async function send(
  t: TestApp,
  url: string,
  body: unknown,
  {
    address = '127.0.0.1',
    headers = {},
    method,
  }: { address?: string; headers?: Record<string, string>; method?: 'GET' | 'POST' } = {},
): Promise<Answer> {
  const response = await t.app.inject({
    method: method ?? (body === undefined ? 'GET' : 'POST'),
    url,
    remoteAddress: address,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  const type = String(response.headers['content-type'] ?? '');
  return {
    status: response.statusCode,
    headers: response.headers,
    body: type.includes('json') ? response.json() : response.body,
    cookies: response.cookies,
  };
}

const register = (t: TestApp, i: number, options: Parameters<typeof send>[3] = {}) =>
  send(t, `${auth}/register`, registration({ email: `person${i}@example.com` }), options);

function assertRateLimited(answer: Answer, limit: number): void {
  assert.equal(answer.status, 429, JSON.stringify(answer.body));
  assert.equal(answer.body.code, 'rate_limited');
  assert.equal(answer.headers['ratelimit-limit'], String(limit));
}

function assertProblem(answer: Answer, status: number, code: string, where = ''): void {
  assert.equal(answer.status, status, `${where} ${JSON.stringify(answer.body)}`);
  assert.equal(answer.body.code, code, where);
}

/** How far the register limit has counted for a client key (white-box: the limiter's key layout). */
async function registerCount(t: TestApp, clientKey: string): Promise<number> {
  const key = counterKey(t.services.keys.counters, limits.registrations, clientKey, firstStoreId);
  return (await t.services.counters.peek(key, t.clock.now().getTime())).count;
}

/** The client addresses the audit events of one kind recorded, oldest first. */
async function auditAddresses(t: TestApp, event: string): Promise<Array<string | null>> {
  return (await auditRows(t, event)).map((row) => row.client_address);
}

describe('spoofing and step skipping', () => {
  const harness = useHarness();

  describe('the client address without a trusted proxy', () => {
    test('forged X-Forwarded-For, X-Real-IP and Forwarded headers do not escape the register limit and are not recorded', async () => {
      const t = await harness.start();
      for (let i = 0; i < 20; i += 1) {
        const forged = {
          'x-forwarded-for': `198.51.100.${i + 1}`,
          'x-real-ip': `203.0.113.${i + 1}`,
          forwarded: `for=192.0.2.${i + 1}`,
        };
        assert.equal(
          (await register(t, i, { address: '10.0.0.1', headers: forged })).status,
          201,
          `registration ${i + 1}`,
        );
      }
      const forged = {
        'x-forwarded-for': '198.51.100.250',
        'x-real-ip': '203.0.113.250',
        forwarded: 'for=192.0.2.250',
      };
      assertRateLimited(await register(t, 20, { address: '10.0.0.1', headers: forged }), 20);
      assert.equal(await registerCount(t, '10.0.0.1'), 21);
      assert.equal(await registerCount(t, '198.51.100.1'), 0);
      const addresses = await auditAddresses(t, 'customer.registered');
      assert.equal(addresses.length, 20);
      assert.deepEqual([...new Set(addresses)], ['10.0.0.1'], 'the socket address is recorded');
    });
  });

  describe('the client address behind a trusted proxy', () => {
    test('is the address the proxy appended, the rightmost X-Forwarded-For entry, not what the client wrote before it', async () => {
      const t = await harness.start({ env: { TRUST_PROXY: 'true' } });
      const reply = await register(t, 0, {
        address: '10.0.0.1',
        headers: { 'x-forwarded-for': '203.0.113.9, 198.51.100.7' },
      });
      assert.equal(reply.status, 201);
      assert.deepEqual(await auditAddresses(t, 'customer.registered'), ['198.51.100.7']);
      assert.equal(await registerCount(t, '198.51.100.7'), 1, 'counted under the proxy-appended address');
      assert.equal(await registerCount(t, '203.0.113.9'), 0, 'not under the client-written one');
      assert.equal(await registerCount(t, '10.0.0.1'), 0, 'not under the proxy itself');
    });

    test('rotating the client-written leftmost entries does not escape the register limit; another real client is not held back', async () => {
      const t = await harness.start({ env: { TRUST_PROXY: 'true' } });
      for (let i = 0; i < 20; i += 1) {
        const headers = { 'x-forwarded-for': `203.0.113.${i + 1}, 192.0.2.${i + 1}, 198.51.100.7` };
        assert.equal((await register(t, i, { address: '10.0.0.1', headers })).status, 201, `registration ${i + 1}`);
      }
      const rotated = { 'x-forwarded-for': '203.0.113.250, 198.51.100.7' };
      assertRateLimited(await register(t, 20, { address: '10.0.0.1', headers: rotated }), 20);
      const other = await register(t, 21, { address: '10.0.0.1', headers: { 'x-forwarded-for': '198.51.100.8' } });
      assert.equal(other.status, 201, 'a different client behind the same proxy');
    });

    test('without X-Forwarded-For the socket address is the client', async () => {
      const t = await harness.start({ env: { TRUST_PROXY: 'true' } });
      assert.equal((await register(t, 0, { address: '10.0.0.3' })).status, 201);
      assert.deepEqual(await auditAddresses(t, 'customer.registered'), ['10.0.0.3']);
    });
  });

  describe('IPv6 clients', () => {
    test('addresses in one /64 share a limit, in every spelling, and the next /64 does not', async () => {
      const t = await harness.start();
      const sameNetwork = [
        '2001:db8:1:2::1',
        '2001:db8:1:2::ffff',
        '2001:0db8:0001:0002:0000:0000:0000:0001',
        '2001:DB8:1:2:abcd:ef01:2345:6789',
      ];
      for (let i = 0; i < 20; i += 1) {
        const address = sameNetwork[i % sameNetwork.length]!;
        assert.equal((await register(t, i, { address })).status, 201, `registration ${i + 1} from ${address}`);
      }
      assertRateLimited(await register(t, 20, { address: '2001:db8:1:2::ffff' }), 20);
      assertRateLimited(await register(t, 21, { address: '2001:db8:1:2:ffff:ffff:ffff:ffff' }), 20);
      assert.equal(
        (await register(t, 22, { address: '2001:db8:1:3::1' })).status,
        201,
        'the next /64 is another client',
      );
      assert.equal(
        (await register(t, 23, { address: '2001:db8:1:1:ffff:ffff:ffff:ffff' })).status,
        201,
        'the previous /64 too',
      );
    });

    test('behind a trusted proxy, forwarded IPv6 clients in one /64 share a limit', async () => {
      const t = await harness.start({ env: { TRUST_PROXY: 'true' } });
      for (let i = 0; i < 20; i += 1) {
        const headers = { 'x-forwarded-for': `2001:db8:9:9::${(i + 1).toString(16)}` };
        assert.equal((await register(t, i, { address: '10.0.0.1', headers })).status, 201);
      }
      assertRateLimited(
        await register(t, 20, { address: '10.0.0.1', headers: { 'x-forwarded-for': '2001:db8:9:9:1:2:3:4' } }),
        20,
      );
      assert.equal(
        (await register(t, 21, { address: '10.0.0.1', headers: { 'x-forwarded-for': '2001:db8:9:a::1' } })).status,
        201,
      );
    });

    test('an IPv4-mapped IPv6 address counts as its IPv4 address', async () => {
      const t = await harness.start();
      for (let i = 0; i < 20; i += 1) {
        const address = i % 2 === 0 ? '10.9.9.9' : '::ffff:10.9.9.9';
        assert.equal((await register(t, i, { address })).status, 201);
      }
      assertRateLimited(await register(t, 20, { address: '::ffff:10.9.9.9' }), 20);
    });
  });

  describe('counters under a flood of other keys', () => {
    test('a full in-process counter store does not forget the failed logins of an identity under attack', async () => {
      // The embedded default (and the fallback while Redis is away) keeps counters in bounded memory.
      const t = await harness.start({ overrides: { counters: new MemoryCounterStore(200) } });
      assert.equal((await send(t, `${auth}/register`, registration())).status, 201);
      for (let i = 0; i < 10; i += 1) {
        const reply = await send(
          t,
          `${auth}/login`,
          { identity: 'ada@example.com', password: `wrong engine ${i}` },
          { address: `10.7.0.${i + 1}` },
        );
        assert.equal(reply.status, 401, `failure ${i + 1}`);
      }
      // The attacker makes many fresh counters: resend calls for made-up identities from many addresses.
      for (let i = 0; i < 150; i += 1) {
        const reply = await send(
          t,
          `${auth}/verification/resend`,
          { identity: `flood${i}@example.com` },
          { address: `10.8.${i >> 8}.${i & 255}` },
        );
        assert.equal(reply.status, 202);
      }
      const guess = await send(
        t,
        `${auth}/login`,
        { identity: 'ada@example.com', password: 'wrong engine 10' },
        { address: '10.7.1.1' },
      );
      assertRateLimited(guess, 10);
    });
  });

  describe('skipping steps', () => {
    test('a password cannot be reset without the reset code sent for that account', async () => {
      const t = await harness.start();
      const ada = await send(t, `${auth}/register`, registration());
      assert.equal(ada.status, 201);
      const verification = await t.codeFor('ada@example.com', 'verification');
      assert.equal((await send(t, `${auth}/register`, registration({ email: 'grace@example.com' }))).status, 201);
      assert.equal((await send(t, `${auth}/password/forgot`, { identity: 'grace@example.com' })).status, 202);
      const gracesReset = await t.codeFor('grace@example.com', 'password_reset');
      const newPassword = 'difference engine 1822';
      const reset = (code: unknown, omit = false) =>
        send(t, `${auth}/password/reset`, {
          identity: 'ada@example.com',
          ...(omit ? {} : { code }),
          password: newPassword,
          password_confirmation: newPassword,
        });

      assertProblem(await reset(undefined, true), 422, 'validation_failed', 'no code');
      for (const code of [null, '', 123456, ['123456'], { $ne: '' }, true, '12345', '1234567', '12345 ']) {
        assertProblem(await reset(code), 422, 'validation_failed', JSON.stringify(code));
      }
      for (const [label, code] of [
        ['an all-zero code', '000000'],
        ["the account's verification code", verification],
        ["another customer's reset code", gracesReset],
      ] as const) {
        assertProblem(await reset(code), 422, 'invalid_identity_challenge', label);
      }
      const login = await send(t, `${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
      assert.equal(login.status, 200, 'the password stands');
      const notChanged = await t.db.query(`SELECT 1 FROM outbox WHERE purpose = 'password_changed'`);
      assert.equal(notChanged.length, 0);
      const grace = await send(t, `${auth}/password/reset`, {
        identity: 'grace@example.com',
        code: gracesReset,
        password: newPassword,
        password_confirmation: newPassword,
      });
      assert.equal(grace.status, 200, "grace's code was untouched by the attempts on ada");
    });

    test('an identity cannot be verified without the verification code sent for it', async () => {
      const t = await harness.start();
      assert.equal((await send(t, `${auth}/register`, registration())).status, 201);
      const adasCode = await t.codeFor('ada@example.com', 'verification');
      assert.equal((await send(t, `${auth}/register`, registration({ email: 'grace@example.com' }))).status, 201);
      const gracesCode = await t.codeFor('grace@example.com', 'verification');
      assert.equal((await send(t, `${auth}/password/forgot`, { identity: 'grace@example.com' })).status, 202);
      const gracesReset = await t.codeFor('grace@example.com', 'password_reset');
      const verify = (code: unknown, omit = false) =>
        send(t, `${auth}/verify`, { identity: 'grace@example.com', ...(omit ? {} : { code }) });

      assertProblem(await verify(undefined, true), 422, 'validation_failed', 'no code');
      for (const code of [null, '', 123456, [gracesCode], { $gt: '' }, false]) {
        assertProblem(await verify(code), 422, 'validation_failed', JSON.stringify(code));
      }
      for (const [label, code] of [
        ["another customer's verification code", adasCode === gracesCode ? otherThan(adasCode) : adasCode],
        ["the account's reset code", gracesReset === gracesCode ? otherThan(gracesReset) : gracesReset],
      ] as const) {
        assertProblem(await verify(code), 422, 'invalid_identity_challenge', label);
      }
      const [row] = await t.db.query<{ verified_at: Date | null }>(
        `SELECT verified_at FROM customers WHERE identity_value = 'grace@example.com'`,
      );
      assert.equal(row?.verified_at, null);
      assert.equal((await verify(gracesCode)).status, 200, 'the real code still works');
    });

    test('no session is reached without login: no cookie and forged cookies answer 401, the real one 200', async () => {
      const t = await harness.start();
      assert.equal((await send(t, `${auth}/register`, registration())).status, 201);
      const login = await send(t, `${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
      assert.equal(login.status, 200);
      const real = login.cookies.find((c) => c.name === 'storefront_session')!.value;
      const xsrf = login.cookies.find((c) => c.name === 'XSRF-TOKEN')!.value;
      const flipped = `${real.slice(0, -1)}${real.endsWith('A') ? 'B' : 'A'}`;

      const session = (cookie?: string) =>
        send(t, `${auth}/session`, undefined, cookie === undefined ? {} : { headers: { cookie } });
      assertProblem(await session(), 401, 'unauthenticated', 'no cookie');
      const forged: Array<[string, string]> = [
        ['an empty value', 'storefront_session='],
        ['43 times A', `storefront_session=${'A'.repeat(43)}`],
        ['fresh random bytes', `storefront_session=${randomBytes(32).toString('base64url')}`],
        ['random hex', `storefront_session=${randomBytes(32).toString('hex')}`],
        ['the stored hash of the real id', `storefront_session=${hashSessionId(real)}`],
        ['the XSRF token', `storefront_session=${xsrf}`],
        ['the real id with one character changed', `storefront_session=${flipped}`],
        ['the real id with a suffix', `storefront_session=${real}x`],
        ['the real id truncated', `storefront_session=${real.slice(0, 42)}`],
        ['the real id in standard base64', `storefront_session=${Buffer.from(real, 'base64url').toString('base64')}`],
        [
          'the real id under another cookie name',
          `STOREFRONT_SESSION=${real}; __Host-storefront_session=${real}; session=${real}`,
        ],
        ['an SQL injection', `storefront_session=${encodeURIComponent("' OR '1'='1")}`],
        ['an operator object', `storefront_session=${encodeURIComponent('{"$ne":null}')}`],
        ['a 4,000-character value', `storefront_session=${'A'.repeat(4000)}`],
        ['a broken percent-encoding', 'storefront_session=%E0%A4%A'],
      ];
      for (const [label, cookie] of forged) assertProblem(await session(cookie), 401, 'unauthenticated', label);
      assert.equal((await session(`storefront_session=${real}`)).status, 200, 'the real cookie opens the session');

      assert.equal(
        (
          await send(t, `${auth}/logout`, undefined, {
            method: 'POST',
            headers: { cookie: `storefront_session=${real}` },
          })
        ).status,
        200,
      );
      assertProblem(await session(`storefront_session=${real}`), 401, 'unauthenticated', 'after logout');
    });

    test('register, verify, forgot and reset set no cookie that opens a session', async () => {
      const t = await harness.start();
      let seen = 0;
      /** Right after each step (a reset would end any session it opened): no session row, and no cookie it set opens one. */
      const check = async (step: string, answer: Answer, status: number) => {
        assert.equal(answer.status, status, `${step}: ${JSON.stringify(answer.body)}`);
        const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
        assert.equal(sessions?.n, 0, `${step} opened a session`);
        for (const cookie of answer.cookies) {
          seen += 1;
          assert.doesNotMatch(cookie.name, /session/i, `${step} set a session cookie`);
          const cookies = `storefront_session=${cookie.value}; ${cookie.name}=${cookie.value}`;
          assertProblem(
            await send(t, `${auth}/session`, undefined, { headers: { cookie: cookies } }),
            401,
            'unauthenticated',
            `${step}: ${cookie.name}`,
          );
        }
      };
      await check('csrf-cookie', await send(t, `${api}/csrf-cookie`, undefined), 204);
      await check('register', await send(t, `${auth}/register`, registration()), 201);
      const code = await t.codeFor('ada@example.com', 'verification');
      await check('verify', await send(t, `${auth}/verify`, { identity: 'ada@example.com', code }), 200);
      await check('resend', await send(t, `${auth}/verification/resend`, { identity: 'ada@example.com' }), 202);
      await check('forgot', await send(t, `${auth}/password/forgot`, { identity: 'ada@example.com' }), 202);
      const reset = await t.codeFor('ada@example.com', 'password_reset');
      const password = 'difference engine 1822';
      await check(
        'reset',
        await send(t, `${auth}/password/reset`, {
          identity: 'ada@example.com',
          code: reset,
          password,
          password_confirmation: password,
        }),
        200,
      );
      assert.ok(seen > 0, 'the CSRF cookie at least was tried');
    });
  });
});
