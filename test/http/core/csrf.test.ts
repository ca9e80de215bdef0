import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { describe, test } from 'node:test';
import { issueCsrfToken } from '../../../src/http/core/csrf.js';
import { api, auth, useHarness, registeredCustomer, type Reply, type TestApp } from '../../helpers/harness.js';

const sessionCookie = 'storefront_session';

/** Every POST endpoint with a body that reaches it, and the answer the endpoint itself gives to it. */
const endpoints = [
  { path: `${auth}/register`, body: {}, status: 422, code: 'validation_failed' },
  { path: `${auth}/verify`, body: {}, status: 422, code: 'validation_failed' },
  { path: `${auth}/verification/resend`, body: {}, status: 422, code: 'validation_failed' },
  { path: `${auth}/login`, body: {}, status: 422, code: 'validation_failed' },
  { path: `${auth}/password/forgot`, body: {}, status: 422, code: 'validation_failed' },
  { path: `${auth}/password/reset`, body: {}, status: 422, code: 'validation_failed' },
  { path: `${auth}/logout`, body: undefined, status: 401, code: 'unauthenticated' },
] as const;

function assertCode(reply: Reply, status: number, code: string, where: string): void {
  assert.equal(
    reply.status,
    status,
    `${where}: expected ${status} ${code}, got ${reply.status} ${JSON.stringify(reply.body)}`,
  );
  assert.equal(reply.body.code, code, where);
}

/** Sends the request to every POST endpoint and expects `status`/`code` (or the endpoint's own answer). */
async function expectEverywhere(
  t: TestApp,
  headers: Record<string, string>,
  expected: { status: number; code: string } | 'own answer',
) {
  for (const endpoint of endpoints) {
    const reply = await t.post(endpoint.path, endpoint.body, headers);
    const want = expected === 'own answer' ? endpoint : expected;
    assertCode(reply, want.status, want.code, endpoint.path);
  }
}

function cookieOf(reply: Reply, name: string) {
  return reply.cookies.find((c) => c.name === name);
}

async function freshToken(
  t: TestApp,
  url = `${api}/csrf-cookie`,
  headers: Record<string, string> = {},
): Promise<string> {
  const reply = await t.get(url, headers);
  assert.equal(reply.status, 204);
  const cookie = cookieOf(reply, 'XSRF-TOKEN');
  assert.ok(cookie, 'XSRF-TOKEN is set');
  return cookie.value;
}

/** Browser-style headers carrying the token in both the cookie and the X-XSRF-TOKEN header. */
function withToken(token: string, extra: Record<string, string> = {}, session?: string): Record<string, string> {
  const cookies = [`XSRF-TOKEN=${token}`, ...(session === undefined ? [] : [`${sessionCookie}=${session}`])];
  return { 'sec-fetch-site': 'same-origin', cookie: cookies.join('; '), 'x-xsrf-token': token, ...extra };
}

describe('CSRF and CORS', () => {
  const harness = useHarness();

  test('a request with neither Origin nor Sec-Fetch-Site is not from a browser and gets each endpoint’s own answer', async () => {
    const t = await harness.start();
    await expectEverywhere(t, {}, 'own answer');
  });

  test('Sec-Fetch-Site cross-site from an unlisted origin is refused with 403 untrusted_origin, token or not', async () => {
    const t = await harness.start();
    const token = await freshToken(t);
    await expectEverywhere(t, withToken(token, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }), {
      status: 403,
      code: 'untrusted_origin',
    });
    await expectEverywhere(t, { 'sec-fetch-site': 'cross-site' }, { status: 403, code: 'untrusted_origin' });
  });

  test('Sec-Fetch-Site same-site from an unlisted origin is refused with 403 untrusted_origin', async () => {
    const t = await harness.start();
    const token = await freshToken(t);
    const headers = withToken(token, {
      host: 'shop.test',
      'sec-fetch-site': 'same-site',
      origin: 'https://blog.shop.test',
    });
    await expectEverywhere(t, headers, { status: 403, code: 'untrusted_origin' });
  });

  test('Origin: null is refused with 403 untrusted_origin', async () => {
    const t = await harness.start();
    const token = await freshToken(t);
    const { 'sec-fetch-site': _, ...noFetchSite } = withToken(token, { origin: 'null' });
    await expectEverywhere(t, noFetchSite, { status: 403, code: 'untrusted_origin' });
    await expectEverywhere(t, withToken(token, { origin: 'null', 'sec-fetch-site': 'cross-site' }), {
      status: 403,
      code: 'untrusted_origin',
    });
  });

  test('a foreign Origin without Sec-Fetch-Site is refused with 403 untrusted_origin', async () => {
    const t = await harness.start();
    const token = await freshToken(t);
    const { 'sec-fetch-site': _, ...headers } = withToken(token, { host: 'shop.test', origin: 'https://evil.example' });
    await expectEverywhere(t, headers, { status: 403, code: 'untrusted_origin' });
    const otherPort = { ...headers, origin: 'http://shop.test:8080' };
    await expectEverywhere(t, otherPort, { status: 403, code: 'untrusted_origin' });
  });

  test('a same-origin browser request without a token answers 419 csrf_token_mismatch', async () => {
    const t = await harness.start();
    await expectEverywhere(t, { 'sec-fetch-site': 'same-origin' }, { status: 419, code: 'csrf_token_mismatch' });
    const token = await freshToken(t);
    await expectEverywhere(
      t,
      { 'sec-fetch-site': 'same-origin', cookie: `XSRF-TOKEN=${token}` },
      { status: 419, code: 'csrf_token_mismatch' },
    );
    await expectEverywhere(
      t,
      { 'sec-fetch-site': 'same-origin', 'x-xsrf-token': token },
      { status: 419, code: 'csrf_token_mismatch' },
    );
  });

  test('the 419 goes out with the status line "419 Page Expired", a phrase Node does not know', async () => {
    const t = await harness.start();
    const { port } = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' }));
    const socket = net.connect(Number(port), '127.0.0.1');
    // Written, not ended: a client that half-closes first may be hung up on before the answer.
    socket.write(
      `POST ${auth}/logout HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nSec-Fetch-Site: same-origin\r\n` +
        'Content-Length: 0\r\nConnection: close\r\n\r\n',
    );
    let answer = '';
    for await (const chunk of socket) answer += String(chunk);
    assert.equal(answer.split('\r\n')[0], 'HTTP/1.1 419 Page Expired');
    assert.match(answer, /"code":"csrf_token_mismatch"/);
  });

  test('a token header that differs from the cookie answers 419, even when both are genuine', async () => {
    const t = await harness.start();
    const first = await freshToken(t);
    const second = await freshToken(t);
    assert.notEqual(first, second);
    await expectEverywhere(
      t,
      { ...withToken(first), 'x-xsrf-token': second },
      { status: 419, code: 'csrf_token_mismatch' },
    );
  });

  test('a forged token, equal in cookie and header but not signed by this server, answers 419', async () => {
    const t = await harness.start();
    const genuine = await freshToken(t);
    const [nonce] = genuine.split('.');
    for (const forged of [
      'forged-token',
      'nonce.mac',
      `${nonce}.${'A'.repeat(43)}`,
      `${genuine}.extra`,
      issueCsrfToken(randomBytes(32), undefined),
    ]) {
      await expectEverywhere(t, withToken(forged), { status: 419, code: 'csrf_token_mismatch' });
    }
  });

  for (const url of [`${api}/csrf-cookie`, '/sanctum/csrf-cookie']) {
    test(`GET ${url} answers 204 with a script-readable, SameSite=Lax, URL-safe XSRF-TOKEN that passes on every endpoint`, async () => {
      const t = await harness.start();
      const reply = await t.get(url);
      assert.equal(reply.status, 204);
      assert.equal(reply.raw.body, '');
      const cookie = cookieOf(reply, 'XSRF-TOKEN');
      assert.ok(cookie);
      assert.notEqual(cookie.httpOnly, true, 'scripts must read it');
      assert.equal(String(cookie.sameSite).toLowerCase(), 'lax');
      assert.equal(cookie.path, '/');
      assert.match(cookie.value, /^[A-Za-z0-9._~-]+$/);
      const raw = [reply.headers['set-cookie']].flat().find((line) => String(line).startsWith('XSRF-TOKEN='));
      assert.ok(raw);
      assert.doesNotMatch(String(raw), /httponly/i);

      await expectEverywhere(t, withToken(cookie.value), 'own answer');
      await expectEverywhere(t, withToken(cookie.value, { 'sec-fetch-site': 'none' }), 'own answer');
    });
  }

  test('an Origin whose scheme, host and port equal the request’s own passes the origin check', async () => {
    const t = await harness.start();
    const token = await freshToken(t);
    const { 'sec-fetch-site': _, ...headers } = withToken(token, { host: 'shop.test', origin: 'http://shop.test' });
    await expectEverywhere(t, headers, 'own answer');
    for (const [host, origin] of [
      ['shop.test', 'http://shop.test'],
      ['shop.test:80', 'http://shop.test'],
      ['shop.test:8443', 'http://shop.test:8443'],
    ]) {
      await expectEverywhere(t, { host: host!, origin: origin! }, { status: 419, code: 'csrf_token_mismatch' });
    }
  });

  test('an Origin with the service’s host but another scheme is refused with 403 untrusted_origin', async () => {
    const t = await harness.start();
    const token = await freshToken(t);
    // Reached over plain http, as app.inject does: an https page is another origin.
    for (const [host, origin] of [
      ['shop.test', 'https://shop.test'],
      ['shop.test:8443', 'https://shop.test:8443'],
      ['shop.test', 'http://shop.test:443'],
    ]) {
      const { 'sec-fetch-site': _, ...headers } = withToken(token, { host: host!, origin: origin! });
      await expectEverywhere(t, headers, { status: 403, code: 'untrusted_origin' });
    }
  });

  test('behind a trusted proxy the scheme is the forwarded one: an https page passes, an http page is refused', async () => {
    const t = await harness.start({ env: { TRUST_PROXY: 'true' } });
    const token = await freshToken(t);
    const viaTls = { host: 'shop.test', 'x-forwarded-proto': 'https' };
    const { 'sec-fetch-site': _, ...headers } = withToken(token, { ...viaTls, origin: 'https://shop.test' });
    await expectEverywhere(t, headers, 'own answer');
    await expectEverywhere(t, { ...headers, origin: 'http://shop.test' }, { status: 403, code: 'untrusted_origin' });
    await expectEverywhere(
      t,
      { ...headers, 'x-forwarded-proto': 'http', origin: 'https://shop.test' },
      { status: 403, code: 'untrusted_origin' },
    );
  });

  test('without a trusted proxy X-Forwarded-Proto is ignored: it cannot make an https Origin pass over http', async () => {
    const t = await harness.start();
    const token = await freshToken(t);
    const { 'sec-fetch-site': _, ...headers } = withToken(token, {
      host: 'shop.test',
      'x-forwarded-proto': 'https',
      origin: 'https://shop.test',
    });
    await expectEverywhere(t, headers, { status: 403, code: 'untrusted_origin' });
  });

  test('an origin listed in CORS_ALLOWED_ORIGINS passes the origin check, even cross-site', async () => {
    const t = await harness.start({ env: { CORS_ALLOWED_ORIGINS: 'https://shop.example' } });
    const token = await freshToken(t);
    await expectEverywhere(
      t,
      withToken(token, { origin: 'https://shop.example', 'sec-fetch-site': 'cross-site' }),
      'own answer',
    );
    await expectEverywhere(
      t,
      { origin: 'https://shop.example', 'sec-fetch-site': 'cross-site' },
      { status: 419, code: 'csrf_token_mismatch' },
    );
    for (const lookalike of ['https://shop.example.evil.com', 'http://shop.example', 'https://evil-shop.example']) {
      await expectEverywhere(t, withToken(token, { origin: lookalike, 'sec-fetch-site': 'cross-site' }), {
        status: 403,
        code: 'untrusted_origin',
      });
    }
  });

  test('a token issued while logged in is bound to that session: it fails with another or no session cookie and passes with its own', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const credentials = { identity: customer.identity, password: customer.password };
    const anonymous = await freshToken(t);

    const loggedIn = await t.post(`${auth}/login`, credentials, withToken(anonymous));
    assert.equal(loggedIn.status, 200);
    const session = cookieOf(loggedIn, sessionCookie)?.value;
    const bound = cookieOf(loggedIn, 'XSRF-TOKEN')?.value;
    assert.ok(session && bound);
    assert.notEqual(bound, anonymous, 'login issues a fresh token');

    const other = await t.post(`${auth}/login`, credentials);
    const otherSession = cookieOf(other, sessionCookie)?.value;
    assert.ok(otherSession);

    assertCode(
      await t.post(`${auth}/logout`, undefined, withToken(bound)),
      419,
      'csrf_token_mismatch',
      'no session cookie',
    );
    assertCode(
      await t.post(`${auth}/logout`, undefined, withToken(bound, {}, otherSession)),
      419,
      'csrf_token_mismatch',
      'another session',
    );
    assertCode(
      await t.post(`${auth}/logout`, undefined, withToken(anonymous, {}, session)),
      419,
      'csrf_token_mismatch',
      'anonymous token with a session',
    );

    const viaCookieEndpoint = await freshToken(t, `${api}/csrf-cookie`, { cookie: `${sessionCookie}=${otherSession}` });
    assertCode(
      await t.post(`${auth}/password/forgot`, {}, withToken(viaCookieEndpoint, {}, otherSession)),
      422,
      'validation_failed',
      'csrf-cookie with a session binds to it',
    );

    const loggedOut = await t.post(`${auth}/logout`, undefined, withToken(bound, {}, session));
    assert.equal(loggedOut.status, 200);
    assert.deepEqual(loggedOut.body, { status: 'signed_out' });
  });

  test('logout issues a fresh anonymous token that passes without a session', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const loggedIn = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    const session = cookieOf(loggedIn, sessionCookie)?.value;
    const bound = cookieOf(loggedIn, 'XSRF-TOKEN')?.value;
    assert.ok(session && bound);

    const loggedOut = await t.post(`${auth}/logout`, undefined, withToken(bound, {}, session));
    assert.equal(loggedOut.status, 200);
    const fresh = cookieOf(loggedOut, 'XSRF-TOKEN');
    assert.ok(fresh, 'logout sets XSRF-TOKEN');
    assert.notEqual(fresh.value, bound);
    assert.notEqual(fresh.httpOnly, true);
    await expectEverywhere(t, withToken(fresh.value), 'own answer');
    assertCode(
      await t.post(`${auth}/password/forgot`, {}, withToken(bound)),
      419,
      'csrf_token_mismatch',
      'the old bound token is dead without its session',
    );
  });

  test('a CORS preflight from an allowed origin is answered with that origin echoed exactly and credentials allowed', async () => {
    const t = await harness.start({
      env: { CORS_ALLOWED_ORIGINS: 'https://shop.example, https://admin.shop.example' },
    });
    for (const origin of ['https://shop.example', 'https://admin.shop.example']) {
      const reply = await t.app.inject({
        method: 'OPTIONS',
        url: `${auth}/login`,
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, x-xsrf-token',
        },
      });
      assert.ok(reply.statusCode >= 200 && reply.statusCode < 300, `preflight status ${reply.statusCode}`);
      assert.equal(reply.headers['access-control-allow-origin'], origin);
      assert.equal(reply.headers['access-control-allow-credentials'], 'true');
      assert.match(String(reply.headers['access-control-allow-methods']), /\bPOST\b/);
      assert.match(String(reply.headers['access-control-allow-headers']).toLowerCase(), /x-xsrf-token/);
    }
    const actual = await t.post(`${auth}/login`, {}, { origin: 'https://shop.example' });
    assert.equal(actual.headers['access-control-allow-origin'], 'https://shop.example');
    assert.equal(actual.headers['access-control-allow-credentials'], 'true');
  });

  test('an unlisted origin never gets Access-Control-Allow-Origin', async () => {
    for (const env of [{}, { CORS_ALLOWED_ORIGINS: 'https://shop.example' }] as Array<Record<string, string>>) {
      const t = await harness.start({ env });
      for (const origin of ['https://evil.example', 'null', 'https://shop.example.evil.com']) {
        const preflight = await t.app.inject({
          method: 'OPTIONS',
          url: `${auth}/login`,
          headers: { origin, 'access-control-request-method': 'POST' },
        });
        assert.equal(preflight.headers['access-control-allow-origin'], undefined, `preflight from ${origin}`);
        const simple = await t.get(`${api}/platform`, { origin });
        assert.equal(simple.status, 200);
        assert.equal(simple.headers['access-control-allow-origin'], undefined, `GET from ${origin}`);
        const post = await t.post(`${auth}/login`, {}, { origin });
        assertCode(post, 403, 'untrusted_origin', `POST from ${origin}`);
        assert.equal(post.headers['access-control-allow-origin'], undefined, `POST from ${origin}`);
      }
    }
  });
});
