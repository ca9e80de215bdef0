// Two stores of one deployment, a.shop.test and b.shop.test, in real Chromium: each host shows its
// own store's page, the same email holds an account in each with its own password, and with the
// cookies on the shared parent domain (COOKIE_DOMAIN=shop.test) a session or XSRF-TOKEN of one
// store is worthless in the other.
// Run with:  node --import tsx --test test/browser/stores.browser.ts
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { waitForCode } from '../client/service-codes.js';
import { launchChromium, screenshots } from '../helpers/browser.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { runCliOk, startService, type ServiceProcess } from '../helpers/service-process.js';

const shots = screenshots('stores-');
let browser: Browser;
let backend: ServiceBackend;
let service: ServiceProcess;
let port: string;
const auth = '/api/v1/customer/auth';
const email = 'ada.twostores@example.com';

before(async () => {
  backend = await serviceBackend('stores-browser');
  service = await startService({ ...backend.env, LOG_LEVEL: 'info', COOKIE_DOMAIN: 'shop.test', STORE_NAME: 'Shop A' });
  port = new URL(service.url).port;
  await runCliOk(['store', 'hosts', 'add', '--store', 'default', 'a.shop.test'], backend.env);
  await runCliOk(['store', 'create', '--slug', 'shop-b', '--name', 'Shop B', '--host', 'b.shop.test'], backend.env);
  browser = await launchChromium(['--host-resolver-rules=MAP a.shop.test 127.0.0.1, MAP b.shop.test 127.0.0.1']);
  await shots.clear();
});

after(async () => {
  await browser?.close();
  await service?.stop();
  await backend?.remove();
});

type Answer = { status: number; body: any };

/** A same-origin call from the page, with the XSRF-TOKEN cookie echoed as a storefront's script does. */
function call(page: Page, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
  return page.evaluate(
    async ([method, path, body]) => {
      const cookie = document.cookie.split('; ').find((entry) => entry.startsWith('XSRF-TOKEN='));
      const headers: Record<string, string> = {
        'x-xsrf-token': cookie === undefined ? '' : decodeURIComponent(cookie.slice('XSRF-TOKEN='.length)),
      };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const reply = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await reply.text();
      return { status: reply.status, body: text === '' ? null : JSON.parse(text) };
    },
    [method, path, body] as const,
  );
}

/** Opens the store's page on `host`, waiting until the service has taken up the store (the change feed). */
async function openStore(page: Page, host: string, name: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answer = await page.goto(`http://${host}:${port}/`);
    if (answer?.status() === 200 && (await page.content()).includes(name)) return;
    assert.ok(Date.now() < deadline, `${host} shows ${name} within 10 s`);
    await page.waitForTimeout(100);
  }
}

async function registerAndSignIn(page: Page, password: string): Promise<void> {
  assert.equal((await call(page, 'GET', '/api/v1/csrf-cookie')).status, 204);
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
}

test('each host shows its store, and one email holds two accounts that never open each other', async () => {
  const page = await browser.newPage();
  try {
    await openStore(page, 'a.shop.test', 'Shop A');
    await shots.take(page, 'a-page');
    await registerAndSignIn(page, 'password of store a 1');
    assert.equal((await call(page, 'GET', `${auth}/session`)).status, 200);

    // The browser sends A's session and token to B: the parent domain's cookies go to every host.
    await openStore(page, 'b.shop.test', 'Shop B');
    await shots.take(page, 'b-page');
    assert.equal((await call(page, 'GET', `${auth}/session`)).status, 401, 'A’s session is no session in B');
    const planted = await call(page, 'POST', `${auth}/login`, { identity: email, password: 'password of store a 1' });
    assert.equal(planted.status, 419, 'A’s XSRF-TOKEN is not genuine in B');
    // B's own token: now A's password is simply wrong in B, whose account does not exist yet.
    assert.equal((await call(page, 'GET', '/api/v1/csrf-cookie')).status, 204);
    const wrong = await call(page, 'POST', `${auth}/login`, { identity: email, password: 'password of store a 1' });
    assert.equal(wrong.status, 401);

    await registerAndSignIn(page, 'password of store b 2');
    const inB = await call(page, 'GET', `${auth}/session`);
    assert.equal(inB.status, 200);
    assert.equal(inB.body.customer.identity.value, email);

    // Back on A, the cookie the browser holds is B's now: it opens nothing in A.
    await openStore(page, 'a.shop.test', 'Shop A');
    assert.equal((await call(page, 'GET', `${auth}/session`)).status, 401);
    assert.equal((await call(page, 'GET', '/api/v1/csrf-cookie')).status, 204);
    const again = await call(page, 'POST', `${auth}/login`, { identity: email, password: 'password of store a 1' });
    assert.equal(again.status, 200, 'A’s own password still signs in to A');
  } finally {
    await page.close();
  }
});

test('a host that names no store gets a plain 404 page', async () => {
  const page = await browser.newPage();
  try {
    await runCliOk(['store', 'hosts', 'remove', '--store', 'shop-b', 'b.shop.test'], backend.env);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const answer = await page.goto(`http://b.shop.test:${port}/`);
      if (answer?.status() === 404) break;
      assert.ok(Date.now() < deadline, 'the removed host stops answering within 10 s');
      await page.waitForTimeout(100);
    }
    assert.doesNotMatch(await page.content(), /Shop B|Shop A/);
  } finally {
    await page.close();
  }
});
