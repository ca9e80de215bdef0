// The API reference at /docs (Swagger UI) in a real headless Chromium against a real running
// service: "Try it out" must work as a browser client, CSRF token included, with nothing blocked.
// Not picked up by `npm test`; run with:  node --import tsx --test test/browser/docs.browser.ts
// Needs /usr/bin/chromium (Debian: apt-get install -y chromium).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

let browser: Browser;
let backend: ServiceBackend | undefined;
let service: ServiceProcess;

before(async () => {
  backend = await serviceBackend('docs');
  [service, browser] = await Promise.all([startService({ ...backend.env, LOG_LEVEL: 'info' }), launchChromium()]);
});

after(async () => {
  await browser?.close();
  await service?.stop();
  await backend?.remove();
});

/** Opens an operation, presses "Try it out", puts `body` in and presses "Execute"; the answer's status. */
async function tryOperation(page: Page, operationId: string, path: string, body: unknown): Promise<number> {
  const operation = page.locator(`#operations-auth-${operationId}`);
  await operation.locator('.opblock-summary').first().click();
  const tryItOut = operation.getByRole('button', { name: 'Try it out' });
  // With tryItOutEnabled the editor may already be open; the button then reads "Cancel".
  if (await tryItOut.isVisible()) await tryItOut.click();
  await operation.locator('textarea.body-param__text').fill(JSON.stringify(body));
  const answered = page.waitForResponse(
    (response) => new URL(response.url()).pathname === path && response.request().method() === 'POST',
  );
  await operation.getByRole('button', { name: 'Execute' }).click();
  const response = await answered;
  await operation.locator('.live-responses-table .response-col_status').first().waitFor();
  return response.status();
}

describe('the API reference at /docs', () => {
  test('registers and logs in through "Try it out" with no blocked content and no console errors', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
      });
      await page.goto(`${service.url}/docs`);
      await page.locator('#operations-auth-register').waitFor();
      // Nothing sets the token before the first POST: the page must fetch it itself.
      assert.equal(
        (await context.cookies()).find((cookie) => cookie.name === 'XSRF-TOKEN'),
        undefined,
      );

      const auth = '/api/v1/customer/auth';
      const password = 'analytical engine 1843';
      const registered = await tryOperation(page, 'register', `${auth}/register`, {
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        password,
        password_confirmation: password,
      });
      assert.equal(registered, 201);
      const invalid = await page
        .locator('#operations-auth-register tr.response[data-code="422"]')
        .first()
        .textContent();
      assert.match(invalid ?? '', /"password_confirmation"/, "register's 422 example shows register's fields");
      assert.doesNotMatch(invalid ?? '', /"checks"/, "and not readiness's checks");
      const loggedIn = await tryOperation(page, 'login', `${auth}/login`, { identity: 'ada@example.com', password });
      assert.equal(loggedIn, 200);
      assert.ok(
        (await context.cookies()).some((cookie) => cookie.name === 'storefront_session'),
        'the login set the session cookie in the browser',
      );
      const shown = await page.locator('#operations-auth-login .live-responses-table').first().textContent();
      assert.match(shown ?? '', /"auth_type": "session"/, 'the page shows the answer');
    } finally {
      await context.close();
    }
    assert.deepEqual(problems, [], 'no script errors and no CSP violations');
  });
});
