// The sign-in page in a real headless Chromium against a real running service.
// Not picked up by `npm test`; run with:  node --import tsx --test test/browser/page.browser.ts
// Needs /usr/bin/chromium (Debian: apt-get install -y chromium). Screenshots of every step go to
// .test-artifacts/screenshots (or SCREENSHOT_DIR).
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createStorefrontAuthClient } from '../../packages/client/src/index.js';
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
  type PageSession,
} from '../helpers/browser.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import {
  runCliOk,
  setStoreStatus as setStoreStatusOf,
  startService,
  type ServiceProcess,
} from '../helpers/service-process.js';
import { waitForCode } from '../client/service-codes.js';

const shots = screenshots();
let browser: Browser;

before(async () => {
  [browser] = await Promise.all([launchChromium(), shots.clear()]);
});

after(async () => {
  await browser?.close();
});

function openPage(
  t: TestContext,
  service: ServiceProcess,
  run: (session: PageSession) => Promise<void>,
  viewport?: { width: number; height: number },
) {
  return openBrowserPage(browser, shots, t, service, run, viewport);
}

/** Rows of the visible view buttons, by their top edge, each with its buttons' names. */
async function tabRows(page: Page) {
  const boxes = await page.locator('#views button').evaluateAll((buttons) =>
    buttons.map((button) => {
      // The line boxes of the label: more than one distinct top means the label wrapped.
      const range = document.createRange();
      range.selectNodeContents(button);
      const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
      return { name: button.textContent?.trim() ?? '', top: Math.round(button.getBoundingClientRect().top), lines };
    }),
  );
  const rows = new Map<number, string[]>();
  for (const box of boxes) rows.set(box.top, [...(rows.get(box.top) ?? []), box.name]);
  return { rows: [...rows.values()], wrapped: boxes.filter((box) => box.lines > 1).map((box) => box.name) };
}

describe('the sign-in page of an email store', () => {
  let backend: ServiceBackend | undefined;
  let service: ServiceProcess;

  before(async () => {
    backend = await serviceBackend('page');
    service = await startService({ ...backend.env, LOG_LEVEL: 'info', STORE_NAME: 'Lovelace Books' });
  });

  after(async () => {
    await service?.stop();
    await backend?.remove();
  });

  /** An account made through the API, so a test can start from a known customer. */
  async function existingCustomer(email: string, password: string) {
    const client = createStorefrontAuthClient({ baseUrl: service.url });
    await client.register({ name: 'Existing Customer', email, password, password_confirmation: password });
  }

  const setStoreStatus = (status: 'paused' | 'active') => setStoreStatusOf(service, backend!.env, status);

  test('a shopper registers, verifies with the emailed code, logs in, is recognised after a reload and logs out', async (t) => {
    await openPage(t, service, async ({ page, shot, status }) => {
      assert.equal(await page.title(), 'Sign in · Lovelace Books');
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Lovelace Books');
      await page.locator('#login').waitFor();
      await shot('login-form');

      await page.getByRole('navigation').getByRole('button', { name: 'Create an account' }).click();
      const identity = page.locator('#register').getByLabel('Email address');
      assert.equal(await identity.getAttribute('type'), 'email');
      assert.equal(await identity.getAttribute('autocomplete'), 'email');
      assert.equal(
        await page.locator('#register').getByLabel('Password', { exact: true }).getAttribute('autocomplete'),
        'new-password',
      );
      await shot('register-form');

      const mark = service.logs.length;
      await register(page, 'Ada Lovelace', 'Ada@Example.com', 'analytical engine 1843');
      await status('Account created. We sent a code to ada@example.com', 'success');
      const verify = page.locator('#verify');
      assert.equal(
        await verify.getByLabel('Email address').inputValue(),
        'ada@example.com',
        'the verify form knows who',
      );
      const codeInput = verify.getByLabel('Six-digit code');
      assert.equal(await codeInput.getAttribute('inputmode'), 'numeric');
      assert.equal(await codeInput.getAttribute('autocomplete'), 'one-time-code');
      await shot('registered-enter-code');

      const code = await waitForCode(service, 'ada@example.com', 'verification', { from: mark });
      await codeInput.fill(code);
      await verify.getByRole('button', { name: 'Verify' }).click();
      await status('Your email address is verified. You can log in now.', 'success');
      assert.equal(await page.locator('#login').getByLabel('Email address').inputValue(), 'ada@example.com');
      await shot('verified');

      assert.equal(
        await page.locator('#login').getByLabel('Password').getAttribute('autocomplete'),
        'current-password',
      );
      await logIn(page, 'ada@example.com', 'analytical engine 1843');
      await status('Welcome, Ada Lovelace. You are signed in.', 'success');
      const account = page.locator('#account');
      assert.equal(
        (await account.getByText('Signed in as').textContent())?.replace(/\s+/g, ' '),
        'Signed in as Ada Lovelace (ada@example.com).',
      );
      assert.equal(await page.getByRole('navigation').isHidden(), true, 'signed in, the sign-in choices are gone');
      await shot('signed-in');

      await page.reload();
      await page.locator('body:not([aria-busy])').waitFor();
      await account.getByText('Signed in as Ada Lovelace').waitFor();
      await shot('signed-in-after-reload');

      await account.getByRole('button', { name: 'Log out' }).click();
      await status('You are signed out.', 'success');
      await page.locator('#login').waitFor();
      await shot('signed-out');
      await page.reload();
      await page.locator('#login').waitFor();
      assert.equal(await account.isHidden(), true, 'after a reload the page still knows nobody is signed in');
    });
  });

  test('a shopper who forgot the password gets a code, sets a new password and logs in with it', async (t) => {
    await existingCustomer('grace@example.com', 'compiler cobol 1959');
    await openPage(t, service, async ({ page, shot, status }) => {
      await page.getByRole('navigation').getByRole('button', { name: 'Forgot your password?' }).click();
      await page.locator('#forgot').getByLabel('Email address').fill('grace@example.com');
      await shot('forgot-form');
      const mark = service.logs.length;
      await page.locator('#forgot').getByRole('button', { name: 'Send a reset code' }).click();
      await status('If an account uses grace@example.com, we sent it a reset code', 'success');

      const reset = page.locator('#reset');
      assert.equal(await reset.getByLabel('Email address').inputValue(), 'grace@example.com');
      const code = await waitForCode(service, 'grace@example.com', 'password_reset', { from: mark });
      await reset.getByLabel('Six-digit code').fill(code);
      await reset.getByLabel('New password', { exact: true }).fill('flow matic 1955');
      await reset.getByLabel('Confirm new password').fill('flow matic 1955');
      assert.equal(
        await reset.getByLabel('New password', { exact: true }).getAttribute('autocomplete'),
        'new-password',
      );
      await shot('reset-form');
      await reset.getByRole('button', { name: 'Set new password' }).click();
      await status('Your password is changed', 'success');
      await shot('password-reset');

      await logIn(page, 'grace@example.com', 'compiler cobol 1959');
      await status('The email address or password is not right.', 'error');
      await logIn(page, 'grace@example.com', 'flow matic 1955');
      await page.locator('#account').getByText('Signed in as Existing Customer (grace@example.com).').waitFor();
      await shot('signed-in-with-new-password');
    });
  });

  test('a wrong password is shown as a human message, never as an error code', async (t) => {
    await existingCustomer('wrong@example.com', 'right password 11');
    await openPage(t, service, async ({ page, shot, status }) => {
      await logIn(page, 'wrong@example.com', 'not the password 1');
      const message = await status('The email address or password is not right. Check them and try again.', 'error');
      assert.doesNotMatch(message, /unauthenticated|401/);
      assert.equal(await page.locator('#account').isHidden(), true);
      await shot('wrong-password');
    });
  });

  test('field errors from the server are shown next to their fields', async (t) => {
    await openPage(t, service, async ({ page, shot, status }) => {
      await register(page, 'Bad Input', 'not-an-email', 'short', 'different');
      await status('Some fields need another look', 'error');
      const form = page.locator('#register');
      for (const label of ['Email address', 'Confirm password']) {
        const input = form.getByLabel(label);
        assert.equal(await input.getAttribute('aria-invalid'), 'true', `${label} is marked invalid`);
        const errorId = `${await input.getAttribute('id')}-error`;
        assert.ok(
          (await input.getAttribute('aria-describedby'))?.split(' ').includes(errorId),
          `${label} is described by its error`,
        );
        assert.ok(((await page.locator(`#${errorId}`).textContent()) ?? '').length > 0);
      }
      assert.equal(
        await page.locator('#register-password-confirmation-error').textContent(),
        'Must match the password.',
      );
      assert.equal(await form.getByLabel('Name').getAttribute('aria-invalid'), null, 'a valid field is not marked');
      await shot('field-errors');
    });
  });

  for (const [label, viewport] of [
    ['375 px', phone],
    ['desktop', desktop],
  ] as const) {
    test(`at ${label} the view buttons sit in two full rows, no label wrapped and none orphaned`, async (t) => {
      await openPage(
        t,
        service,
        async ({ page, shot }) => {
          await page.locator('#login').waitFor();
          const { rows, wrapped } = await tabRows(page);
          assert.deepEqual(wrapped, [], 'every label fits on one line');
          assert.deepEqual(rows, [
            ['Log in', 'Create an account'],
            ['Forgot your password?', 'Verify an account'],
          ]);
          await assertNoSidewaysScroll(page);
          await shot(`layout-${viewport.width}`);
        },
        viewport,
      );
    });

    test(`at ${label} axe-core finds no accessibility violation on any view`, async (t) => {
      await existingCustomer(`axe-${viewport.width}@example.com`, 'accessible page 2024');
      await openPage(
        t,
        service,
        async ({ page, shot, status }) => {
          const nav = page.getByRole('navigation');
          await page.locator('#login').waitFor();
          await assertAccessible(page, `sign-in at ${label}`);
          for (const [button, view] of [
            ['Create an account', 'register'],
            ['Verify an account', 'verify'],
            ['Forgot your password?', 'forgot'],
          ] as const) {
            await nav.getByRole('button', { name: button }).click();
            await page.locator(`#${view}`).waitFor();
            await assertAccessible(page, `${view} at ${label}`);
          }
          await page.locator('#forgot').getByRole('button', { name: 'I already have a reset code' }).click();
          await page.locator('#reset').waitFor();
          await assertAccessible(page, `reset at ${label}`);

          await nav.getByRole('button', { name: 'Log in' }).click();
          await logIn(page, `axe-${viewport.width}@example.com`, 'wrong password 1');
          await status('is not right', 'error');
          await assertAccessible(page, `a failed sign-in at ${label}`);
          await logIn(page, `axe-${viewport.width}@example.com`, 'accessible page 2024');
          await status('You are signed in.', 'success');
          await assertAccessible(page, `signed in at ${label}`);
          await shot(`signed-in-${viewport.width}`);
        },
        viewport,
      );
    });
  }

  test('a store that does not offer sign-in codes shows no way to ask for one', async (t) => {
    await openPage(t, service, async ({ page }) => {
      await page.locator('#login').waitFor();
      assert.equal(await page.locator('#code-path').isHidden(), true);
      assert.equal(await page.getByRole('button', { name: 'Email me a code instead' }).count(), 0);
    });
  });

  test('the page has an SVG favicon, served as an image the CSP allows', async (t) => {
    await openPage(t, service, async ({ page }) => {
      const href = await page.locator('link[rel="icon"]').getAttribute('href');
      assert.equal(href, '/favicon.svg');
      const answer = await page.evaluate(async (url) => {
        const response = await fetch(url);
        // Drawn as an image, so the page's CSP (img-src) is what decides; a refusal logs a violation.
        const image = new Image();
        image.src = url;
        await image.decode();
        return { status: response.status, type: response.headers.get('content-type'), width: image.naturalWidth };
      }, href);
      assert.equal(answer.status, 200);
      assert.match(answer.type ?? '', /^image\/svg\+xml\b/);
      assert.ok(answer.width > 0, 'the icon draws');
    });
  });

  test('while the store is paused the forms are disabled with a sentence saying why, and a new check opens them again', async (t) => {
    const notice = 'Lovelace Books is not taking sign-ins right now.';
    await setStoreStatus('paused');
    try {
      await openPage(t, service, async ({ page, shot, status }) => {
        const closed = page.getByRole('alert').filter({ hasText: notice });
        await closed.waitFor();
        for (const form of ['login', 'register', 'verify', 'forgot', 'reset']) {
          const controls = page.locator(`#${form}-form`).locator('input, button');
          assert.ok((await controls.count()) > 0);
          for (const control of await controls.all()) {
            assert.equal(await control.isDisabled(), true, `#${form}-form controls are disabled`);
          }
        }
        await assertAccessible(page, 'the paused page');
        await shot('store-paused');

        // Still paused: checking again keeps the forms shut.
        await closed.getByRole('button', { name: 'Check again' }).click();
        await closed.waitFor();
        await page.locator('#login-form button[type="submit"]:disabled').waitFor();

        await setStoreStatus('active');
        await closed.getByRole('button', { name: 'Check again' }).click();
        await closed.waitFor({ state: 'hidden' });
        await status('Lovelace Books is taking sign-ins again.', 'success');
        const login = page.locator('#login');
        assert.equal(await login.getByLabel('Email address').isEnabled(), true);
        assert.equal(await login.getByRole('button', { name: 'Log in' }).isEnabled(), true);
        await shot('store-open-again');
      });
    } finally {
      await setStoreStatus('active');
    }
  });

  test('a store paused while the page is open shuts the form that met it', async (t) => {
    await existingCustomer('paused@example.com', 'closed for lunch 12');
    await openPage(t, service, async ({ page }) => {
      await page.locator('#login').waitFor();
      await setStoreStatus('paused');
      try {
        await logIn(page, 'paused@example.com', 'closed for lunch 12');
        await page.getByRole('alert').filter({ hasText: 'Lovelace Books is not taking sign-ins right now.' }).waitFor();
        assert.equal(await page.locator('#login').getByRole('button', { name: 'Log in' }).isDisabled(), true);
        assert.equal(await page.locator('#status').textContent(), '', 'one message, not two');
      } finally {
        await setStoreStatus('active');
      }
    });
  });

  test('a second reset code request within the minute shows the Retry-After wait in words', async (t) => {
    await openPage(t, service, async ({ page, shot, status }) => {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        await page.getByRole('navigation').getByRole('button', { name: 'Forgot your password?' }).click();
        await page.locator('#forgot').getByLabel('Email address').fill('hurry@example.com');
        await page.locator('#forgot').getByRole('button', { name: 'Send a reset code' }).click();
        if (attempt === 0) await status('we sent it a reset code', 'success');
      }
      await status(/^Too many attempts\. Try again in \d+ seconds?\.$/, 'error');
      await shot('rate-limited');
    });
  });

  test('a missing XSRF-TOKEN cookie is fetched again before the form is sent', async (t) => {
    await existingCustomer('nocookie@example.com', 'cookie monster 42');
    await openPage(t, service, async ({ page, api, status }) => {
      await logIn(page, 'nocookie@example.com', 'wrong guess 1');
      await status('is not right', 'error'); // the page has a token now
      await page.context().clearCookies({ name: 'XSRF-TOKEN' });
      const from = api.length;
      await logIn(page, 'nocookie@example.com', 'cookie monster 42');
      // Signed in, the account area lists the devices: that call is the last one.
      await page.locator('#sessions:not([aria-busy]) #sessions-list li').first().waitFor();
      assert.deepEqual(api.slice(from), [
        'GET /api/v1/csrf-cookie 204',
        'POST /api/v1/customer/auth/login 200',
        'GET /api/v1/customer/auth/sessions 200',
      ]);
    });
  });

  test('a refused XSRF token (419) is refreshed once and the submission succeeds', async (t) => {
    await existingCustomer('stale@example.com', 'stale bread 99');
    await openPage(t, service, async ({ page, api, shot, status }) => {
      await logIn(page, 'stale@example.com', 'stale bread 99');
      await page.locator('#sessions:not([aria-busy]) #sessions-list li').first().waitFor();
      // A token the server never signed, as after a secret rotation or a token of another session.
      await page.context().addCookies([{ name: 'XSRF-TOKEN', value: 'stale.token', url: service.url }]);
      const from = api.length;
      await page.locator('#account').getByRole('button', { name: 'Log out' }).click();
      await status('You are signed out.', 'success');
      assert.deepEqual(api.slice(from), [
        'POST /api/v1/customer/auth/logout 419',
        'GET /api/v1/csrf-cookie 204',
        'POST /api/v1/customer/auth/logout 200',
      ]);
      await shot('signed-out-after-token-refresh');
    });
  });
});

describe('the sign-in page of a phone store', () => {
  let backend: ServiceBackend | undefined;
  let service: ServiceProcess;

  before(async () => {
    backend = await serviceBackend('page-phone');
    service = await startService({
      ...backend.env,
      LOG_LEVEL: 'info',
      STORE_NAME: 'Corner Shop',
      STORE_IDENTITY_MODE: 'phone',
    });
  });

  after(async () => {
    await service?.stop();
    await backend?.remove();
  });

  test('a shopper registers with a phone number and verifies it with the texted code', async (t) => {
    await openPage(t, service, async ({ page, shot, status }) => {
      assert.equal(await page.title(), 'Sign in · Corner Shop');
      assert.equal(await page.locator('input[type="email"]').count(), 0, 'no email field on a phone store');
      await page.getByRole('navigation').getByRole('button', { name: 'Create an account' }).click();
      const phone = page.locator('#register').getByLabel('Phone number');
      assert.equal(await phone.getAttribute('type'), 'tel');
      assert.equal(await phone.getAttribute('name'), 'phone');
      assert.equal(await phone.getAttribute('autocomplete'), 'tel');
      await shot('phone-register-form');

      const mark = service.logs.length;
      await register(page, 'Tom Thumb', '+44 7911 123456', 'little finger 77');
      await status('Account created. We sent a code to +447911123456', 'success');
      const code = await waitForCode(service, '+447911123456', 'verification', { from: mark });
      const verify = page.locator('#verify');
      assert.equal(await verify.getByLabel('Phone number').inputValue(), '+447911123456');
      await verify.getByLabel('Six-digit code').fill(code);
      await verify.getByRole('button', { name: 'Verify' }).click();
      await status('Your phone number is verified.', 'success');

      const login = page.locator('#login');
      await login.getByLabel('Password').fill('little finger 77');
      await login.getByRole('button', { name: 'Log in' }).click();
      await page.locator('#account').getByText('Signed in as Tom Thumb (+447911123456).').waitFor();
      await shot('phone-signed-in');
    });
  });
});

describe('the sign-in page of a store that offers sign-in codes', () => {
  let backend: ServiceBackend | undefined;
  let service: ServiceProcess;

  before(async () => {
    backend = await serviceBackend('page-code');
    service = await startService({ ...backend.env, LOG_LEVEL: 'info', STORE_NAME: 'Hopper Hardware' });
    // Not offered until the operator turns it on; the page says so from its first load after.
    const offered = async () => (await (await fetch(service.url)).text()).includes('data-sign-in-with-code="true"');
    assert.equal(await offered(), false, 'off by default');
    await runCliOk(['store', 'set', '--sign-in-with-code', 'true'], backend.env);
    const deadline = Date.now() + 15_000;
    while (!(await offered())) {
      assert.ok(Date.now() < deadline, 'the page did not offer codes in time');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  after(async () => {
    await service?.stop();
    await backend?.remove();
  });

  for (const [label, viewport] of [
    ['375 px', phone],
    ['desktop', desktop],
  ] as const) {
    test(`at ${label} a shopper signs in with an emailed code instead of a password`, async (t) => {
      const email = `code-${viewport.width}@example.com`;
      const client = createStorefrontAuthClient({ baseUrl: service.url });
      await client.register({
        name: 'Grace Hopper',
        email,
        password: 'first compiler 1952',
        password_confirmation: 'first compiler 1952',
      });
      await openPage(
        t,
        service,
        async ({ page, shot, status, api }) => {
          await page.locator('#login').waitFor();
          await shot(`code-offered-${viewport.width}`);
          await page.locator('#login').getByRole('button', { name: 'Email me a code instead' }).click();
          const request = page.locator('#code');
          await request.waitFor();
          await assertAccessible(page, `the code request at ${label}`);
          await request.getByLabel('Email address').fill(email);
          await shot(`code-request-${viewport.width}`);
          const mark = service.logs.length;
          await request.getByRole('button', { name: 'Send me a code' }).click();
          await status(`If an account uses ${email}, we sent it a sign-in code`, 'success');

          const signIn = page.locator('#code-login');
          assert.equal(await signIn.getByLabel('Email address').inputValue(), email);
          const code = await waitForCode(service, email, 'sign_in', { from: mark });
          await signIn.getByLabel('Six-digit code').fill(String((Number(code) + 1) % 1_000_000).padStart(6, '0'));
          await signIn.getByRole('button', { name: 'Sign in' }).click();
          const refused = await status('That code is wrong, has expired or was already used.', 'error');
          assert.doesNotMatch(refused, /invalid_identity_challenge|422/);
          await assertAccessible(page, `a refused code at ${label}`);
          await signIn.getByLabel('Six-digit code').fill(code);
          await signIn.getByRole('button', { name: 'Sign in' }).click();
          await page.locator('#account').getByText(`Signed in as Grace Hopper (${email}).`).waitFor();
          await status('You are signed in.', 'success');
          assert.equal(await page.locator('#account-unverified').isHidden(), true, 'the code verified the address');
          await assertNoSidewaysScroll(page);
          await assertAccessible(page, `signed in with a code at ${label}`);
          await shot(`code-signed-in-${viewport.width}`);
          assert.ok(api.includes('POST /api/v1/customer/auth/code/login 200'));
        },
        viewport,
      );
    });
  }
});
