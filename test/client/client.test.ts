import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import {
  createStorefrontAuthClient,
  StorefrontAuthError,
  type StorefrontAuthClientOptions,
  type StorefrontAuthErrorCode,
} from '../../packages/client/src/index.js';
import { cliEnv, runCommand } from '../helpers/cli.js';
import { useClientService } from '../helpers/client-service.js';
import { waitForCode } from './service-codes.js';

interface Exchange {
  method: string;
  path: string;
  status: number;
  token: string | null;
  origin: string | null;
}

/** A fetch that records what went out and what came back, and may tamper with the CSRF header. */
function recordingFetch(exchanges: Exchange[], tamper: (exchange: number) => boolean = () => false): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    const method = init?.method ?? 'GET';
    if (method === 'POST' && tamper(exchanges.length)) headers.set('x-xsrf-token', 'forged.token');
    const response = await fetch(input, { ...init, headers });
    exchanges.push({
      method,
      path: new URL(String(input)).pathname,
      status: response.status,
      token: headers.get('x-xsrf-token'),
      origin: headers.get('origin'),
    });
    return response;
  };
}

async function rejection(promise: Promise<unknown>): Promise<StorefrontAuthError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof StorefrontAuthError, `expected a StorefrontAuthError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the call to fail');
}

async function assertFails(promise: Promise<unknown>, status: number, code: StorefrontAuthErrorCode) {
  const error = await rejection(promise);
  assert.equal(error.status, status);
  assert.equal(error.code, code);
  return error;
}

/** A registration whose confirmation repeats the password. */
function registrationBody(name: string, email: string, password: string) {
  return { name, email, password, password_confirmation: password };
}

describe('the typed client against a running service', () => {
  const running = useClientService('sfa-client-');
  const clientFor = (options: Partial<StorefrontAuthClientOptions> = {}) => running.clientFor(options);

  test('a customer registers, verifies, logs in, is recognised, logs out, resets the password and logs in again', async () => {
    const exchanges: Exchange[] = [];
    const client = clientFor({ fetch: recordingFetch(exchanges) });

    assert.deepEqual(await client.platform(), { name: 'Storefront', api_version: 'v1' });
    assert.deepEqual(await client.live(), { status: 'ok' });
    const ready = await client.ready();
    assert.deepEqual(ready.checks, { database: true, cache: true, search: true, store: true });

    let mark = running.service.logs.length;
    const registered = await client.register({
      name: 'Ada Lovelace',
      email: ' Ada@Example.com ',
      password: 'analytical engine 1843',
      password_confirmation: 'analytical engine 1843',
    });
    assert.equal(registered.name, 'Ada Lovelace');
    assert.deepEqual(registered.identity, { type: 'email', value: 'ada@example.com', verified_at: null });
    await waitForCode(running.service, 'ada@example.com', 'verification', { from: mark });

    mark = running.service.logs.length;
    assert.deepEqual(await client.resendVerification({ identity: 'ada@example.com' }), { status: 'accepted' });
    const code = await waitForCode(running.service, 'ada@example.com', 'verification', { from: mark });
    const verified = await client.verify({ identity: 'ada@example.com', code });
    assert.equal(verified.id, registered.id);
    assert.equal(typeof verified.identity.verified_at, 'string');

    const tokenBeforeLogin = client.cookies().get('XSRF-TOKEN');
    const loggedIn = await client.login({ identity: 'ada@example.com', password: 'analytical engine 1843' });
    assert.equal(loggedIn.auth_type, 'session');
    assert.equal(loggedIn.customer.id, registered.id);
    assert.ok(client.cookies().has('storefront_session'), 'the jar keeps the session cookie');
    assert.notEqual(
      client.cookies().get('XSRF-TOKEN'),
      tokenBeforeLogin,
      'login issues a fresh token, which the jar keeps',
    );

    const me = await client.session();
    assert.deepEqual(me, { auth_type: 'session', customer: verified });

    assert.deepEqual(await client.logout(), { status: 'signed_out' });
    assert.equal(client.cookies().has('storefront_session'), false, 'the expired session cookie leaves the jar');
    await assertFails(client.session(), 401, 'unauthenticated');

    mark = running.service.logs.length;
    assert.deepEqual(await client.forgotPassword({ identity: 'ada@example.com' }), { status: 'accepted' });
    const resetCode = await waitForCode(running.service, 'ada@example.com', 'password_reset', { from: mark });
    const reset = await client.resetPassword({
      identity: 'ada@example.com',
      code: resetCode,
      password: 'difference engine 1822',
      password_confirmation: 'difference engine 1822',
    });
    assert.deepEqual(reset, { status: 'password_reset' });

    await assertFails(
      client.login({ identity: 'ada@example.com', password: 'analytical engine 1843' }),
      401,
      'unauthenticated',
    );
    const again = await client.login({ identity: 'ada@example.com', password: 'difference engine 1822' });
    assert.ok(again.auth_type === 'session');
    assert.equal(again.customer.id, registered.id);
    assert.equal((await client.session()).customer.id, registered.id);

    // The CSRF path was really taken: a token fetched before the first POST, then sent on every POST.
    const firstPost = exchanges.findIndex((exchange) => exchange.method === 'POST');
    assert.ok(exchanges.slice(0, firstPost).some((exchange) => exchange.path === '/api/v1/csrf-cookie'));
    const posts = exchanges.filter((exchange) => exchange.method === 'POST');
    assert.equal(posts.length, 9);
    for (const post of posts) {
      assert.equal(post.origin, running.origin);
      assert.match(post.token ?? '', /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, `${post.path} carried an X-XSRF-TOKEN`);
    }
    assert.equal(exchanges.filter((exchange) => exchange.status === 419).length, 0, 'no token was ever refused');
  });

  test('a request with invalid fields throws validation_failed with every failing field in errors', async () => {
    const error = await assertFails(
      clientFor().register({ name: '', email: 'not an email', password: 'short', password_confirmation: 'other' }),
      422,
      'validation_failed',
    );
    assert.deepEqual(Object.keys(error.errors).sort(), ['email', 'name', 'password', 'password_confirmation']);
    for (const messages of Object.values(error.errors))
      assert.ok(messages.length > 0 && messages.every((m) => typeof m === 'string'));
    assert.match(error.requestId ?? '', /.+/);
  });

  test('the API refusals arrive as typed errors with their codes', async () => {
    const client = clientFor();
    const body = registrationBody('Grace', 'grace@example.com', 'compiler cobol 1959');
    await client.register(body);
    await assertFails(client.register(body), 422, 'identity_unavailable');
    await assertFails(
      client.verify({ identity: 'grace@example.com', code: '000000' }),
      422,
      'invalid_identity_challenge',
    );
    await assertFails(
      client.login({ identity: 'grace@example.com', password: 'wrong password 1' }),
      401,
      'unauthenticated',
    );
    await assertFails(client.logout(), 401, 'unauthenticated');
    await assertFails(client.session(), 401, 'unauthenticated');
  });

  test('a signed-in customer exports their data and deletes their account', async () => {
    const client = clientFor();
    const body = registrationBody('Mary Somerville', 'mary@example.com', 'connexion physical 1834');
    const registered = await client.register(body);
    await client.login({ identity: body.email, password: body.password });
    const data = await client.exportAccount();
    assert.equal(data.customer.id, registered.id);
    assert.equal(data.sessions.filter((session) => session.current).length, 1);
    const wrong = await assertFails(
      client.deleteAccount({ current_password: 'not it at all 1' }),
      422,
      'validation_failed',
    );
    assert.deepEqual(Object.keys(wrong.errors), ['current_password']);
    assert.deepEqual(await client.deleteAccount({ current_password: body.password }), { status: 'deleted' });
    assert.equal(client.cookies().has('storefront_session'), false, 'the cleared session cookie leaves the jar');
    await assertFails(client.exportAccount(), 401, 'unauthenticated');
    assert.equal((await client.register(body)).name, 'Mary Somerville', 'the identity registers again');
  });

  test('a rate-limited call reports the Retry-After seconds', async () => {
    const client = clientFor();
    await client.forgotPassword({ identity: 'limited@example.com' });
    const error = await assertFails(client.forgotPassword({ identity: 'limited@example.com' }), 429, 'rate_limited');
    assert.ok(
      error.retryAfter !== undefined && error.retryAfter > 0 && error.retryAfter <= 60,
      `retryAfter ${error.retryAfter}`,
    );
  });

  test('a refused CSRF token is refreshed once and the call is retried', async () => {
    const exchanges: Exchange[] = [];
    const client = clientFor({ fetch: recordingFetch(exchanges, (index) => index === 1) });
    assert.deepEqual(await client.forgotPassword({ identity: 'refresh@example.com' }), { status: 'accepted' });
    assert.deepEqual(
      exchanges.map((exchange) => `${exchange.method} ${exchange.path} ${exchange.status}`),
      [
        'GET /api/v1/csrf-cookie 204',
        'POST /api/v1/customer/auth/password/forgot 419',
        'GET /api/v1/csrf-cookie 204',
        'POST /api/v1/customer/auth/password/forgot 202',
      ],
    );
  });

  test('a token refused twice is not retried again: the caller gets csrf_token_mismatch', async () => {
    const exchanges: Exchange[] = [];
    const client = clientFor({ fetch: recordingFetch(exchanges, () => true) });
    await assertFails(client.forgotPassword({ identity: 'twice@example.com' }), 419, 'csrf_token_mismatch');
    assert.equal(exchanges.filter((exchange) => exchange.method === 'POST').length, 2);
  });

  test('a call from a foreign origin is refused with untrusted_origin', async () => {
    const client = clientFor({ headers: { origin: 'https://evil.example' } });
    await assertFails(client.login({ identity: 'ada@example.com', password: 'whatever 1' }), 403, 'untrusted_origin');
  });

  test('a storefront backend acts for a shopper: their Cookie header seeds a client, and what the service sets goes back to them', async () => {
    // The shopper's browser: the cookies the backend passed on to it, sent back on the next page.
    const browser = new Map<string, string>();
    const relayed: string[][] = [];
    const cookieHeader = () =>
      browser.size === 0 ? undefined : [...browser].map(([name, value]) => `${name}=${value}`).join('; ');
    const keep = (lines: string[]) => {
      relayed.push(lines);
      for (const line of lines) {
        const [pair = ''] = line.split(';');
        const name = pair.slice(0, pair.indexOf('='));
        const expires = /;\s*expires=([^;]+)/i.exec(line)?.[1];
        const expired = /;\s*max-age=0\b/i.test(line) || (expires !== undefined && Date.parse(expires) <= Date.now());
        if (expired) browser.delete(name);
        else browser.set(name, pair.slice(name.length + 1));
      }
    };
    // One client per request the backend serves, as a server makes it: no Origin of its own.
    const forShopper = () =>
      createStorefrontAuthClient({ baseUrl: running.service.url, cookie: cookieHeader(), onSetCookie: keep });

    const body = registrationBody('Hedy Lamarr', 'hedy@example.com', 'frequency hopping 1942');
    const registered = await forShopper().register(body);
    assert.ok(browser.has('XSRF-TOKEN'), 'the token the client fetched went back to the shopper');
    const signedIn = await forShopper().login({ identity: body.email, password: body.password });
    assert.ok(signedIn.auth_type === 'session');
    assert.equal(signedIn.customer.id, registered.id);
    const sessionLine = relayed.flat().find((line) => line.startsWith('storefront_session='));
    assert.match(sessionLine ?? '', /HttpOnly/i, 'the Set-Cookie line is passed on as the service wrote it');

    const later = forShopper();
    assert.equal(later.cookies().get('storefront_session'), browser.get('storefront_session'), 'the jar is seeded');
    assert.equal((await later.session()).customer.id, registered.id);
    assert.deepEqual(await forShopper().logout(), { status: 'signed_out' });
    assert.equal(browser.has('storefront_session'), false, 'the expired session cookie reached the shopper');
    await assertFails(forShopper().session(), 401, 'unauthenticated');
  });

  test('a service that cannot be reached is a network_error with status 0', async () => {
    const client = createStorefrontAuthClient({ baseUrl: 'http://127.0.0.1:1' });
    const error = await assertFails(client.live(), 0, 'network_error');
    assert.ok(error.cause instanceof Error);
  });

  test('a base URL that redirects is an invalid_response, and the password never reaches the redirect target', async () => {
    const received: string[] = [];
    const target = http.createServer((request, reply) => {
      received.push(`${request.method} ${request.url}`);
      reply.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
    const redirecting = http.createServer((request, reply) => {
      reply.writeHead(307, { location: `${targetUrl}${request.url}` }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    try {
      const client = createStorefrontAuthClient({
        baseUrl: `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/api/v1`,
      });
      await assertFails(
        client.login({ identity: 'ada@example.com', password: 'secret 42 x' }),
        307,
        'invalid_response',
      );
      assert.deepEqual(received, []);
    } finally {
      redirecting.close();
      target.close();
    }
  });

  test('signs in with a code once the store allows it, and reports not_found before', async () => {
    const client = clientFor();
    const identity = 'code-signer@example.com';
    await client.register({
      name: 'Grace Hopper',
      email: identity,
      password: 'compiler pioneer 1952',
      password_confirmation: 'compiler pioneer 1952',
    });
    await assertFails(client.requestSignInCode({ identity }), 404, 'not_found');
    await assertFails(client.loginWithCode({ identity, code: '123456' }), 404, 'not_found');

    const set = await runCommand(['store', 'set', '--sign-in-with-code', 'true'], cliEnv(running.dataDir));
    assert.equal(set.code, 0, set.stderr);
    const mark = running.service.logs.length;
    // The service reads the store again within two seconds; until then the path is still 404.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const error = await client.requestSignInCode({ identity }).then(
        (accepted) => {
          assert.deepEqual(accepted, { status: 'accepted' });
          return undefined;
        },
        (failure: unknown) => failure,
      );
      if (error === undefined) break;
      assert.ok(error instanceof StorefrontAuthError && error.code === 'not_found', String(error));
      assert.ok(Date.now() < deadline, 'the service took up --sign-in-with-code within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const code = await waitForCode(running.service, identity, 'sign_in', { from: mark });
    const signedIn = await client.loginWithCode({ identity, code });
    assert.equal(signedIn.auth_type, 'session');
    assert.equal(typeof signedIn.customer.identity.verified_at, 'string', 'the code verified the identity');
    assert.deepEqual(await client.session(), signedIn);
    await assertFails(client.loginWithCode({ identity, code }), 422, 'invalid_identity_challenge');
  });
});
