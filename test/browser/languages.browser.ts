// The sign-in page in the store's languages, in a real headless Chromium against a real running
// service: English left to right, Arabic right to left, at a phone's width and a desktop's.
// Not picked up by `npm test`; run with:  node --import tsx --test test/browser/languages.browser.ts
// Needs /usr/bin/chromium (Debian: apt-get install -y chromium). Screenshots of every view in each
// language go to .test-artifacts/screenshots (or SCREENSHOT_DIR), named languages-NN-….png.
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createStorefrontAuthClient, StorefrontAuthError } from '../../packages/client/src/index.js';
import { catalogue } from '../../src/i18n/strings.js';
import {
  assertAccessible,
  assertNoSidewaysScroll,
  launchChromium,
  openPage as openBrowserPage,
  screenshots,
  statusOf,
  type PageSession,
} from '../helpers/browser.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { runCliOk, startService, type ServiceProcess } from '../helpers/service-process.js';

const shots = screenshots('languages-');
let browser: Browser;

before(async () => {
  [browser] = await Promise.all([launchChromium(), shots.clear()]);
});

after(async () => {
  await browser?.close();
});

const phone = { width: 375, height: 740 };
const desktop = { width: 1280, height: 800 };

/** A page string as the page shows it, without the isolates that keep inserted values in place. */
const text = (language: string, key: string, params: Record<string, string | number> = {}) =>
  catalogue.text(language, `page.${key}`, params);
const plain = (value: string | null) =>
  (value ?? '')
    .replace(/[\u2066-\u2069]/g, '')
    .replace(/\s+/g, ' ')
    .trim();

/** The `<html>` element's language and direction. */
function htmlAttributes(page: Page) {
  return page.evaluate(() => ({ lang: document.documentElement.lang, dir: document.documentElement.dir }));
}

/**
 * Fails on text the layout cuts: an element whose own text is wider than its box, or a box that
 * reaches past the card (section, nav, main) it sits in.
 */
async function assertNothingClipped(page: Page, where: string) {
  const clipped = await page.evaluate(() => {
    const problems: string[] = [];
    for (const element of document.querySelectorAll('main *')) {
      const ownText = [...element.childNodes].some(
        (node) => node.nodeType === Node.TEXT_NODE && (node.textContent ?? '').trim() !== '',
      );
      if (!ownText && !(element instanceof HTMLInputElement) && !(element instanceof HTMLButtonElement)) continue;
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || getComputedStyle(element).visibility === 'hidden') continue;
      const name = `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ''} "${(element.textContent ?? '').trim().slice(0, 40)}"`;
      // Inline boxes report no client width; their line boxes are measured against the card below.
      if (element.clientWidth > 0 && element.scrollWidth > element.clientWidth + 1)
        problems.push(`${name} is wider than its box (${element.scrollWidth} > ${element.clientWidth})`);
      const card = element.parentElement?.closest('section, nav, main, #closed, #status');
      if (card) {
        const outer = card.getBoundingClientRect();
        for (const rect of element.getClientRects())
          if (rect.left < outer.left - 1 || rect.right > outer.right + 1)
            problems.push(`${name} reaches past its ${card.tagName.toLowerCase()}`);
      }
    }
    return problems;
  });
  assert.deepEqual(clipped, [], `no clipped text on ${where}`);
}

/** What every view must be in every language at every width. */
async function checkView(session: PageSession, language: string, where: string) {
  const { page, shot } = session;
  assert.deepEqual(await htmlAttributes(page), { lang: language, dir: catalogue.direction(language) });
  assert.equal(
    await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
    true,
    `nothing scrolls sideways on ${where}`,
  );
  await assertNoSidewaysScroll(page, where);
  await assertNothingClipped(page, where);
  await assertAccessible(page, where);
  await shot(where.replace(/[^a-z0-9]+/gi, '-').toLowerCase());
}

describe('the sign-in page in the store’s languages', () => {
  let backend: ServiceBackend | undefined;
  let service: ServiceProcess;

  before(async () => {
    backend = await serviceBackend('languages');
    service = await startService({ ...backend.env, LOG_LEVEL: 'info', STORE_NAME: 'Lovelace Books' });
    const client = createStorefrontAuthClient({ baseUrl: service.url });
    await client.register({
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      password: 'analytical engine 1843',
      password_confirmation: 'analytical engine 1843',
    });
  });

  after(async () => {
    await service?.stop();
    await backend?.remove();
  });

  function openPage(t: TestContext, run: (session: PageSession) => Promise<void>, viewport = desktop) {
    return openBrowserPage(browser, shots, t, service, run, viewport);
  }

  /** The page's answer to a plain request: status, the headers that matter and the <html> tag. */
  async function pageAnswer(query: string, acceptLanguage?: string) {
    const reply = await fetch(`${service.url}/${query}`, {
      headers: acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage },
    });
    const html = await reply.text();
    return {
      status: reply.status,
      language: reply.headers.get('content-language'),
      vary: reply.headers.get('vary') ?? '',
      html: /<html[^>]*>/.exec(html)?.[0],
      languageSwitch: html.includes('id="languages"'),
    };
  }

  test('a store of one language answers in it whatever is asked, with no language switch', async (t) => {
    for (const [query, asked] of [
      ['', 'ar'],
      ['?lang=ar', undefined],
    ] as const) {
      const answer = await pageAnswer(query, asked);
      assert.equal(answer.status, 200);
      assert.equal(answer.language, 'en');
      assert.equal(answer.html, '<html lang="en" dir="ltr">');
      assert.equal(answer.languageSwitch, false);
      assert.match(answer.vary, /Accept-Language/i);
    }
    await openPage(t, async ({ page }) => {
      await page.setExtraHTTPHeaders({ 'accept-language': 'ar' });
      await page.goto(`${service.url}/?lang=ar`);
      await page.locator('#login').waitFor();
      assert.equal(await page.locator('#languages').count(), 0);
      assert.equal(await page.locator('#login h2').textContent(), 'Log in');
    });
  });

  test('with English and Arabic, Accept-Language picks the language and ?lang= overrides it', async () => {
    await runCliOk(['store', 'set', '--languages', 'en,ar', '--default-language', 'en'], backend!.env);
    // The service reads the store row through a short cache: ask until it speaks Arabic.
    const deadline = Date.now() + 15_000;
    while ((await pageAnswer('', 'ar')).language !== 'ar') {
      assert.ok(Date.now() < deadline, 'the service did not take the store’s languages in time');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const arabic = await pageAnswer('', 'ar-EG,ar;q=0.9,en;q=0.5');
    assert.equal(arabic.language, 'ar');
    assert.equal(arabic.html, '<html lang="ar" dir="rtl">');
    assert.match(arabic.vary, /Accept-Language/i);
    assert.equal(arabic.languageSwitch, true);

    assert.equal((await pageAnswer('?lang=en', 'ar')).html, '<html lang="en" dir="ltr">', '?lang=en wins');
    assert.equal((await pageAnswer('?lang=ar', 'en')).html, '<html lang="ar" dir="rtl">', '?lang=ar wins');
    assert.equal((await pageAnswer('?lang=fr', 'ar')).language, 'ar', 'a language the store lacks is not taken');
    assert.equal((await pageAnswer('', 'fr')).language, 'en', 'nothing the store speaks: its default');
    assert.equal((await pageAnswer('')).language, 'en');
  });

  for (const language of ['en', 'ar']) {
    for (const viewport of [phone, desktop]) {
      const size = `${viewport.width}x${viewport.height}`;
      test(`${catalogue.text(language, 'meta.name')} at ${size}: log in, register, verify and the account area read whole`, async (t) => {
        await openPage(
          t,
          async (session) => {
            const { page } = session;
            await page.setExtraHTTPHeaders({ 'accept-language': language });
            await page.goto(service.url);
            await page.locator('body:not([aria-busy])').waitFor();
            await page.locator('#login').waitFor();

            // The switch names each language in its own words, in its own language and direction.
            const links = page.locator('#languages a');
            assert.deepEqual(await links.evaluateAll((anchors) => anchors.map((a) => a.outerHTML)), [
              `<a href="?lang=en" hreflang="en" lang="en" dir="ltr"${language === 'en' ? ' aria-current="true"' : ''}>English</a>`,
              `<a href="?lang=ar" hreflang="ar" lang="ar" dir="rtl"${language === 'ar' ? ' aria-current="true"' : ''}>العربية</a>`,
            ]);
            assert.equal(await page.title(), text(language, 'title', { store: 'Lovelace Books' }));
            assert.equal(await page.locator('#login h2').textContent(), text(language, 'login.title'));
            // Emails and codes are typed left to right on either page.
            assert.equal(await page.locator('#login-identity').getAttribute('dir'), 'ltr');
            await checkView(session, language, `${language} ${size} log in`);

            await page.locator('#views [data-view="register"]').click();
            await page.locator('#register-name').waitFor();
            assert.equal(
              await page.locator('label[for="register-identity"]').textContent(),
              text(language, 'email.label'),
            );
            await checkView(session, language, `${language} ${size} register`);

            await page.locator('#views [data-view="verify"]').click();
            await page.locator('#verify-code').waitFor();
            assert.equal(await page.locator('#verify-code').getAttribute('dir'), 'ltr');
            assert.equal(await page.locator('#verify h2').textContent(), text(language, 'email.verify_title'));
            await checkView(session, language, `${language} ${size} verify code`);

            await page.locator('#views [data-view="login"]').click();
            await page.locator('#login-identity').fill('ada@example.com');
            await page.locator('#login-password').fill('analytical engine 1843');
            await page.locator('#login-form button[type="submit"]').click();
            await page.locator('#account').waitFor();
            const welcome = await statusOf(page, /\S/, 'success');
            assert.equal(plain(welcome), text(language, 'status.welcome', { name: 'Ada Lovelace' }));
            await page.locator('#sessions-list li').first().waitFor();
            // The identity stays left to right inside the sentence, whatever the page's direction.
            assert.equal(
              plain(await page.locator('#account-signed-in').textContent()),
              text(language, 'account.signed_in_as', { name: 'Ada Lovelace', identity: 'ada@example.com' }),
            );
            assert.equal(await page.locator('#account-identity').getAttribute('dir'), 'ltr');
            await checkView(session, language, `${language} ${size} account`);

            await page.locator('#logout').click();
            await statusOf(page, text(language, 'status.signed_out'), 'success');
          },
          viewport,
        );
      });
    }
  }

  test('an Arabic page sends its language: the API’s refusal is shown in the API’s Arabic words', async (t) => {
    const body = {
      name: 'Grace Hopper',
      email: 'grace@example.com',
      password: 'compiler 1952 nanosecond',
      password_confirmation: 'compiler 1952 nanoseconds',
    };
    // What the API itself says, asked in Arabic, of the same mistake.
    const arabicClient = createStorefrontAuthClient({ baseUrl: service.url, headers: { 'accept-language': 'ar' } });
    const refusal = await arabicClient.register(body).then(
      () => assert.fail('the API took a confirmation that does not match'),
      (error: StorefrontAuthError) => error,
    );
    assert.equal(refusal.code, 'validation_failed');
    const expected = refusal.errors['password_confirmation']!.join(' ');
    // Problem documents answer in the asked language where the service words them so (and say so).
    const problem = await fetch(`${service.url}/api/v1/customer/auth/session`, {
      headers: { 'accept-language': 'ar' },
    });
    await problem.arrayBuffer();
    if (problem.headers.get('content-language') === 'ar') assert.match(expected, /[\u0600-\u06ff]/);

    await openPage(
      t,
      async ({ page, shot }) => {
        const sent: Array<{ language: string | undefined; locale: unknown }> = [];
        page.on('request', (request) => {
          if (!request.url().includes('/api/v1/customer/auth/register')) return;
          sent.push({
            language: request.headers()['accept-language'],
            locale: (JSON.parse(request.postData() ?? '{}') as { locale?: unknown }).locale,
          });
        });
        await page.goto(`${service.url}/?lang=ar`);
        await page.locator('body:not([aria-busy])').waitFor();
        await page.locator('#views [data-view="register"]').click();
        await page.locator('#register-name').fill(body.name);
        await page.locator('#register-identity').fill(body.email);
        await page.locator('#register-password').fill(body.password);
        await page.locator('#register-password-confirmation').fill(body.password_confirmation);
        await page.locator('#register-form button[type="submit"]').click();

        await statusOf(page, text('ar', 'errors.validation_failed'), 'error');
        const fieldError = page.locator('#register-password-confirmation-error');
        await fieldError.waitFor();
        assert.equal(await fieldError.textContent(), expected);
        assert.deepEqual(sent, [{ language: 'ar', locale: 'ar' }]);
        await assertNothingClipped(page, 'the Arabic refusal');
        await assertAccessible(page, 'the Arabic refusal');
        await shot('ar-register-refused');
      },
      phone,
    );
  });
});
