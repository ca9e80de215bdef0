// Signing in with a sign-in provider ("Continue with Google") on the sign-in page, in a real headless
// Chromium against a real running service and a real OpenID provider (oidc-provider, with its
// development login and consent pages): the buttons, the trip to the provider and back, the account
// area's linked providers with Link and Unlink, setting a password on an account a provider made,
// and the sentences for the way back's `?error=`.
// Not picked up by `npm test`; run with:  node --import tsx --test test/browser/providers.browser.ts
// Needs /usr/bin/chromium (Debian: apt-get install -y chromium). Screenshots go to
// .test-artifacts/screenshots (or SCREENSHOT_DIR), named providers-NN-….
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  assertAccessible,
  assertNoSidewaysScroll,
  launchChromium,
  logIn,
  openPage as openBrowserPage,
  phone,
  register,
  screenshots,
  statusOf,
  type PageSession,
} from '../helpers/browser.js';
import { testBackends } from '../helpers/database.js';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { runCliOk, startService, type ServiceProcess } from '../helpers/service-process.js';
import { waitForCode } from '../client/service-codes.js';

const auth = '/api/v1/customer/auth';
const shots = screenshots('providers-');
let browser: Browser;
let service: ServiceProcess;
let backend: ServiceBackend | undefined;
let op: TestOpenIdProvider | undefined;

/**
 * The provider's accounts, by the login name typed on its login page. Each login name is the
 * account's subject too, so the provider's session and its account agree however the helper
 * looks an account up (by login name or by subject).
 */
const accounts = {
  ada: { sub: 'ada', email: 'ada@example.com', email_verified: true, name: 'Ada Provider' },
  grace: { sub: 'grace', email: 'grace.hopper@provider.example', email_verified: true, name: 'Grace H.' },
  mallory: { sub: 'mallory', email: 'mallory@example.com', email_verified: false, name: 'Mallory' },
  ken: { sub: 'ken', email: 'ken@example.com', email_verified: true, name: 'Ken Iverson' },
};

before(async () => {
  backend = await serviceBackend('providers');
  [browser, service] = await Promise.all([
    launchChromium(),
    startService({ ...backend.env, LOG_LEVEL: 'info', STORE_NAME: 'Babbage Books' }),
    shots.clear(),
  ]);
  // The walk runs on this pass's backend: the service's own embedded server, or DATABASE_URL's.
  const listening = service.logs.find((entry) => String(entry['msg']).startsWith('Storefront Auth listening'));
  assert.equal(listening?.['mode'], testBackends.database);
  // The provider's one client may come back only to the service's own callback for `google`.
  op = await startOpenIdProvider({
    accounts,
    clients: [
      {
        client_id: 'babbage-books',
        client_secret: 'babbage-secret',
        redirect_uris: [`${service.url}${auth}/providers/google/callback`],
      },
    ],
  });
  // Added as an operator adds it; the issuer is the loopback provider instead of Google's.
  await runCliOk(
    [
      'store',
      'providers',
      'add',
      '--id',
      'google',
      '--preset',
      'google',
      '--issuer',
      op.issuer,
      '--client-id',
      'babbage-books',
      '--client-secret',
      'babbage-secret',
    ],
    backend.env,
  );
  // Every instance sees a store change at most 2 seconds late: wait until the service lists it.
  const deadline = Date.now() + 15_000;
  for (;;) {
    const reply = await fetch(`${service.url}${auth}/providers`);
    const body = (await reply.json()) as { providers?: Array<{ id: string; name: string }> };
    if (body.providers?.some((provider) => provider.id === 'google')) break;
    assert.ok(Date.now() < deadline, 'the service did not list the provider in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

after(async () => {
  await browser?.close();
  await op?.close();
  await service?.stop();
  await backend?.remove();
});

function openPage(
  t: TestContext,
  run: (session: PageSession) => Promise<void>,
  viewport?: { width: number; height: number },
) {
  return openBrowserPage(
    browser,
    shots,
    t,
    service,
    async (session) => {
      // The provider's development pages import a web font; nothing here reaches the internet.
      await session.page.route(/^https:\/\/fonts\.(googleapis|gstatic)\.com\//, (route) => route.abort());
      await run(session);
    },
    viewport,
  );
}

/** Back on the service's page from the provider, once the page knows who is signed in. */
async function backOnThePage(page: Page) {
  await page.waitForURL((url) => url.origin === service.url);
  await page.locator('body:not([aria-busy])').waitFor();
}

/** At the provider: signs in on its login page as `login` (any password) and consents. */
async function signInAtProvider(page: Page, login: keyof typeof accounts, shot?: (step: string) => Promise<void>) {
  await page.waitForURL((url) => url.origin === op!.issuer);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  if (shot) await shot('provider-login');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await backOnThePage(page);
}

/** The account area's provider list once the page has filled it. */
async function providersSection(page: Page) {
  const section = page.locator('#providers');
  await page.locator('#providers:not([hidden]):not([aria-busy])').waitFor();
  await page.locator('#providers-list li, #providers-empty:not([hidden])').first().waitFor();
  return section;
}

describe('sign-in providers on the sign-in page', () => {
  test('a new shopper continues with Google, comes back signed in, sees it linked, and cannot unlink the only way in', async (t) => {
    await openPage(t, async ({ page, api, shot, status }) => {
      const login = page.locator('#login');
      const google = login.getByRole('link', { name: 'Continue with Google' });
      await google.waitFor();
      assert.equal(
        await google.getAttribute('href'),
        `${auth}/providers/google/start?return_to=%2F`,
        'a navigation to the start, coming back to this page',
      );
      await assertAccessible(page, 'the log-in view with a provider');
      await shot('log-in-with-provider');

      await page.getByRole('navigation').getByRole('button', { name: 'Create an account' }).click();
      await page.locator('#register').getByRole('link', { name: 'Continue with Google' }).waitFor();
      await assertAccessible(page, 'the registration view with a provider');
      await shot('register-with-provider');

      await page.locator('#register').getByRole('link', { name: 'Continue with Google' }).click();
      await signInAtProvider(page, 'ada', shot);
      await status('Welcome, Ada Provider. You are signed in with Google.', 'success');
      assert.equal(page.url(), `${service.url}/`);
      const account = page.locator('#account');
      assert.equal(
        (await account.getByText('Signed in as').textContent())?.replace(/\s+/g, ' '),
        'Signed in as Ada Provider (ada@example.com).',
      );

      const section = await providersSection(page);
      const item = section.locator('#providers-list li');
      assert.equal(await item.count(), 1);
      assert.match((await item.textContent()) ?? '', /^Googleada@example\.com · linked .+$/);
      assert.ok(await item.locator('time').getAttribute('datetime'), 'the date carries its ISO value');
      assert.equal(await section.getByRole('link', { name: /^Link / }).count(), 0, 'nothing left to link');
      await assertAccessible(page, 'the account area with a linked provider');
      await shot('signed-in-with-provider');

      // Made by the provider, the account has no password: Google is its only way in.
      await item.getByRole('button', { name: 'Unlink' }).click();
      await status(/^This is the only way you can sign in; set a password first/, 'error');
      assert.ok(api.includes(`POST ${auth}/providers/google/unlink 409`));
      assert.equal(await section.locator('#providers-list li').count(), 1, 'still linked');
      await shot('unlink-refused-last-way-in');

      // A reload neither says it again nor forgets who is signed in.
      await page.reload();
      await page.locator('body:not([aria-busy])').waitFor();
      await account.getByText('Signed in as Ada Provider').waitFor();
      await providersSection(page);
      assert.equal(await page.locator('#status').textContent(), '');
    });
  });

  test('a shopper Google made an account for is asked for no current password, sets one with a code and logs in with it', async (t) => {
    await openPage(t, async ({ page, api, shot, status }) => {
      const mark = service.logs.length;
      await page.locator('#login').getByRole('link', { name: 'Continue with Google' }).click();
      await signInAtProvider(page, 'ken');
      await status('Welcome, Ken Iverson. You are signed in with Google.', 'success');
      const account = page.locator('#account');
      await providersSection(page);

      // No form asks for a password the account does not have; each says what it needs instead.
      assert.equal(await account.locator('input[name="current_password"]:visible').count(), 0);
      assert.equal(await page.locator('#password-change').isHidden(), true);
      assert.equal(await page.locator('#identity-change-form').isHidden(), true);
      await page
        .locator('#identity-change')
        .getByText('Changing your email address asks for your password, and your account has none yet.')
        .waitFor();
      assert.equal(await page.locator('#delete-start').isHidden(), true);
      await page
        .locator('#delete')
        .getByText('Deleting your account asks for your password, and your account has none yet.')
        .waitFor();
      const section = page.locator('#password-set');
      await section.getByText('Your account has no password yet').waitFor();
      await assertAccessible(page, 'the account area of an account without a password');
      await shot('account-without-password');

      await section.getByRole('button', { name: 'Send me a code' }).click();
      await status('We sent a code to ken@example.com; enter it below with your new password.', 'success');
      assert.ok(api.includes(`POST ${auth}/password/forgot 202`));
      assert.equal(
        await page.evaluate(() => document.activeElement?.id),
        'password-set-code',
        'the code field has focus',
      );
      const code = await waitForCode(service, 'ken@example.com', 'password_reset', { from: mark });
      await section.getByLabel('Six-digit code').fill(code);
      await section.getByLabel('New password', { exact: true }).fill('array language 1962');
      await section.getByLabel('Confirm new password').fill('array language 1962');
      await assertAccessible(page, 'the set-password form');
      await shot('set-password-with-code');
      await section.getByRole('button', { name: 'Set password' }).click();

      // A reset ends every session, this one too: the customer logs in with the new password.
      await status('Your password is set and every device was signed out. Log in with your new password.', 'success');
      assert.equal(await page.locator('#login').isVisible(), true);
      assert.equal(await page.locator('#login-identity').inputValue(), 'ken@example.com');
      await logIn(page, 'ken@example.com', 'array language 1962');
      await status('You are signed in.', 'success');
      await account.getByText('Signed in as Ken Iverson (ken@example.com).').waitFor();
      assert.equal(await page.locator('#password-change-current').isVisible(), true);
      assert.equal(await page.locator('#identity-change-password').isVisible(), true);
      assert.equal(await page.locator('#password-set').isHidden(), true);
      assert.equal(await page.locator('#identity-change-needs-password').isHidden(), true);
      await shot('password-set-logged-in');
    });
  });

  test('a customer with a password links Google from the account area and unlinks it again', async (t) => {
    await openPage(t, async ({ page, shot, status }) => {
      const mark = service.logs.length;
      await register(page, 'Grace Hopper', 'grace@example.com', 'compiler cobol 1959');
      await status('Account created. We sent a code to grace@example.com', 'success');
      await page.getByRole('navigation').getByRole('button', { name: 'Log in' }).click();
      await logIn(page, 'grace@example.com', 'compiler cobol 1959');
      await status('You are signed in.', 'success');

      // Until the address is proven the start would refuse a link: the page says why instead.
      let section = await providersSection(page);
      await section.getByText('Verify your email address before linking a provider.').waitFor();
      assert.equal(await section.getByRole('link', { name: 'Link Google' }).count(), 0);
      await shot('account-unverified-no-link');

      // Verified (which ends the earlier session), the customer signs in again.
      const code = await waitForCode(service, 'grace@example.com', 'verification', { from: mark });
      const verified = await fetch(`${service.url}${auth}/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identity: 'grace@example.com', code }),
      });
      assert.equal(verified.status, 200);
      await page.reload();
      await page.locator('body:not([aria-busy])').waitFor();
      await logIn(page, 'grace@example.com', 'compiler cobol 1959');
      await status('You are signed in.', 'success');
      section = await providersSection(page);
      await section.locator('#providers-empty').getByText('No provider is linked to your account yet.').waitFor();
      assert.equal(await section.getByText('Verify your email address').isHidden(), true);
      const link = section.getByRole('link', { name: 'Link Google' });
      assert.equal(
        await link.getAttribute('href'),
        `${auth}/providers/google/start?return_to=%2F&link=1`,
        'a navigation to the start, linking',
      );
      await assertAccessible(page, 'the account area with a provider to link');
      await shot('account-link-offered');

      await link.click();
      await signInAtProvider(page, 'grace');
      await status('Google is linked. You can sign in with it from now on.', 'success');
      await page.locator('#account').getByText('Signed in as Grace Hopper (grace@example.com).').waitFor();
      section = await providersSection(page);
      const item = section.locator('#providers-list li');
      await item.first().waitFor();
      assert.equal(await item.count(), 1);
      assert.match((await item.textContent()) ?? '', /^Googlegrace\.hopper@provider\.example · linked /);
      assert.equal(await section.getByRole('link', { name: 'Link Google' }).count(), 0);
      await assertAccessible(page, 'the account area with a provider linked');
      await shot('provider-linked');

      // The password is another way in: unlinking is allowed.
      await item.getByRole('button', { name: 'Unlink' }).click();
      await status('Google is unlinked. It can no longer sign in to your account.', 'success');
      await section.locator('#providers-empty:not([hidden])').waitFor();
      assert.equal(await section.locator('#providers-list li').count(), 0);
      await section.getByRole('link', { name: 'Link Google' }).waitFor();
      assert.equal(
        await page.evaluate(() => document.activeElement?.id),
        'providers-title',
        'focus stays in the section',
      );
      await shot('provider-unlinked');
    });
  });

  test('coming back with ?error= says what happened in words, once, and the address bar drops it', async (t) => {
    await openPage(
      t,
      async ({ page, shot, status }) => {
        // Cancelled on the provider's login page: the provider answers access_denied.
        await page.locator('#login').getByRole('link', { name: 'Continue with Google' }).click();
        await page.waitForURL((url) => url.origin === op!.issuer);
        await page.getByRole('link', { name: '[ Cancel ]' }).click();
        await backOnThePage(page);
        await status('You cancelled signing in with Google.', 'error');
        assert.equal(page.url(), `${service.url}/`, 'the error is gone from the address bar');
        assert.equal(await page.locator('#login').isVisible(), true);

        // The provider does not vouch for this email: no account is made or signed in.
        await page.locator('#login').getByRole('link', { name: 'Continue with Google' }).click();
        await signInAtProvider(page, 'mallory');
        await status('Google did not confirm your email address, so we could not sign you in with it.', 'error');
        assert.equal(page.url(), `${service.url}/`);
        assert.equal(await page.locator('#account').isHidden(), true);
        await assertNoSidewaysScroll(page, 'the error sentence at 375 px');
        await assertAccessible(page, 'the log-in view with a provider error');
        await shot('email-unverified');

        // Said once: a reload shows the page without it.
        await page.reload();
        await page.locator('body:not([aria-busy])').waitFor();
        assert.equal(await page.locator('#status').textContent(), '');

        // Arriving with an error this page did not start (another tab, a storefront's own link).
        const sentences: Array<[string, string]> = [
          ['provider_refused', 'You cancelled signing in with the provider.'],
          ['provider_error', 'Signing in with the provider did not work; please try again.'],
          ['store_unavailable', 'This store is not open right now.'],
          ['identity_unverified', 'Verify your email address before linking a provider.'],
          ['something_new', 'Signing in with the provider did not work; please try again.'],
          [
            'reauthentication_required',
            'For your security, linking the provider needs a recent sign-in: log out, log in again, then link it.',
          ],
          ['unauthenticated', 'Log in first, then link the provider.'],
          ['provider_in_use', 'That provider account already signs in to another account.'],
        ];
        for (const [code, sentence] of sentences) {
          await page.goto(`${service.url}/?error=${code}&keep=1`);
          await page.locator('body:not([aria-busy])').waitFor();
          assert.equal(await statusOf(page, sentence, 'error'), sentence);
          assert.equal(page.url(), `${service.url}/?keep=1`, 'only error leaves the address bar');
        }
        await shot('provider-in-use');
      },
      phone,
    );
  });
});
