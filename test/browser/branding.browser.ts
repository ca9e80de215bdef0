// Two stores of one deployment in real Chromium, one with its own logo, colours and support link:
// each host shows its own look, the branded page's CSP lets its colours and logo through (and
// nothing else), and right-to-left still holds. Screenshots of both go to the test's output.
// Run with:  node --import tsx --test test/browser/branding.browser.ts
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible, launchChromium, screenshots } from '../helpers/browser.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { runCliOk, startService, type ServiceProcess } from '../helpers/service-process.js';

const shots = screenshots('branding-');
let browser: Browser;
let backend: ServiceBackend;
let service: ServiceProcess;
let logoServer: http.Server;
let logoUrl: string;
let port: string;

// A logo of the store's own, served from this machine as a CDN would serve it.
const logoSvg =
  '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="48" viewBox="0 0 160 48"><rect width="160" height="48" fill="#0b5d1e"/><text x="12" y="32" fill="#fff" font-size="24">BOOKS</text></svg>';

before(async () => {
  logoServer = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'image/svg+xml' }).end(logoSvg);
  });
  await new Promise<void>((resolve) => logoServer.listen(0, '127.0.0.1', resolve));
  logoUrl = `http://127.0.0.1:${(logoServer.address() as AddressInfo).port}/logo.svg`;
  backend = await serviceBackend('branding-browser');
  service = await startService({ ...backend.env, LOG_LEVEL: 'info', STORE_NAME: 'Plain Shop' });
  port = new URL(service.url).port;
  await runCliOk(['store', 'hosts', 'add', '--store', 'default', 'a.shop.test'], backend.env);
  await runCliOk(
    ['store', 'create', '--slug', 'books', '--name', 'Book Nook', '--host', 'b.shop.test', '--languages', 'en,ar'],
    backend.env,
  );
  await runCliOk(
    [
      'store',
      'set',
      '--store',
      'books',
      '--logo-url',
      logoUrl,
      '--primary-colour',
      '#0B5D1E',
      '--accent-colour',
      '#FFB000',
      '--support-url',
      'https://books.example/help',
    ],
    backend.env,
  );
  browser = await launchChromium(['--host-resolver-rules=MAP a.shop.test 127.0.0.1, MAP b.shop.test 127.0.0.1']);
  await shots.clear();
});

after(async () => {
  await browser?.close();
  await service?.stop();
  await backend?.remove();
  await new Promise<void>((resolve) => logoServer?.close(() => resolve()));
});

/** Opens a store's page, waiting until the service has taken up its latest change (the change feed). */
async function openStore(page: Page, url: string, ready: (page: Page) => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answer = await page.goto(url);
    if (answer?.status() === 200 && (await ready(page))) return;
    assert.ok(Date.now() < deadline, `${url} is ready within 10 s`);
    await page.waitForTimeout(100);
  }
}

const buttonColour = (page: Page) =>
  page.evaluate(() => getComputedStyle(document.querySelector('#login-form button[type="submit"]')!).backgroundColor);

test('each store shows its own look; the branded one its logo, colours and support link, allowed by its CSP', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });

  await openStore(page, `http://a.shop.test:${port}/`, async (p) => (await p.content()).includes('Plain Shop'));
  assert.equal(await buttonColour(page), 'rgb(31, 79, 191)', "the service's own blue");
  assert.equal(await page.locator('img.brand-logo').count(), 0);
  assert.equal(await page.locator('.support a').count(), 0);
  await shots.take(page, 'plain-store');

  await openStore(page, `http://b.shop.test:${port}/`, async (p) => (await p.locator('img.brand-logo').count()) === 1);
  assert.equal(await buttonColour(page), 'rgb(11, 93, 30)', "the store's primary colour");
  const logo = page.locator('img.brand-logo');
  assert.equal(await logo.getAttribute('alt'), 'Book Nook');
  await page.waitForFunction(() => (document.querySelector('img.brand-logo') as HTMLImageElement).naturalWidth > 0);
  assert.equal(await page.locator('.support a').getAttribute('href'), 'https://books.example/help');
  assert.deepEqual(violations, [], 'the CSP let the colours and the logo through');
  await assertAccessible(page, 'branded page');
  await shots.take(page, 'branded-store');

  // Arabic: right to left, the logo and colours still there.
  await openStore(
    page,
    `http://b.shop.test:${port}/?lang=ar`,
    async (p) => (await p.getAttribute('html', 'dir')) === 'rtl',
  );
  assert.equal(await buttonColour(page), 'rgb(11, 93, 30)');
  assert.match((await page.locator('.support a').textContent()) ?? '', /المساعدة/);
  await shots.take(page, 'branded-store-ar');
  await context.close();
});
