// What the browser suites share: Debian's Chromium under playwright-core, a page opened on a running
// service that fails its test on any script error, CSP violation or 404, screenshots, and axe-core.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot, type ServiceProcess } from './service-process.js';

/**
 * Headless Chromium with nothing running in the background that could reach the network, and
 * any further command-line switches (host resolver rules, for a page on a named host).
 */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}

/** The widths the page must read well at: a small phone and a desktop window. */
export const phone = { width: 375, height: 812 };
export const desktop = { width: 1280, height: 900 };

/**
 * Numbered screenshots of a suite's steps in .test-artifacts/screenshots (or SCREENSHOT_DIR), each
 * name starting with `prefix`, so suites sharing the folder remove only their own earlier ones.
 */
export function screenshots(prefix = '') {
  const dir = process.env['SCREENSHOT_DIR']
    ? path.resolve(process.env['SCREENSHOT_DIR'])
    : path.join(repoRoot, '.test-artifacts/screenshots');
  const own = new RegExp(`^${prefix}\\d{2}-[a-z0-9-]+\\.png$`);
  let count = 0;
  return {
    dir,
    async clear() {
      await fs.mkdir(dir, { recursive: true });
      for (const name of await fs.readdir(dir)) if (own.test(name)) await fs.rm(path.join(dir, name));
    },
    async take(page: Page, step: string) {
      count += 1;
      await page.screenshot({
        path: path.join(dir, `${prefix}${String(count).padStart(2, '0')}-${step}.png`),
        fullPage: true,
      });
    },
  };
}

export type Screenshots = ReturnType<typeof screenshots>;

export interface PageSession {
  page: Page;
  /** `METHOD /path status` of every API answer the page received, in order. */
  api: string[];
  shot(step: string): Promise<void>;
  status(text: string | RegExp, kind?: 'success' | 'error'): Promise<string>;
}

/** Waits for the page's status line to say `text` (as a `kind` message) and returns all it says. */
export async function statusOf(page: Page, text: string | RegExp, kind?: 'success' | 'error') {
  const status = page.locator(kind === undefined ? '#status' : `#status.${kind}`, { hasText: text });
  await status.waitFor();
  return (await status.textContent()) ?? '';
}

/**
 * A fresh browser context on the service's page; fails the test on script errors, CSP violations or
 * any request answered 404.
 */
export async function openPage(
  browser: Browser,
  shots: Screenshots,
  t: TestContext,
  service: ServiceProcess,
  run: (session: PageSession) => Promise<void>,
  viewport = { width: 720, height: 900 },
) {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const problems: string[] = [];
  const api: string[] = [];
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) problems.push(message.text());
    });
    page.on('response', (response) => {
      const url = new URL(response.url());
      if (response.status() === 404) problems.push(`404 for ${url.pathname}`);
      if (url.pathname.startsWith('/api/'))
        api.push(`${response.request().method()} ${url.pathname} ${response.status()}`);
    });
    await page.goto(service.url);
    await page.locator('body:not([aria-busy])').waitFor();
    t.diagnostic(`screenshots in ${shots.dir}`);
    await run({
      page,
      api,
      shot: (step) => shots.take(page, step),
      status: (text, kind) => statusOf(page, text, kind),
    });
    assert.deepEqual(problems, [], 'no script errors, no CSP violations and no 404s');
  } finally {
    await context.close();
  }
}

// The accessibility checker's own script, evaluated in the page through the DevTools protocol, which
// the page's strict CSP (script-src 'self') does not govern.
const axeSource = await fs.readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeResults {
  passes: unknown[];
  violations: Array<{ id: string; help: string; nodes: Array<{ target: string[] }> }>;
}

/** Runs axe-core on the page as it is shown now; fails with each rule broken and where. */
export async function assertAccessible(page: Page, where: string) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document): Promise<AxeResults> } }).axe;
    const results = await axe.run(document);
    // No rule passing at all would mean the checker looked at nothing.
    if (results.passes.length === 0) return ['axe-core checked nothing'];
    return results.violations.map(
      (rule) => `${rule.id}: ${rule.help} (${rule.nodes.map((node) => node.target.join(' ')).join(', ')})`,
    );
  });
  assert.deepEqual(violations, [], `no accessibility violations on ${where}`);
}

/** Fails when anything on the page is wider than the window (the page would scroll sideways). */
export async function assertNoSidewaysScroll(page: Page, where = 'the page') {
  assert.equal(
    await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
    true,
    `nothing scrolls sideways on ${where}`,
  );
}

export async function register(page: Page, name: string, identity: string, password: string, confirmation = password) {
  await page.getByRole('navigation').getByRole('button', { name: 'Create an account' }).click();
  const form = page.locator('#register');
  await form.getByLabel('Name').fill(name);
  await form.getByLabel(/Email address|Phone number/).fill(identity);
  await form.getByLabel('Password', { exact: true }).fill(password);
  await form.getByLabel('Confirm password').fill(confirmation);
  await form.getByRole('button', { name: 'Create account' }).click();
}

export async function logIn(page: Page, identity: string, password: string) {
  const form = page.locator('#login');
  await form.waitFor();
  await form.getByLabel('Email address').fill(identity);
  await form.getByLabel('Password').fill(password);
  await form.getByRole('button', { name: 'Log in' }).click();
}
