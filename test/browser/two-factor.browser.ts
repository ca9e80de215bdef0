// Two-step sign-in (TOTP) on the sign-in page in a real headless Chromium against a real running
// service: set up in the account area (QR code, setup key, the app's first code, ten recovery
// codes shown once), then signing in with the password and a code of the app, with a recovery
// code, and the same recovery code refused; in English and in Arabic, right to left. The codes are
// an authenticator app's, made by test/helpers/totp.ts (RFC 6238 from its own steps).
// Not picked up by `npm test`; run with:  node --import tsx --test test/browser/two-factor.browser.ts
// Needs /usr/bin/chromium (Debian: apt-get install -y chromium). Screenshots go to
// .test-artifacts/screenshots (or SCREENSHOT_DIR), named two-factor-NN-….
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createStorefrontAuthClient } from '../../packages/client/src/index.js';
import { catalogue } from '../../src/i18n/strings.js';
import {
  assertAccessible,
  assertNoSidewaysScroll,
  desktop,
  launchChromium,
  logIn,
  openPage as openBrowserPage,
  phone,
  screenshots,
  statusOf,
  type PageSession,
} from '../helpers/browser.js';
import { testBackends } from '../helpers/database.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { runCliOk, startService, type ServiceProcess } from '../helpers/service-process.js';
import { stepOf, totpAt } from '../helpers/totp.js';
import { waitForCode } from '../client/service-codes.js';

const shots = screenshots('two-factor-');
let browser: Browser;

before(async () => {
  [browser] = await Promise.all([launchChromium(), shots.clear()]);
});

after(async () => {
  await browser?.close();
});

const auth = '/api/v1/customer/auth';

/** A page string as the page shows it, without the isolates that keep inserted values in place. */
const text = (language: string, key: string, params: Record<string, string | number> = {}) =>
  catalogue.text(language, `page.${key}`, params);
const plain = (value: string | null) =>
  (value ?? '')
    .replace(/[\u2066-\u2069]/g, '')
    .replace(/\s+/g, ' ')
    .trim();

/** Six digits that are none of the codes the service would take now (this step and one either side). */
function wrongCode(secret: string): string {
  const now = stepOf();
  const taken = new Set([now - 1, now, now + 1, now + 2].map((step) => totpAt(secret, step)));
  let guess = Number(totpAt(secret, now));
  do guess = (guess + 1) % 1_000_000;
  while (taken.has(String(guess).padStart(6, '0')));
  return String(guess).padStart(6, '0');
}

/** The same digits as typed on an Arabic keyboard (Arabic-Indic digits). */
const arabicDigits = (code: string) => code.replace(/\d/g, (digit) => String.fromCharCode(0x660 + Number(digit)));

/**
 * A service of its own for each group of tests: every login and every second-step try counts
 * under the per-address login limit (20 a minute), and all of them come from 127.0.0.1. The
 * store offers two-step sign-in (`--two-factor optional`) and, with `languages`, more languages.
 */
function serviceFor(label: string, languages?: string) {
  const state: { service?: ServiceProcess; backend?: ServiceBackend } = {};
  before(async () => {
    state.backend = await serviceBackend(`two-factor-${label}`);
    state.service = await startService({ ...state.backend.env, LOG_LEVEL: 'info', STORE_NAME: 'Babbage Books' });
    // The walk runs on this pass's backend: the service's own embedded server, or DATABASE_URL's.
    const listening = state.service.logs.find((entry) => String(entry['msg']).startsWith('Storefront Auth listening'));
    assert.equal(listening?.['mode'], testBackends.database);
    await runCliOk(['store', 'set', '--two-factor', 'optional'], state.backend.env);
    if (languages !== undefined)
      await runCliOk(['store', 'set', '--languages', languages, '--default-language', 'en'], state.backend.env);
  });
  after(async () => {
    await state.service?.stop();
    await state.backend?.remove();
  });
  return {
    get service() {
      return state.service!;
    },
    /**
     * A customer registered and verified through the API, as the other browser suites make them;
     * resolves once the service (which reads the store's settings a little late) offers them
     * two-step sign-in, so the page's account area shows it from the first load.
     */
    async customer(name: string, email: string, password: string) {
      const service = state.service!;
      const mark = service.logs.length;
      const cookies = new Map<string, string>();
      const client = createStorefrontAuthClient({
        baseUrl: service.url,
        onSetCookie: (lines) => {
          for (const line of lines) {
            const [pair = ''] = line.split(';');
            const eq = pair.indexOf('=');
            if (eq > 0) cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
          }
        },
      });
      await client.register({ name, email, password, password_confirmation: password });
      const code = await waitForCode(service, email, 'verification', { from: mark });
      const verified = await fetch(`${service.url}${auth}/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identity: email, code }),
      });
      assert.equal(verified.status, 200, await verified.text());
      await client.login({ identity: email, password });
      const cookie = [...cookies].map(([key, value]) => `${key}=${value}`).join('; ');
      const deadline = Date.now() + 15_000;
      for (;;) {
        const answer = await fetch(`${service.url}${auth}/account/two-factor`, { headers: { cookie } });
        const body = await answer.text();
        if (answer.status === 200) {
          const state = JSON.parse(body) as { status: string; store: string };
          assert.deepEqual([state.status, state.store], ['off', 'optional']);
          break;
        }
        assert.equal(answer.status, 404, body);
        assert.ok(Date.now() < deadline, 'the service did not offer two-step sign-in in time');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await client.logout();
    },
    open(t: TestContext, run: (session: PageSession) => Promise<void>, viewport = desktop) {
      return openBrowserPage(browser, shots, t, state.service!, run, viewport);
    },
  };
}

/** What the account area's section shows while the setup waits for the app's first code. */
async function readSetup(page: Page) {
  const section = page.locator('#two-factor-settings');
  const qr = section.locator('#two-factor-qr');
  await qr.locator('svg').waitFor();
  const svg = await qr.evaluate((box) => {
    const root = box.firstElementChild!;
    return {
      children: box.children.length,
      namespace: root.namespaceURI,
      name: root.localName,
      hidden: root.getAttribute('aria-hidden'),
      shapes: root.querySelectorAll('path, rect').length,
      // Nothing but drawing: no scripts, links, styles or event handlers came in with it.
      unsafe: root.querySelectorAll('script, style, foreignObject, a, image, use, iframe').length,
      attributes: [root, ...root.querySelectorAll('*')].flatMap((element) =>
        [...element.attributes].map((attribute) => attribute.name),
      ),
    };
  });
  assert.equal(svg.children, 1);
  assert.equal(svg.namespace, 'http://www.w3.org/2000/svg');
  assert.equal(svg.name, 'svg');
  assert.equal(svg.hidden, 'true');
  assert.ok(svg.shapes > 0, 'the QR code draws something');
  assert.equal(svg.unsafe, 0);
  assert.deepEqual(
    svg.attributes.filter((name) => name === 'style' || name.startsWith('on') || name.includes('href')),
    [],
  );
  const secret = ((await section.locator('#two-factor-secret').textContent()) ?? '').replace(/\s/g, '');
  assert.match(secret, /^[A-Z2-7]{16,}=*$/, 'the setup key is base32, to type into an app');
  assert.equal(await section.locator('#two-factor-secret').getAttribute('dir'), 'ltr');
  return secret;
}

/** The recovery codes the section shows, once. */
async function readRecoveryCodes(page: Page) {
  const list = page.locator('#two-factor-codes-list');
  await list.locator('li').first().waitFor();
  const codes = (await list.locator('li').allTextContents()).map((code) => code.trim());
  assert.equal(codes.length, 10);
  for (const code of codes) assert.match(code, /^[a-z0-9]{5}-[a-z0-9]{5}$/);
  assert.equal(new Set(codes).size, 10, 'ten different codes');
  assert.equal(await list.getAttribute('dir'), 'ltr');
  return codes;
}

describe('two-step sign-in on the sign-in page', () => {
  const store = serviceFor('en');

  test('set up with an authenticator app, then sign in with its code, with a recovery code, and not twice with the same one', async (t) => {
    const email = 'ada@example.com';
    const password = 'analytical engine 1843';
    await store.customer('Ada Lovelace', email, password);
    await store.open(t, async ({ page, api, shot, status }) => {
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: store.service.url });
      await logIn(page, email, password);
      await status('You are signed in.', 'success');

      // Off: the section says so and offers setting it up, after the password.
      const section = page.locator('#two-factor-settings');
      await section.waitFor();
      assert.equal(await section.getByRole('heading', { level: 3 }).textContent(), 'Two-step sign-in');
      assert.equal(await section.locator('#two-factor-state').textContent(), 'Two-step sign-in is off.');
      assert.equal(await section.locator('#two-factor-on').isHidden(), true);
      const setUp = section.getByRole('button', { name: 'Set up two-step sign-in' });
      await section.locator('#two-factor-setup-form').getByLabel('Current password').fill('not the password 1');
      await setUp.click();
      await status('That is not your current password.', 'error');
      assert.equal(
        await section.locator('#two-factor-setup-form').getByLabel('Current password').getAttribute('aria-invalid'),
        'true',
      );
      assert.equal(await section.locator('#two-factor-qr svg').count(), 0, 'no QR code without the password');
      await assertAccessible(page, 'the two-step section, off, with a wrong password');
      await shot('off-wrong-password');

      await section.locator('#two-factor-setup-form').getByLabel('Current password').fill(password);
      await setUp.click();
      await status('Add the key to your app, then enter the code it shows.', 'success');
      const secret = await readSetup(page);
      const qr = section.getByRole('img', { name: 'QR code that adds Babbage Books to an authenticator app' });
      assert.equal(await qr.isVisible(), true);
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'two-factor-confirm-code');
      assert.equal(
        await section.locator('#two-factor-state').textContent(),
        'Setup is not finished: enter a code from your app to turn two-step sign-in on, or start again.',
      );
      await assertAccessible(page, 'the QR code and setup key');
      await shot('setup-qr-code');

      // A code the app would not show now turns nothing on.
      const codeField = section.locator('#two-factor-confirm-form').getByLabel('Code from your app');
      await codeField.fill(wrongCode(secret));
      await section.getByRole('button', { name: 'Turn on' }).click();
      await status('That code is not right. Check the time on your phone', 'error');
      assert.equal(await codeField.getAttribute('aria-invalid'), 'true');
      assert.equal(await section.locator('#two-factor-codes').isHidden(), true);

      const confirmStep = stepOf();
      await codeField.fill(totpAt(secret, confirmStep));
      await section.getByRole('button', { name: 'Turn on' }).click();
      await status('Two-step sign-in is on. Save your recovery codes now.', 'success');
      const codes = await readRecoveryCodes(page);
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'two-factor-codes-title');
      assert.match(
        (await section.locator('#two-factor-codes').textContent()) ?? '',
        /they are shown only now/,
        'the codes say they are shown once',
      );
      assert.equal(
        await section.locator('#two-factor-state').textContent(),
        'Two-step sign-in is on. You have 10 recovery codes left.',
      );
      assert.equal(await section.locator('#two-factor-enrol').isHidden(), true, 'the QR code is put away');
      assert.equal(await section.locator('#two-factor-qr svg').count(), 0);
      assert.equal(await section.getByRole('button', { name: 'Turn off…' }).isVisible(), true);
      await assertAccessible(page, 'the recovery codes');
      await assertNoSidewaysScroll(page, 'the recovery codes');
      await shot('recovery-codes');

      // Copy puts all ten on the clipboard, one a line; Download saves them as a text file.
      await section.getByRole('button', { name: 'Copy codes' }).click();
      await status('Recovery codes copied.', 'success');
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), codes.join('\n'));
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        section.getByRole('button', { name: 'Download codes' }).click(),
      ]);
      await status('Your recovery codes are downloading as recovery-codes.txt.', 'success');
      assert.equal(download.suggestedFilename(), 'recovery-codes.txt');
      const file = await fs.readFile(await download.path(), 'utf8');
      assert.equal(file, `Recovery codes for Babbage Books. Each one works once.\n\n${codes.join('\n')}\n`);

      await section.getByRole('button', { name: 'I have saved them' }).click();
      assert.equal(await section.locator('#two-factor-codes').isHidden(), true);
      assert.equal(
        await section.locator('#two-factor-codes-list li').count(),
        0,
        'nothing of them is left on the page',
      );

      // A reload shows it on, from the store; the codes are not shown again.
      await page.reload();
      await page.locator('body:not([aria-busy])').waitFor();
      await section.locator('#two-factor-on').waitFor();
      assert.equal(
        await section.locator('#two-factor-state').textContent(),
        'Two-step sign-in is on. You have 10 recovery codes left.',
      );
      assert.equal(await section.locator('#two-factor-codes').isHidden(), true);

      // Signing in again: the password is right, then the second step asks for the app's code.
      await page.getByRole('button', { name: 'Log out' }).click();
      await status('You are signed out.', 'success');
      await logIn(page, email, password);
      await status('One more step: enter the code from your authenticator app.', 'success');
      const step = page.locator('#two-factor');
      await step.waitFor();
      assert.equal(await page.locator('#account').isHidden(), true, 'not signed in yet');
      assert.equal(await page.locator('#login').isHidden(), true);
      assert.equal(await step.getByRole('heading', { level: 2 }).textContent(), 'Confirm it’s you');
      const appCode = step.getByLabel('Code from your app');
      assert.equal(await appCode.getAttribute('autocomplete'), 'one-time-code');
      assert.equal(await appCode.getAttribute('inputmode'), 'numeric');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'two-factor-code');
      assert.equal(api.at(-1), `POST ${auth}/login 200`);
      await assertAccessible(page, 'the second step, with the app’s code');
      await shot('second-step');

      await appCode.fill(wrongCode(secret));
      await step.getByRole('button', { name: 'Continue' }).click();
      await status('That code is not right. Enter the code your app shows now.', 'error');
      assert.equal(await appCode.getAttribute('aria-invalid'), 'true');
      assert.equal(await step.isVisible(), true, 'still on the second step');
      await assertAccessible(page, 'the second step with a wrong code');
      await shot('second-step-wrong-code');

      // The confirmation spent its step: the next one (the service takes one step either side).
      await appCode.fill(totpAt(secret, confirmStep + 1));
      await step.getByRole('button', { name: 'Continue' }).click();
      await status('Welcome, Ada Lovelace. You are signed in.', 'success');
      await page.locator('#account').getByText('Signed in as Ada Lovelace (ada@example.com).').waitFor();
      assert.equal(api.filter((line) => line === `POST ${auth}/two-factor/verify 200`).length, 1);
      await section.locator('#two-factor-on').waitFor();
      await shot('signed-in-with-app-code');

      // A recovery code instead of the app's.
      await page.getByRole('button', { name: 'Log out' }).click();
      await status('You are signed out.', 'success');
      await logIn(page, email, password);
      await step.waitFor();
      await step.getByRole('button', { name: 'Use a recovery code instead' }).click();
      const recovery = step.getByLabel('Recovery code');
      assert.equal(await appCode.isHidden(), true);
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'two-factor-recovery-code');
      await assertAccessible(page, 'the second step, with a recovery code');
      await shot('second-step-recovery-code');
      await recovery.fill(codes[0]!);
      await step.getByRole('button', { name: 'Continue' }).click();
      await status('Welcome, Ada Lovelace. You are signed in.', 'success');
      await section.locator('#two-factor-on').waitFor();
      assert.equal(
        await section.locator('#two-factor-state').textContent(),
        'Two-step sign-in is on. You have 9 recovery codes left.',
      );

      // The same recovery code a second time: refused, and the page stays on the second step.
      await page.getByRole('button', { name: 'Log out' }).click();
      await status('You are signed out.', 'success');
      await logIn(page, email, password);
      await step.waitFor();
      await step.getByRole('button', { name: 'Use a recovery code instead' }).click();
      await recovery.fill(codes[0]!);
      await step.getByRole('button', { name: 'Continue' }).click();
      await status('That recovery code is not right, or it was already used.', 'error');
      assert.equal(await recovery.getAttribute('aria-invalid'), 'true');
      assert.equal(await step.isVisible(), true);
      assert.equal(await page.locator('#account').isHidden(), true);
      assert.equal(api.filter((line) => line === `POST ${auth}/two-factor/verify 422`).length, 2);
      await shot('recovery-code-used-twice');

      // Wrong again and again: the service ends the pending sign-in (the fifth wrong try), and the
      // page goes back to the password with a sentence saying to start again.
      for (let tries = 1; tries < 6 && (await step.isVisible()); tries++) {
        await recovery.fill(`wrong-${tries}-abcde`);
        // The click says "Working…" at once; the answer's sentence follows.
        await step.getByRole('button', { name: 'Continue' }).click();
        await page.locator('#status.error:not(:empty)').waitFor();
      }
      await status('Your sign-in ended', 'error');
      assert.equal(await page.locator('#login').isVisible(), true);
      assert.equal(await step.isHidden(), true);
      assert.ok(api.includes(`POST ${auth}/two-factor/verify 401`), 'the store said the pending sign-in ended');
      await assertAccessible(page, 'the log-in form after the second step ended');
      await shot('second-step-ended');
    });
  });
});

describe('new recovery codes and turning two-step sign-in off', () => {
  const store = serviceFor('off');

  test('new recovery codes with an old one, then turn off with the password and a code of the app', async (t) => {
    const email = 'mary@example.com';
    const password = 'mechanism heavens 1831';
    await store.customer('Mary Somerville', email, password);
    await store.open(t, async ({ page, status }) => {
      await logIn(page, email, password);
      await status('You are signed in.', 'success');
      const section = page.locator('#two-factor-settings');
      await section.locator('#two-factor-setup-form').getByLabel('Current password').fill(password);
      await section.getByRole('button', { name: 'Set up two-step sign-in' }).click();
      const secret = await readSetup(page);
      const confirmStep = stepOf();
      await section
        .locator('#two-factor-confirm-form')
        .getByLabel('Code from your app')
        .fill(totpAt(secret, confirmStep));
      await section.getByRole('button', { name: 'Turn on' }).click();
      await status('Two-step sign-in is on.', 'success');
      const codes = await readRecoveryCodes(page);
      await section.getByRole('button', { name: 'I have saved them' }).click();

      // New recovery codes, with the password and one of the old codes: ten others, shown once.
      await section.getByRole('button', { name: 'New recovery codes' }).click();
      const renew = section.locator('#two-factor-new-codes-form');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'two-factor-new-codes-password');
      await renew.getByLabel('Current password').fill(password);
      await renew.getByLabel('Code from your app, or a recovery code').fill(codes[3]!);
      await assertAccessible(page, 'new recovery codes');
      await renew.getByRole('button', { name: 'Make new codes' }).click();
      await status('New recovery codes are made and the old ones no longer work.', 'success');
      const renewed = await readRecoveryCodes(page);
      assert.deepEqual(
        renewed.filter((code) => codes.includes(code)),
        [],
        'none of the old codes',
      );
      assert.equal(await renew.isHidden(), true);
      assert.equal(
        await section.locator('#two-factor-state').textContent(),
        'Two-step sign-in is on. You have 10 recovery codes left.',
      );
      await section.getByRole('button', { name: 'I have saved them' }).click();

      await section.getByRole('button', { name: 'Turn off…' }).click();
      const form = section.locator('#two-factor-off-form');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'two-factor-off-password');
      await form.getByLabel('Current password').fill(password);
      await form.getByLabel('Code from your app, or a recovery code').fill(wrongCode(secret));
      await form.getByRole('button', { name: 'Turn off two-step sign-in' }).click();
      await status('That code is not right, or the recovery code was already used.', 'error');
      await assertAccessible(page, 'turning two-step sign-in off, with a wrong code');
      await form.getByLabel('Code from your app, or a recovery code').fill(totpAt(secret, confirmStep + 1));
      await form.getByRole('button', { name: 'Turn off two-step sign-in' }).click();
      await status('Two-step sign-in is off. Your password alone signs you in.', 'success');
      assert.equal(await section.locator('#two-factor-state').textContent(), 'Two-step sign-in is off.');
      assert.equal(await section.getByRole('button', { name: 'Set up two-step sign-in' }).isVisible(), true);

      await page.getByRole('button', { name: 'Log out' }).click();
      await status('You are signed out.', 'success');
      await logIn(page, email, password);
      await status('Welcome, Mary Somerville. You are signed in.', 'success');
    });
  });
});

describe('two-step sign-in in Arabic, right to left', () => {
  const store = serviceFor('ar', 'en,ar');

  test('the section, the setup and the second step read right to left in Arabic; codes stay left to right', async (t) => {
    const email = 'hertha@example.com';
    const password = 'electric arc 1902';
    await store.customer('Hertha Ayrton', email, password);
    await store.open(
      t,
      async ({ page, shot, status }) => {
        await page.goto(`${store.service.url}/?lang=ar`);
        await page.locator('body:not([aria-busy])').waitFor();
        assert.deepEqual(
          await page.evaluate(() => ({ lang: document.documentElement.lang, dir: document.documentElement.dir })),
          { lang: 'ar', dir: 'rtl' },
        );
        await page.locator('#login-identity').fill(email);
        await page.locator('#login-password').fill(password);
        await page.locator('#login-form button[type="submit"]').click();
        await page.locator('#account').waitFor();

        const section = page.locator('#two-factor-settings');
        await section.waitFor();
        assert.equal(await section.locator('h3').textContent(), text('ar', 'two_factor.title'));
        assert.equal(await section.locator('#two-factor-state').textContent(), text('ar', 'two_factor.off'));
        assert.equal(
          await section.evaluate((element) => getComputedStyle(element).direction),
          'rtl',
          'the section reads right to left',
        );
        await section.locator('#two-factor-setup-password').fill(password);
        await section.locator('#two-factor-setup-form button[type="submit"]').click();
        await status(text('ar', 'two_factor.setup_started'), 'success');
        const secret = await readSetup(page);
        assert.equal(
          await section.locator('#two-factor-qr').getAttribute('aria-label'),
          text('ar', 'two_factor.qr_label', { store: 'Babbage Books' }),
        );
        await assertNoSidewaysScroll(page, 'the Arabic setup at 375 px');
        await assertAccessible(page, 'the Arabic setup at 375 px');
        await shot('ar-setup');

        // Typed on an Arabic keyboard: the same code.
        const confirmStep = stepOf();
        await section.locator('#two-factor-confirm-code').fill(arabicDigits(totpAt(secret, confirmStep)));
        await section.locator('#two-factor-confirm-form button[type="submit"]').click();
        await status(text('ar', 'two_factor.enabled'), 'success');
        await readRecoveryCodes(page);
        assert.equal(
          plain(await section.locator('#two-factor-state').textContent()),
          text('ar', 'two_factor.codes_left', { count: 10 }),
        );
        assert.equal(
          await section.locator('#two-factor-codes-title').textContent(),
          text('ar', 'two_factor.codes_title'),
        );
        await assertNoSidewaysScroll(page, 'the Arabic recovery codes at 375 px');
        await assertAccessible(page, 'the Arabic recovery codes at 375 px');
        await shot('ar-recovery-codes');

        await page.locator('#logout').click();
        await statusOf(page, text('ar', 'status.signed_out'), 'success');

        // A sign-in whose second step waits, as a provider's way back brings it: the page opened
        // with `?two_factor=required` asks for the code at once.
        const first = await page.evaluate(
          async ({ identity, secretWord }) => {
            await fetch('/api/v1/csrf-cookie', { credentials: 'same-origin' });
            const token = decodeURIComponent(/(?:^|; )XSRF-TOKEN=([^;]*)/.exec(document.cookie)?.[1] ?? '');
            const answer = await fetch('/api/v1/customer/auth/login', {
              method: 'POST',
              credentials: 'same-origin',
              headers: { 'content-type': 'application/json', 'x-xsrf-token': token },
              body: JSON.stringify({ identity, password: secretWord }),
            });
            return { status: answer.status, body: (await answer.json()) as unknown };
          },
          { identity: email, secretWord: password },
        );
        assert.deepEqual(first, {
          status: 200,
          body: { auth_type: 'two_factor_required', methods: ['totp', 'recovery_code'] },
        });
        await page.goto(`${store.service.url}/?lang=ar&two_factor=required`);
        await page.locator('body:not([aria-busy])').waitFor();
        const step = page.locator('#two-factor');
        await step.waitFor();
        assert.equal(new URL(page.url()).searchParams.has('two_factor'), false, 'asked once, not on a reload');
        assert.equal(await step.locator('h2').textContent(), text('ar', 'two_factor.step_title'));
        assert.equal(
          plain(await step.locator('#two-factor-app-intro').textContent()),
          text('ar', 'two_factor.step_intro', { store: 'Babbage Books' }),
        );
        assert.equal(await step.locator('#two-factor-code').getAttribute('dir'), 'ltr');
        assert.equal(await step.evaluate((element) => getComputedStyle(element).direction), 'rtl');
        await assertNoSidewaysScroll(page, 'the Arabic second step at 375 px');
        await assertAccessible(page, 'the Arabic second step at 375 px');
        await shot('ar-second-step');

        await step.locator('#two-factor-code').fill(arabicDigits(totpAt(secret, confirmStep + 1)));
        await step.locator('#two-factor-form button[type="submit"]').click();
        const welcome = await statusOf(page, 'Hertha Ayrton', 'success');
        assert.equal(plain(welcome), text('ar', 'status.welcome', { name: 'Hertha Ayrton' }));
        await page.locator('#account').waitFor();
        await shot('ar-signed-in');
      },
      phone,
    );
  });
});
