import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { updateStore, type BotCheckOperation } from '../../../src/store/store.js';
import { sealBotCheck } from '../../../src/store/fields.js';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';
import { assertFieldError } from '../../helpers/assertions.js';
import { sessionCookie, withSession } from '../../helpers/customers.js';
import {
  auth,
  registeredCustomer,
  registration,
  toReply,
  useHarness,
  withoutRequestId,
  type TestApp,
} from '../../helpers/harness.js';

const secret = 'siteverify-secret-0x1234';
const goodToken = 'token-that-passes';
const shopperAddress = '203.0.113.7';

/** A siteverify endpoint as the providers document it: a form-encoded POST, a JSON verdict. */
class Siteverify {
  readonly received: Array<Record<string, string>> = [];
  /** What the next answers are: a verdict by token, or a server error. */
  mode: 'verdict' | 'down' = 'verdict';
  private readonly server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      assert.equal(request.method, 'POST');
      assert.equal(request.headers['content-type'], 'application/x-www-form-urlencoded');
      const form = Object.fromEntries(new URLSearchParams(body));
      this.received.push(form);
      if (this.mode === 'down') {
        response.writeHead(500).end('upstream trouble');
        return;
      }
      const success = form['secret'] === secret && form['response'] === goodToken;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ success, 'error-codes': success ? [] : ['invalid-input-response'] }));
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/siteverify`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function withBotCheck(t: TestApp, url: string, on: BotCheckOperation[]): Promise<void> {
  const botCheck = sealBotCheck(
    { provider: 'turnstile', site_key: '0x4AAAAAAA-site', secret, on, verify_url: url },
    t.services.keys.hooks,
  );
  const result = await updateStore(t.db, t.clock, { botCheck });
  assert.ok(result.ok, JSON.stringify(result));
  t.services.store.invalidate();
}

/** A POST from the shopper's own address, as siteverify must be told it. */
async function post(t: TestApp, url: string, body: unknown, headers: Record<string, string> = {}) {
  return toReply(
    await t.app.inject({
      method: 'POST',
      url,
      remoteAddress: shopperAddress,
      headers: { 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(body),
    }),
  );
}

async function outboxRows(t: TestApp): Promise<number> {
  const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox');
  return row!.n;
}

describe('bot checks', () => {
  const harness = useHarness();
  const siteverify = new Siteverify();
  before(() => siteverify.start());
  after(() => siteverify.close());

  test('a missing or refused token is a 422 on captcha_token, alike for a customer and a stranger, and nothing is counted or queued', async () => {
    const t = await harness.start();
    await registeredCustomer(t, { email: 'ada@example.com' });
    await t.deliver();
    await withBotCheck(t, siteverify.url, ['forgot']);
    const queuedBefore = await outboxRows(t);
    siteverify.received.length = 0;

    const missing = await post(t, `${auth}/password/forgot`, { identity: 'ada@example.com' });
    assertFieldError(missing, 'captcha_token');
    assert.equal(siteverify.received.length, 0, 'no token, no question to the provider');

    // The per-identity limit allows one message a minute: were the refusals counted, the pass would be a 429.
    const answers = [];
    for (const identity of ['ada@example.com', 'nobody@example.com', 'ada@example.com']) {
      answers.push(await post(t, `${auth}/password/forgot`, { identity, captcha_token: 'a-bot-made-this' }));
    }
    for (const reply of answers) assertFieldError(reply, 'captcha_token');
    assert.deepEqual(withoutRequestId(answers[0]!.body), withoutRequestId(answers[1]!.body));
    assert.deepEqual(withoutRequestId(answers[0]!.body), withoutRequestId(missing.body));
    assert.deepEqual(siteverify.received[0], {
      secret,
      response: 'a-bot-made-this',
      remoteip: shopperAddress,
    });
    assert.equal(await outboxRows(t), queuedBefore, 'nothing queued');

    const passed = await post(t, `${auth}/password/forgot`, { identity: 'ada@example.com', captcha_token: goodToken });
    assert.equal(passed.status, 202);
    const sent = await t.deliver();
    assert.deepEqual(
      sent.map((message) => [message.to, message.purpose]),
      [['ada@example.com', 'password_reset']],
    );
  });

  test('the token may come as X-Captcha-Token, and only the listed operations ask for one', async () => {
    const t = await harness.start();
    await withBotCheck(t, siteverify.url, ['register']);
    const refused = await post(t, `${auth}/register`, registration());
    assertFieldError(refused, 'captcha_token');
    assert.deepEqual(Object.keys(refused.body.errors), ['captcha_token']);
    const registered = await post(t, `${auth}/register`, registration(), { 'x-captcha-token': goodToken });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    // Resend is not listed: it answers without a token.
    assert.equal((await post(t, `${auth}/verification/resend`, { identity: 'ada@example.com' })).status, 202);
  });

  test('a siteverify that fails or cannot be reached is a 503 with Retry-After: the check fails closed', async () => {
    const t = await harness.start();
    await withBotCheck(t, siteverify.url, ['resend']);
    siteverify.mode = 'down';
    try {
      const down = await post(t, `${auth}/verification/resend`, {
        identity: 'ada@example.com',
        captcha_token: goodToken,
      });
      assert.equal(down.status, 503);
      assert.equal(down.body.code, 'service_unavailable');
      assert.ok(Number(down.headers['retry-after']) > 0);
    } finally {
      siteverify.mode = 'verdict';
    }
    await withBotCheck(t, 'http://127.0.0.1:9/siteverify', ['resend']);
    const unreachable = await post(t, `${auth}/verification/resend`, {
      identity: 'ada@example.com',
      captcha_token: goodToken,
    });
    assert.equal(unreachable.status, 503);
    assert.equal(await outboxRows(t), 0);
  });

  test('an identity change asks for the token before the password is checked', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t, { email: 'ada@example.com' });
    const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    const session = login.cookies.find((cookie) => cookie.name === sessionCookie)!.value;
    await withBotCheck(t, siteverify.url, ['identity_change']);
    const change = (body: Record<string, unknown>) =>
      t.post(`${auth}/identity/change`, { email: 'grace@example.com', ...body }, withSession(session));
    const refused = await change({ current_password: 'not the password' });
    assertFieldError(refused, 'captcha_token');
    assert.deepEqual(Object.keys(refused.body.errors), ['captcha_token'], 'the password was not checked');
    const accepted = await change({ current_password: customer.password, captcha_token: goodToken });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
  });

  test("the sign-in page renders the provider's widget and allows its origin only when the store has a bot check", async () => {
    const t = await harness.start();
    const plain = await t.get('/');
    assert.equal(plain.status, 200);
    assert.ok(!plain.raw.body.includes('bot-check'), 'no widget');
    assert.doesNotMatch(String(plain.headers['content-security-policy']), /cloudflare/);
    await withBotCheck(t, siteverify.url, ['register', 'forgot']);
    const page = await t.get('/');
    assert.match(
      page.raw.body,
      /<script src="https:\/\/challenges\.cloudflare\.com\/turnstile\/v0\/api\.js" async defer><\/script>/,
    );
    assert.match(
      page.raw.body,
      /<div id="bot-check" class="cf-turnstile" data-sitekey="0x4AAAAAAA-site"[^>]* data-on="register forgot">/,
    );
    assert.ok(!page.raw.body.includes(secret));
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /script-src 'self' https:\/\/challenges\.cloudflare\.com;/);
    assert.match(csp, /frame-src https:\/\/challenges\.cloudflare\.com;/);
  });

  test('the admin API sets a bot check and phone countries, seals the secret and never answers it', async () => {
    const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    const check = { provider: 'hcaptcha', site_key: 'site-key-1', secret, on: ['register', 'code_request'] };
    const changed = await call('PATCH', '/admin/v1/stores/default', {
      settings: { 'auth.bot_check': { ...check, verify_url: siteverify.url }, 'auth.phone_countries': ['de', 'AT'] },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.deepEqual(changed.body.settings['auth.bot_check'], {
      provider: 'hcaptcha',
      site_key: 'site-key-1',
      on: ['register', 'code_request'],
      verify_url: siteverify.url,
      secret_set: true,
    });
    assert.deepEqual(changed.body.settings['auth.phone_countries'], ['DE', 'AT']);
    const read = await call('GET', '/admin/v1/stores/default');
    assert.ok(!JSON.stringify(read.body).includes(secret), 'never answered');
    const [row] = await t.db.query<{ settings: string }>(
      "SELECT settings::text AS settings FROM stores WHERE id = 'default'",
    );
    assert.ok(!row!.settings.includes(secret), 'sealed at rest');
    assert.ok(!JSON.stringify(t.logs).includes(secret), 'never logged');

    const wrongUrl = await call('PATCH', '/admin/v1/stores/default', {
      settings: { 'auth.bot_check': { ...check, verify_url: 'http://siteverify.example/' } },
    });
    assertFieldError(wrongUrl, 'settings');
    assert.match(wrongUrl.body.errors.settings[0], /verify_url/);
    const wrongCountry = await call('PATCH', '/admin/v1/stores/default', {
      settings: { 'auth.phone_countries': ['XX'] },
    });
    assertFieldError(wrongCountry, 'settings');

    const removed = await call('PATCH', '/admin/v1/stores/default', { settings: { 'auth.bot_check': null } });
    assert.equal(removed.body.settings['auth.bot_check'], null);
  });
});
