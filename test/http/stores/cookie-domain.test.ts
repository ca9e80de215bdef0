import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { api, auth, registeredCustomer, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';

// A storefront on shop.test calling the service on auth.shop.test: the cookies are the parent
// domain's, so the storefront's script can read the XSRF-TOKEN and the browser sends the session.
const domainEnv = { COOKIE_DOMAIN: 'shop.test', CORS_ALLOWED_ORIGINS: 'https://shop.test' };
const onService = { host: 'auth.shop.test' };
const fromStorefront = { ...onService, origin: 'https://shop.test', 'sec-fetch-site': 'same-site' };

function cookieOf(reply: Reply, name: string) {
  const cookie = reply.cookies.find((c) => c.name === name);
  assert.ok(cookie, `${name} is set: ${JSON.stringify(reply.headers['set-cookie'])}`);
  return cookie;
}

async function tokenFor(t: TestApp, session?: string) {
  const reply = await t.get(`${api}/csrf-cookie`, {
    ...onService,
    ...(session && { cookie: `storefront_session=${session}` }),
  });
  assert.equal(reply.status, 204);
  return { reply, token: cookieOf(reply, 'XSRF-TOKEN').value };
}

function asStorefront(token: string, session?: string) {
  const cookies = [`XSRF-TOKEN=${token}`, ...(session ? [`storefront_session=${session}`] : [])];
  return { ...fromStorefront, 'x-xsrf-token': token, cookie: cookies.join('; ') };
}

/** A new customer signed in from the storefront; `cookie` replaces the Cookie header sent. */
async function signIn(t: TestApp, overrides: Record<string, unknown> = {}, cookie?: (token: string) => string) {
  const customer = await registeredCustomer(t, overrides);
  const { token } = await tokenFor(t);
  const headers = asStorefront(token);
  const login = await t.post(
    `${auth}/login`,
    { identity: customer.email, password: customer.password },
    cookie === undefined ? headers : { ...headers, cookie: cookie(token) },
  );
  assert.equal(login.status, 200, JSON.stringify(login.body));
  return { customer, login };
}

describe('COOKIE_DOMAIN: a storefront on a sibling host', () => {
  const harness = useHarness();

  test('the CSRF cookie is the domain’s, and its token is also in an exposed X-XSRF-TOKEN header', async () => {
    const t = await harness.start({ env: domainEnv });
    const { reply, token } = await tokenFor(t);
    assert.equal(cookieOf(reply, 'XSRF-TOKEN').domain, 'shop.test');
    assert.equal(reply.headers['x-xsrf-token'], token);
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: `${auth}/login`,
      headers: { ...onService, origin: 'https://shop.test', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://shop.test');
    const answer = await t.app.inject({ method: 'GET', url: `${api}/csrf-cookie`, headers: fromStorefront });
    assert.match(String(answer.headers['access-control-expose-headers']), /x-xsrf-token/);
  });

  test('signing in and out sets and clears the session cookie for the domain', async () => {
    const t = await harness.start({ env: domainEnv });
    const { customer, login } = await signIn(t);
    const session = cookieOf(login, 'storefront_session');
    assert.equal(session.domain, 'shop.test');
    assert.equal(cookieOf(login, 'XSRF-TOKEN').domain, 'shop.test');

    const who = await t.get(`${auth}/session`, { ...fromStorefront, cookie: `storefront_session=${session.value}` });
    assert.equal(who.status, 200);
    assert.equal(who.body.customer.id, customer.id);

    const signedInToken = cookieOf(login, 'XSRF-TOKEN').value;
    const logout = await t.post(`${auth}/logout`, undefined, asStorefront(signedInToken, session.value));
    assert.equal(logout.status, 200, JSON.stringify(logout.body));
    const cleared = cookieOf(logout, 'storefront_session');
    assert.equal(cleared.domain, 'shop.test', 'a cookie is cleared only with the domain it was set with');
    assert.equal(cleared.value, '');
  });

  test('a browser on a host outside the domain is answered 421 misdirected_request, as it would drop the cookies', async () => {
    const t = await harness.start({ env: domainEnv });
    const browser = { 'sec-fetch-site': 'same-origin' };
    for (const host of ['auth.other.test', 'evilshop.test', 'localhost']) {
      const reply = await t.get(`${api}/csrf-cookie`, { ...browser, host });
      assert.equal(reply.status, 421, host);
      assert.equal(reply.body.code, 'misdirected_request');
    }
    assert.equal((await t.get(`${api}/csrf-cookie`, { ...browser, host: 'shop.test' })).status, 204);
    assert.equal((await t.get(`${api}/csrf-cookie`, { ...browser, host: 'auth.shop.test:8443' })).status, 204);
    // A storefront's server on an internal address relays the cookies to the browser, whose host is the shop's.
    const relayed = await t.get(`${api}/csrf-cookie`, { host: 'auth.internal:3000' });
    assert.equal(relayed.status, 204);
    assert.equal(cookieOf(relayed, 'XSRF-TOKEN').domain, 'shop.test');
    // The probes and the platform answer on any host (a load balancer probes by address).
    assert.equal((await t.get(`${api}/health/live`, { host: '10.0.0.7' })).status, 200);
  });

  test('a stale host-only cookie of the same name is expired, and does not shadow the domain’s', async () => {
    const t = await harness.start({ env: domainEnv });
    // A token from before COOKIE_DOMAIN, host-only, comes first: the header echoes the domain's.
    const { login } = await signIn(t, {}, (token) => `XSRF-TOKEN=stale.token; XSRF-TOKEN=${token}`);
    const setCookies = ([] as string[]).concat(login.headers['set-cookie'] ?? []);
    for (const name of ['storefront_session', 'XSRF-TOKEN']) {
      const hostOnly = setCookies.filter((line) => line.startsWith(`${name}=`) && !/;\s*Domain=/i.test(line));
      assert.equal(hostOnly.length, 1, `${name}: one host-only Set-Cookie, expiring it: ${setCookies.join(' | ')}`);
      assert.match(hostOnly[0]!, /Expires=Thu, 01 Jan 1970|Max-Age=0/i);
    }
    assert.equal(login.headers['x-xsrf-token'], cookieOf(login, 'XSRF-TOKEN').value, 'the new token in the header too');
  });

  test('a session cookie sent twice (one planted for the parent domain) is no session', async () => {
    const t = await harness.start({ env: domainEnv });
    const shopper = cookieOf((await signIn(t, { email: 'shopper@example.com' })).login, 'storefront_session').value;
    // Another host under the domain can plant its own account's session with a longer path, which
    // the browser sends first: the request must not act in that account.
    const planted = cookieOf((await signIn(t, { email: 'planter@example.com' })).login, 'storefront_session').value;
    const alone = await t.get(`${auth}/session`, { ...fromStorefront, cookie: `storefront_session=${shopper}` });
    assert.equal(alone.status, 200);
    const twice = await t.get(`${auth}/session`, {
      ...fromStorefront,
      cookie: `storefront_session=${planted}; storefront_session=${shopper}`,
    });
    assert.equal(twice.status, 401);
    assert.equal(twice.body.code, 'unauthenticated');
  });

  test('without COOKIE_DOMAIN the cookies stay host-only, on any host', async () => {
    const t = await harness.start();
    const { reply } = await tokenFor(t);
    assert.equal(cookieOf(reply, 'XSRF-TOKEN').domain, undefined);
  });

  test('a 419 says where the token comes from', async () => {
    const t = await harness.start({ env: domainEnv });
    const reply = await t.post(`${auth}/logout`, undefined, { ...fromStorefront, 'x-xsrf-token': 'forged.token' });
    assert.equal(reply.status, 419);
    assert.match(reply.body.detail, /GET \/api\/v1\/csrf-cookie/);
    assert.match(reply.body.detail, /X-XSRF-TOKEN/);
  });
});

describe('COOKIE_DOMAIN configuration', () => {
  const base = { APP_SECRET: 'x'.repeat(40), DATA_DIR: '/nonexistent' };

  test('a secure cookie for a domain is named __Secure-, since a __Host- cookie cannot carry one', () => {
    const config = loadConfig({ ...base, COOKIE_SECURE: 'true', COOKIE_DOMAIN: '.Shop.Example' });
    assert.equal(config.cookieDomain, 'shop.example');
    assert.equal(config.sessionCookieName, '__Secure-storefront_session');
    assert.equal(loadConfig({ ...base, COOKIE_SECURE: 'true' }).sessionCookieName, '__Host-storefront_session');
    assert.throws(
      () =>
        loadConfig({ ...base, COOKIE_SECURE: 'true', COOKIE_DOMAIN: 'shop.example', SESSION_COOKIE_NAME: '__Host-s' }),
      (error: unknown) => error instanceof ConfigError && /SESSION_COOKIE_NAME/.test(error.message),
    );
    // Browsers match the prefixes whatever their case.
    for (const env of [
      { COOKIE_SECURE: 'true', COOKIE_DOMAIN: 'shop.example', SESSION_COOKIE_NAME: '__host-s' },
      { COOKIE_SECURE: 'false', SESSION_COOKIE_NAME: '__secure-s' },
    ]) {
      assert.throws(
        () => loadConfig({ ...base, ...env }),
        (error: unknown) => error instanceof ConfigError && /SESSION_COOKIE_NAME/.test(error.message),
        JSON.stringify(env),
      );
    }
  });

  test('only a domain name is accepted: no scheme, port, path, wildcard, single label or address', () => {
    for (const value of [
      'https://shop.example',
      'shop.example:443',
      'shop.example/path',
      '*.shop.example',
      'shop..example',
      '-shop.example',
      'localhost',
      '10.0.0.7',
    ]) {
      assert.throws(
        () => loadConfig({ ...base, COOKIE_DOMAIN: value }),
        (error: unknown) => error instanceof ConfigError && /COOKIE_DOMAIN/.test(error.message),
        value,
      );
    }
  });
});
