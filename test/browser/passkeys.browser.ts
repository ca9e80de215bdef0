// Passkeys on the sign-in page in a real headless Chromium against a real running service, with a
// virtual authenticator (Chromium's DevTools WebAuthn domain: CTAP2, internal transport, resident
// keys, user verification) standing in for the device's screen lock.
// Not picked up by `npm test`; run with:  node --import tsx --test test/browser/passkeys.browser.ts
// Needs /usr/bin/chromium (Debian: apt-get install -y chromium). Screenshots go to a temporary
// folder (or SCREENSHOT_DIR), named passkeys-NN-….
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { assertAccessible, launchChromium, logIn, openPage, register, statusOf } from '../helpers/browser.js';
import { testBackends } from '../helpers/database.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { runCliOk, startService, type ServiceProcess } from '../helpers/service-process.js';
import { waitForCode } from '../client/service-codes.js';

let browser: Browser;
let service: ServiceProcess;
let backend: ServiceBackend | undefined;
let shotDir: string;
const taken: string[] = [];

/** Numbered full-page screenshots of each step, in a folder of this run's own. */
const shots = {
  get dir() {
    return shotDir;
  },
  async clear() {},
  async take(page: Page, step: string) {
    const file = path.join(shotDir, `passkeys-${String(taken.length + 1).padStart(2, '0')}-${step}.png`);
    await page.screenshot({ path: file, fullPage: true });
    taken.push(file);
  },
};

before(async () => {
  backend = await serviceBackend('passkeys');
  shotDir = process.env['SCREENSHOT_DIR']
    ? path.resolve(process.env['SCREENSHOT_DIR'])
    : await fs.mkdtemp(path.join(os.tmpdir(), 'sfa-passkeys-shots-'));
  await fs.mkdir(shotDir, { recursive: true });
  [browser, service] = await Promise.all([
    launchChromium(),
    startService({ ...backend.env, LOG_LEVEL: 'info', STORE_NAME: 'Babbage Books' }),
  ]);
  // The walk runs on this pass's backend: the service's own embedded server, or DATABASE_URL's.
  const listening = service.logs.find((entry) => String(entry['msg']).startsWith('Storefront Auth listening'));
  assert.equal(listening?.['mode'], testBackends.database);
  await runCliOk(['store', 'set', '--passkeys', 'true'], backend.env);
  // The page is served from the store context, which every instance reads at most 2 seconds late.
  const deadline = Date.now() + 15_000;
  while (!(await (await fetch(`${service.url}/`)).text()).includes('data-passkeys="true"')) {
    assert.ok(Date.now() < deadline, 'the page did not learn that the store offers passkeys');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

after(async () => {
  await browser?.close();
  await service?.stop();
  await backend?.remove();
});

/**
 * A virtual authenticator in the page's browser: a platform authenticator with resident keys that
 * verifies its user at once, as a phone's screen lock would.
 */
async function addVirtualAuthenticator(page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

describe('passkeys on the sign-in page', () => {
  test('add a passkey in the account area, sign in with it without typing, remove it, and it no longer signs in', async (t) => {
    // An IP address cannot be an RP ID: the page is opened at localhost, the default RP ID.
    const onLocalhost = { ...service, url: service.url.replace('127.0.0.1', 'localhost') };
    await openPage(browser, shots, t, onLocalhost, async ({ page, api, shot, status }) => {
      const { cdp, authenticatorId } = await addVirtualAuthenticator(page);
      const credentials = async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;

      const mark = service.logs.length;
      await register(page, 'Ada Lovelace', 'ada@example.com', 'analytical engine 1843');
      await status('Account created. We sent a code to ada@example.com', 'success');
      await shot('registered');
      await page.getByRole('navigation').getByRole('button', { name: 'Log in' }).click();
      await logIn(page, 'ada@example.com', 'analytical engine 1843');
      await status('You are signed in.', 'success');
      const section = page.locator('#passkeys');
      await section.locator('#passkeys-empty').waitFor();
      await shot('account-without-passkeys');

      // Until the address is proven the account is only a claim: no passkey yet.
      await section.getByLabel('Current password').fill('analytical engine 1843');
      await section.getByRole('button', { name: 'Add a passkey' }).click();
      await status(/Confirm your email address or phone number first/, 'error');
      assert.equal((await credentials()).length, 0, 'no ceremony ran');
      await shot('passkey-refused-unverified');

      // Verified from the page, the customer signs in again (verifying ended the earlier session).
      const code = await waitForCode(service, 'ada@example.com', 'verification', { from: mark });
      const verified = await fetch(`${onLocalhost.url}/api/v1/customer/auth/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identity: 'ada@example.com', code }),
      });
      assert.equal(verified.status, 200);
      await page.reload();
      await page.locator('body:not([aria-busy])').waitFor();
      await page.getByRole('navigation').getByRole('button', { name: 'Log in' }).click();
      await logIn(page, 'ada@example.com', 'analytical engine 1843');
      await status('You are signed in.', 'success');
      await section.locator('#passkeys-empty').waitFor();

      await section.getByLabel('Current password').fill('not the password 1');
      await section.getByRole('button', { name: 'Add a passkey' }).click();
      await status(/That is not your current password/, 'error');
      await section.getByLabel('Current password').fill('analytical engine 1843');
      await section.getByRole('button', { name: 'Add a passkey' }).click();
      // Named after the device, as the server words it (headless Chromium's user agent reads as Safari).
      assert.match(await status('Passkey added', 'success'), /Passkey added: [A-Za-z ]+ on Linux\./);
      await section.locator('#passkeys-list li').first().waitFor();
      assert.equal(await section.locator('#passkeys-list li').count(), 1);
      assert.match((await section.locator('#passkeys-list li').textContent()) ?? '', /not used yet/);
      const [stored] = await credentials();
      assert.ok(stored, 'the authenticator holds the passkey');
      assert.equal(stored.isResidentCredential, true);
      assert.equal(stored.rpId, 'localhost');
      await assertAccessible(page, 'the account area with a passkey');
      await shot('passkey-added');

      const identity = page.locator('#login-identity');
      assert.equal(await identity.getAttribute('autocomplete'), 'username webauthn');

      // Signing out shows the log-in form, whose identity field offers the device's passkeys
      // (conditional UI). The virtual authenticator picks its only one at once, as a customer would
      // from the suggestions: signed in again without a key pressed or a field filled.
      await page.getByRole('button', { name: 'Log out' }).click();
      await status('Welcome, Ada Lovelace. You are signed in.', 'success');
      assert.equal(await identity.inputValue(), '');
      assert.equal(await page.locator('#login-password').inputValue(), '');
      assert.deepEqual(api.slice(api.indexOf('POST /api/v1/customer/auth/logout 200')).slice(0, 3), [
        'POST /api/v1/customer/auth/logout 200',
        'POST /api/v1/customer/auth/passkeys/login/options 200',
        'POST /api/v1/customer/auth/passkeys/login 200',
      ]);
      await section.locator('#passkeys-list li', { hasText: 'last used' }).waitFor();
      await shot('signed-in-with-passkey');

      await section.getByRole('button', { name: 'Remove' }).click();
      await status('Passkey removed', 'success');
      await section.locator('#passkeys-empty').waitFor();
      assert.equal(await section.locator('#passkeys-list li').count(), 0);
      await shot('passkey-removed');

      // The device still offers its passkey, through the identity field as soon as the form shows
      // and through the button; the store accepts it no more.
      assert.equal((await credentials()).length, 1);
      await page.getByRole('button', { name: 'Log out' }).click();
      await statusOf(page, 'That passkey could not sign you in.', 'error');
      const refusals = () => api.filter((line) => line === 'POST /api/v1/customer/auth/passkeys/login 401').length;
      assert.equal(refusals(), 1);
      await page.locator('#status').evaluate((box) => (box.textContent = ''));
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await statusOf(page, 'That passkey could not sign you in.', 'error');
      assert.equal(refusals(), 2);
      assert.equal(await page.locator('#account').isHidden(), true);
      assert.equal(await page.locator('#login').isVisible(), true);
      await shot('removed-passkey-refused');
    });

    assert.equal(taken.length, 7);
    for (const file of taken) {
      const bytes = await fs.readFile(file);
      assert.ok(bytes.length > 1000, `${file} is not empty`);
      assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${file} is a PNG`);
      t.diagnostic(`screenshot ${file}`);
    }
  });
});
