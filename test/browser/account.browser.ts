// The account area of the sign-in page in a real headless Chromium against a real running service:
// devices, password, name, email, export and deletion, each through the page as a shopper uses it.
// Not picked up by `npm test`; run with:  node --import tsx --test test/browser/account.browser.ts
// Needs /usr/bin/chromium (Debian: apt-get install -y chromium). Screenshots go to
// .test-artifacts/screenshots (or SCREENSHOT_DIR), named account-NN-….
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createStorefrontAuthClient, StorefrontAuthError } from '../../packages/client/src/index.js';
import {
  assertAccessible,
  assertNoSidewaysScroll,
  desktop,
  launchChromium,
  logIn,
  openPage as openBrowserPage,
  phone,
  register,
  screenshots,
  statusOf,
  type PageSession,
} from '../helpers/browser.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { setStoreStatus, startService, type ServiceProcess } from '../helpers/service-process.js';
import { waitForCode } from '../client/service-codes.js';

const shots = screenshots('account-');
let browser: Browser;

before(async () => {
  [browser] = await Promise.all([launchChromium(), shots.clear()]);
});

after(async () => {
  await browser?.close();
});

const firefoxOnWindows = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0';

/**
 * A service of its own for each group of tests: every login, password check and change counts
 * under the per-address login limit (20 a minute), and all of them come from 127.0.0.1.
 */
function serviceFor(label: string, env: Record<string, string> = {}) {
  const state: { service?: ServiceProcess; backend?: ServiceBackend } = {};
  before(async () => {
    state.backend = await serviceBackend(`account-${label}`);
    state.service = await startService({
      ...state.backend.env,
      LOG_LEVEL: 'info',
      STORE_NAME: 'Babbage Books',
      ...env,
    });
  });
  after(async () => {
    await state.service?.stop();
    await state.backend?.remove();
  });
  return {
    get service() {
      return state.service!;
    },
    setStoreStatus(status: 'paused' | 'active') {
      return setStoreStatus(state.service!, state.backend!.env, status);
    },
    async customer(name: string, identity: string, password: string) {
      const client = createStorefrontAuthClient({ baseUrl: state.service!.url });
      const field = env['STORE_IDENTITY_MODE'] === 'phone' ? { phone: identity } : { email: identity };
      await client.register({ name, ...field, password, password_confirmation: password });
    },
    open(t: TestContext, run: (session: PageSession) => Promise<void>, viewport = desktop) {
      return openBrowserPage(browser, shots, t, state.service!, run, viewport);
    },
  };
}

async function signIn(page: Page, identity: string, password: string) {
  await logIn(page, identity, password);
  await statusOf(page, 'You are signed in.', 'success');
  // The list is filled once the page has asked for it.
  await page.locator('#sessions:not([aria-busy]) #sessions-list li').first().waitFor();
}

describe('the account area: devices and password, at both widths', () => {
  const store = serviceFor('devices');

  for (const [label, viewport] of [
    ['375 px', phone],
    ['desktop', desktop],
  ] as const) {
    test(`at ${label} a shopper sees each device, revokes one, signs out everywhere else and changes the password`, async (t) => {
      const email = `devices-${viewport.width}@example.com`;
      await store.customer('Ada Lovelace', email, 'analytical engine 1843');

      // Another device, signed in first: Firefox on Windows in a browser context of its own.
      const other = await browser.newContext({ viewport, userAgent: firefoxOnWindows });
      try {
        const otherPage = await other.newPage();
        otherPage.setDefaultTimeout(15_000);
        await otherPage.goto(store.service.url);
        await signIn(otherPage, email, 'analytical engine 1843');

        await store.open(
          t,
          async ({ page, shot, status }) => {
            await signIn(page, email, 'analytical engine 1843');
            const list = page.locator('#sessions-list');
            const items = list.getByRole('listitem');
            assert.equal(await items.count(), 2);
            const current = items.filter({ hasText: 'This device' });
            const firefox = items.filter({ hasText: 'Firefox on Windows' });
            assert.equal(await current.count(), 1);
            assert.equal(await current.getByRole('button').count(), 0, 'this device has no Revoke button');
            assert.equal(await firefox.getByText('This device').count(), 0);
            assert.match((await firefox.textContent()) ?? '', /Network 127\.0\.0\.0\/24 · signed in .+ · last seen .+/);
            assert.ok(await firefox.locator('time').first().getAttribute('datetime'), 'times carry their ISO value');
            await assertNoSidewaysScroll(page, `the session list at ${label}`);
            await assertAccessible(page, `the account area at ${label}`);
            await shot(`sessions-${viewport.width}`);

            await firefox.getByRole('button', { name: 'Revoke' }).click();
            await status('Firefox on Windows is signed out.', 'success');
            await items.filter({ hasText: 'Firefox on Windows' }).waitFor({ state: 'detached' });
            assert.equal(await items.count(), 1);
            assert.equal(
              await page.evaluate(() => document.activeElement?.id),
              'sessions-title',
              'focus stays in the list',
            );

            // The revoked device finds out on its next call, and after a reload.
            await otherPage.locator('#profile').getByRole('button', { name: 'Save name' }).click();
            await statusOf(otherPage, 'You are no longer signed in on this device. Log in again.', 'error');
            assert.equal(await otherPage.locator('#login').isVisible(), true);
            await otherPage.reload();
            await otherPage.locator('body:not([aria-busy]) #login').waitFor();
            assert.equal(await otherPage.locator('#account').isHidden(), true);

            // Two more devices, then sign out everywhere else.
            const devices = [1, 2].map(() => createStorefrontAuthClient({ baseUrl: store.service.url }));
            for (const device of devices) await device.login({ identity: email, password: 'analytical engine 1843' });
            await page.getByRole('button', { name: 'Sign out everywhere else' }).click();
            await status('Signed out 2 other devices. This one stays signed in.', 'success');
            for (const device of devices) {
              await assert.rejects(
                device.session(),
                (error) => error instanceof StorefrontAuthError && error.code === 'unauthenticated',
              );
            }
            assert.equal(await items.count(), 1);

            // Change the password: a wrong current one is said next to its field.
            const form = page.locator('#password-change');
            await form.getByLabel('Current password').fill('not my password 1');
            await form.getByLabel('New password', { exact: true }).fill('difference engine 1822');
            await form.getByLabel('Confirm new password').fill('difference engine 1822');
            await form.getByRole('button', { name: 'Change password' }).click();
            await status('Some fields need another look', 'error');
            const currentPassword = form.getByLabel('Current password');
            assert.equal(await currentPassword.getAttribute('aria-invalid'), 'true');
            assert.equal(await page.locator('#password-change-current-error').textContent(), 'Is not correct.');
            assert.equal(await page.evaluate(() => document.activeElement?.id), 'password-change-current');
            await assertNoSidewaysScroll(page, `the password form with an error at ${label}`);
            await assertAccessible(page, `the password form with an error at ${label}`);
            await shot(`password-error-${viewport.width}`);

            await currentPassword.fill('analytical engine 1843');
            await form.getByLabel('New password', { exact: true }).fill('difference engine 1822');
            await form.getByLabel('Confirm new password').fill('difference engine 1822');
            await form.getByRole('button', { name: 'Change password' }).click();
            await status(
              'Your password is changed. Every other device was signed out; this one stays signed in.',
              'success',
            );
            assert.equal(await currentPassword.getAttribute('aria-invalid'), null);
            assert.equal(await currentPassword.inputValue(), '', 'the form is emptied');

            // Still signed in with the rotated cookie and token: a reload and a CSRF-checked call work.
            await page.reload();
            await page.locator('body:not([aria-busy])').waitFor();
            await page.locator('#account').getByText('Signed in as Ada Lovelace').waitFor();
            await page.locator('#account').getByRole('button', { name: 'Log out' }).click();
            await status('You are signed out.', 'success');
            await logIn(page, email, 'analytical engine 1843');
            await status('is not right', 'error');
            await signIn(page, email, 'difference engine 1822');
            await shot(`password-changed-${viewport.width}`);
          },
          viewport,
        );
      } finally {
        await other.close();
      }
    });
  }
});

describe('the account area: name, email, export and deletion', () => {
  const store = serviceFor('profile');

  test('a shopper changes the name, and markup in it is shown as the characters typed', async (t) => {
    await store.customer('Charles Babbage', 'charles@example.com', 'analytical engine 1837');
    await store.open(t, async ({ page, status }) => {
      await signIn(page, 'charles@example.com', 'analytical engine 1837');
      const name = page.locator('#profile').getByLabel('Name');
      assert.equal(await name.inputValue(), 'Charles Babbage', 'the form starts from the current name');
      await name.fill('Charles <b>B.</b>');
      await page.locator('#profile').getByRole('button', { name: 'Save name' }).click();
      await status('Your name is now Charles <b>B.</b>', 'success');
      await page.locator('#account').getByText('Signed in as Charles <b>B.</b> (charles@example.com).').waitFor();
      assert.equal(await page.locator('#account-name').textContent(), 'Charles <b>B.</b>');
      assert.equal(await page.locator('main b').count(), 0, 'no element made from the name');
      await page.reload();
      await page.locator('#account').getByText('Signed in as Charles <b>B.</b>').waitFor();
    });
  });

  test('a store paused while the account area is open disables all of it, and a new check opens it again', async (t) => {
    await store.customer('Ida Rhodes', 'ida@example.com', 'punched cards 1949');
    const other = createStorefrontAuthClient({ baseUrl: store.service.url });
    await other.login({ identity: 'ida@example.com', password: 'punched cards 1949' });
    await store.open(t, async ({ page, shot }) => {
      await signIn(page, 'ida@example.com', 'punched cards 1949');
      const revoke = page.locator('#sessions').getByRole('button', { name: 'Revoke' });
      assert.equal(await revoke.isEnabled(), true);
      await store.setStoreStatus('paused');
      try {
        await page.locator('#profile').getByRole('button', { name: 'Save name' }).click();
        const closed = page.getByRole('alert').filter({ hasText: 'Babbage Books is not taking sign-ins right now.' });
        await closed.waitFor();
        const controls = page.locator('#account').locator('button:visible, input:visible');
        assert.ok((await controls.count()) > 8);
        for (const control of await controls.all()) {
          assert.equal(await control.isDisabled(), true, `${await control.evaluate((e) => e.outerHTML)} is disabled`);
        }
        await assertAccessible(page, 'the account area of a paused store');
        await shot('account-paused');
        await store.setStoreStatus('active');
        await closed.getByRole('button', { name: 'Check again' }).click();
        await closed.waitFor({ state: 'hidden' });
        assert.equal(await revoke.isEnabled(), true);
        assert.equal(await page.locator('#export').getByRole('button', { name: 'Download my data' }).isEnabled(), true);
      } finally {
        await store.setStoreStatus('active');
      }
    });
  });

  test('a shopper changes the email address with the code sent to the new one; a wrong code is a sentence', async (t) => {
    await store.customer('Ada Byron', 'ada.byron@example.com', 'poetical science 1843');
    await store.open(t, async ({ page, shot, status }) => {
      await signIn(page, 'ada.byron@example.com', 'poetical science 1843');
      const section = page.locator('#identity-change');
      assert.equal(await section.getByRole('heading').textContent(), 'Change your email address');
      await section.getByLabel('New email address').fill('ada.lovelace@example.com');
      await section.getByLabel('Current password').fill('poetical science 1843');
      const mark = store.service.logs.length;
      await section.getByRole('button', { name: 'Send a code' }).click();
      await status('We sent a code to ada.lovelace@example.com; enter it below.', 'success');
      const code = section.getByLabel('Six-digit code');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'identity-confirm-code');
      assert.equal(
        await section.locator('#identity-confirm-sent').textContent(),
        'Enter the code we sent to ada.lovelace@example.com.',
        'said next to the field, too',
      );
      assert.equal(await section.getByLabel('New email address').isHidden(), true, 'the first step is put away');
      await assertAccessible(page, 'the code step of the email change');
      await shot('identity-code-step');

      const sent = await waitForCode(store.service, 'ada.lovelace@example.com', 'identity_change', { from: mark });
      await code.fill(String((Number(sent) + 1) % 1_000_000).padStart(6, '0'));
      await section.getByRole('button', { name: 'Confirm' }).click();
      const refused = await status(
        'That code is wrong, has expired or was already used. Check it, or ask for a new code.',
        'error',
      );
      assert.doesNotMatch(refused, /invalid_identity_challenge|422/);
      await page.locator('#account').getByText('(ada.byron@example.com)').waitFor();

      await code.fill(sent);
      await section.getByRole('button', { name: 'Confirm' }).click();
      await status('Your account now uses ada.lovelace@example.com. Every other device was signed out.', 'success');
      await page.locator('#account').getByText('Signed in as Ada Byron (ada.lovelace@example.com).').waitFor();
      assert.equal(await section.getByLabel('New email address').isVisible(), true, 'back to the first step');
      await shot('identity-changed');
      await page.reload();
      await page.locator('#account').getByText('(ada.lovelace@example.com)').waitFor();
    });
  });

  test("a shopper downloads their data: the file is the caller's JSON, and a second one within the minute is refused in words", async (t) => {
    await store.customer('Mary Somerville', 'mary@example.com', 'mechanism heavens 1831');
    await store.customer('Someone Else', 'else@example.com', 'someone else 1234');
    await store.open(t, async ({ page, status }) => {
      await signIn(page, 'mary@example.com', 'mechanism heavens 1831');
      const button = page.locator('#export').getByRole('button', { name: 'Download my data' });
      const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
      await status(/^Your data is downloading as account-export-\d{4}-\d{2}-\d{2}\.json\.$/, 'success');
      assert.match(download.suggestedFilename(), /^account-export-\d{4}-\d{2}-\d{2}\.json$/);
      const file = await download.path();
      const data = JSON.parse(await fs.readFile(file, 'utf8')) as {
        customer: { name: string; identity: { value: string } };
        sessions: Array<{ current: boolean }>;
      };
      assert.equal(data.customer.name, 'Mary Somerville');
      assert.equal(data.customer.identity.value, 'mary@example.com');
      assert.equal(data.sessions.filter((session) => session.current).length, 1);
      assert.doesNotMatch(JSON.stringify(data), /else@example\.com|Someone Else/, 'nothing about anyone else');

      await button.click();
      const refused = await status(/^Your data was downloaded a moment ago\. Try again in \d+ seconds?\.$/, 'error');
      assert.doesNotMatch(refused, /rate_limited|429/);
    });
  });

  test('a shopper deletes the account after confirming with the password, and the address can register again', async (t) => {
    await store.customer('Hertha Ayrton', 'hertha@example.com', 'electric arc 1902');
    await store.open(t, async ({ page, shot, status }) => {
      await signIn(page, 'hertha@example.com', 'electric arc 1902');
      const section = page.locator('#delete');
      assert.equal(await section.getByLabel('Current password').isHidden(), true, 'nothing to type before asking');
      await section.getByRole('button', { name: 'Delete my account…' }).click();
      const password = section.getByLabel('Current password');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'delete-password');
      await assertAccessible(page, 'the confirmation of a deletion');
      await shot('delete-confirm');

      // Changing one's mind deletes nothing.
      await section.getByRole('button', { name: 'Keep my account' }).click();
      await status('Your account is kept.', 'success');
      assert.equal(await password.isHidden(), true);

      await section.getByRole('button', { name: 'Delete my account…' }).click();
      await password.fill('not the password 9');
      await section.getByRole('button', { name: 'Delete my account for good' }).click();
      await status('Some fields need another look', 'error');
      assert.equal(await page.locator('#delete-password-error').textContent(), 'Is not correct.');
      assert.equal(await page.locator('#account').isVisible(), true, 'still signed in, nothing deleted');

      await password.fill('electric arc 1902');
      await section.getByRole('button', { name: 'Delete my account for good' }).click();
      await status('Your account and everything it held are deleted, and every device is signed out.', 'success');
      assert.equal(await page.locator('#login').isVisible(), true);
      assert.equal(await page.locator('#account').isHidden(), true);
      await assertAccessible(page, 'the page after a deletion');
      await shot('deleted');

      await logIn(page, 'hertha@example.com', 'electric arc 1902');
      await status('is not right', 'error');
      await register(page, 'Hertha Ayrton', 'hertha@example.com', 'new beginning 2026');
      await status('Account created. We sent a code to hertha@example.com', 'success');
    });
  });
});

describe('the account area of a phone store', () => {
  const store = serviceFor('phone', { STORE_IDENTITY_MODE: 'phone' });

  test('at 375 px a shopper changes the phone number with the code texted to the new one', async (t) => {
    await store.customer('Tom Thumb', '+447911123456', 'little finger 77');
    await store.open(
      t,
      async ({ page, shot, status }) => {
        const login = page.locator('#login');
        await login.getByLabel('Phone number').fill('+447911123456');
        await login.getByLabel('Password').fill('little finger 77');
        await login.getByRole('button', { name: 'Log in' }).click();
        await status('You are signed in.', 'success');
        const section = page.locator('#identity-change');
        assert.equal(await section.getByRole('heading').textContent(), 'Change your phone number');
        const number = section.getByLabel('New phone number');
        assert.equal(await number.getAttribute('type'), 'tel');
        assert.equal(await number.getAttribute('name'), 'phone');
        await number.fill('+44 7911 123999');
        await section.getByLabel('Current password').fill('little finger 77');
        const mark = store.service.logs.length;
        await section.getByRole('button', { name: 'Send a code' }).click();
        await status('We sent a code to +44 7911 123999; enter it below.', 'success');
        const code = await waitForCode(store.service, '+447911123999', 'identity_change', { from: mark });
        await section.getByLabel('Six-digit code').fill(code);
        await assertNoSidewaysScroll(page, 'the code step at 375 px');
        await assertAccessible(page, 'the code step of a phone change at 375 px');
        await section.getByRole('button', { name: 'Confirm' }).click();
        await status('Your account now uses +447911123999.', 'success');
        await page.locator('#account').getByText('Signed in as Tom Thumb (+447911123999).').waitFor();
        await shot('phone-changed-375');
      },
      phone,
    );
  });
});
