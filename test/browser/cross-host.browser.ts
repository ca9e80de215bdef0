// A storefront page on shop.test calling the service on auth.shop.test, in real Chromium, with no
// proxy: COOKIE_DOMAIN=shop.test makes the cookies the parent domain's, so the page's script reads
// the XSRF-TOKEN and the browser sends the session on every same-site call.
// Run with:  node --import tsx --test test/browser/cross-host.browser.ts
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { waitForCode } from '../client/service-codes.js';
import { launchChromium, screenshots } from '../helpers/browser.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

const shots = screenshots('cross-host-');
let browser: Browser;
let backend: ServiceBackend;
let service: ServiceProcess;
let storefront: http.Server;
let storefrontOrigin: string;
let serviceOrigin: string;

// The storefront's own page: plain fetch calls, as a frontend would make without the client.
const storefrontPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>Shop</h1><script>
  function token() {
    const cookie = document.cookie.split('; ').find((entry) => entry.startsWith('XSRF-TOKEN='));
    return cookie === undefined ? undefined : decodeURIComponent(cookie.slice('XSRF-TOKEN='.length));
  }
  window.call = async (method, path, body) => {
    const headers = { 'x-xsrf-token': token() ?? '' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const reply = await fetch(window.service + path, {
      method, credentials: 'include', headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await reply.text();
    return { status: reply.status, body: text === '' ? null : JSON.parse(text), header: reply.headers.get('x-xsrf-token') };
  };
  window.token = token;
</script></body></html>`;

before(async () => {
  storefront = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(storefrontPage);
  });
  await new Promise<void>((resolve) => storefront.listen(0, '127.0.0.1', resolve));
  storefrontOrigin = `http://shop.test:${(storefront.address() as AddressInfo).port}`;
  backend = await serviceBackend('cross-host');
  service = await startService({
    ...backend.env,
    LOG_LEVEL: 'info',
    COOKIE_DOMAIN: 'shop.test',
    CORS_ALLOWED_ORIGINS: storefrontOrigin,
  });
  serviceOrigin = `http://auth.shop.test:${new URL(service.url).port}`;
  browser = await launchChromium(['--host-resolver-rules=MAP shop.test 127.0.0.1, MAP auth.shop.test 127.0.0.1']);
  await shots.clear();
});

after(async () => {
  await browser?.close();
  await service?.stop();
  await backend?.remove();
  await new Promise((resolve) => storefront?.close(resolve));
});

type Answer = { status: number; body: any; header: string | null };

function call(page: Page, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
  return page.evaluate(
    ([method, path, body]) =>
      (window as unknown as { call: (m: string, p: string, b: unknown) => Promise<Answer> }).call(method, path, body),
    [method, path, body] as const,
  );
}

test('a page on shop.test registers, signs in, uses the account area and signs out against auth.shop.test', async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`${storefrontOrigin}/`);
    await page.evaluate((origin) => ((window as unknown as { service: string }).service = origin), serviceOrigin);
    const auth = '/api/v1/customer/auth';
    const email = 'ada.crosshost@example.com';
    const password = 'correct horse battery 9';

    const fresh = await call(page, 'GET', '/api/v1/csrf-cookie');
    assert.equal(fresh.status, 204);
    const readable = await page.evaluate(() => (window as unknown as { token: () => string | undefined }).token());
    assert.ok(readable, 'the page on shop.test reads the XSRF-TOKEN cookie of the service on auth.shop.test');
    assert.equal(fresh.header, readable, 'the exposed X-XSRF-TOKEN header carries the same token');

    const from = service.logs.length;
    const registered = await call(page, 'POST', `${auth}/register`, {
      name: 'Ada',
      email,
      password,
      password_confirmation: password,
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const code = await waitForCode(service, email, 'verification', { from });
    assert.equal((await call(page, 'POST', `${auth}/verify`, { identity: email, code })).status, 200);

    const login = await call(page, 'POST', `${auth}/login`, { identity: email, password });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const cookies = await page.context().cookies(serviceOrigin);
    const session = cookies.find((cookie) => cookie.name === 'storefront_session');
    assert.equal(session?.domain, '.shop.test', 'the session cookie is the parent domain’s');
    assert.equal(session?.httpOnly, true);

    const who = await call(page, 'GET', `${auth}/session`);
    assert.equal(who.status, 200);
    assert.equal(who.body.customer.identity.value, email);
    const sessions = await call(page, 'GET', `${auth}/sessions`);
    assert.equal(sessions.status, 200);
    assert.equal(sessions.body.sessions.length, 1);
    const renamed = await call(page, 'POST', `${auth}/profile`, { name: 'Ada Lovelace' });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.equal(renamed.body.name, 'Ada Lovelace');
    await shots.take(page, 'signed-in');

    assert.equal((await call(page, 'POST', `${auth}/logout`)).status, 200);
    assert.equal((await call(page, 'GET', `${auth}/session`)).status, 401);
  } finally {
    await page.close();
  }
});
