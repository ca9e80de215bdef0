import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSmsWebhookTransport } from '../../src/delivery/transports/sms-webhook.js';
import { createSmtpTransport } from '../../src/delivery/transports/smtp.js';
import { createStore } from '../../src/store/store.js';
import { auth, registration, useHarness } from '../helpers/harness.js';
import { twoStores } from '../helpers/stores.js';
import { saveTemplate } from '../../src/delivery/store-templates.js';
import { forStore } from '../../src/storage/database.js';
import {
  decodeHeader,
  parseMail,
  startHookServer,
  startSmtpServer,
  type TestHookServer,
  type TestSmtpServer,
} from './servers.js';

describe('messages of many stores', () => {
  const harness = useHarness();
  const servers: Array<TestSmtpServer | TestHookServer> = [];
  after(async () => Promise.all(servers.map((server) => server.close())));
  const mailFrom = 'shops@example.com';

  /** The service sending its mail to a real SMTP server of the test's, as store A (Shop A). */
  async function startWithSmtp() {
    const smtp = await startSmtpServer();
    servers.push(smtp);
    const t = await harness.start({
      env: { SMTP_URL: smtp.url, MAIL_FROM: mailFrom, STORE_NAME: 'Shop A' },
      overrides: { transports: { email: createSmtpTransport(smtp.url, mailFrom) } },
    });
    return { smtp, t };
  }

  test('each store signs its mail: its own mail_from, else a bare MAIL_FROM under its name', async () => {
    const { smtp, t } = await startWithSmtp();
    await twoStores(t);
    const third = await createStore(t.db, t.clock, {
      slug: 'shop-c',
      name: 'Shop C',
      identityMode: 'email',
      hosts: ['c.shop.test'],
      mailFrom: 'Deals of C <deals@c.example>',
    });
    assert.ok(third.ok);
    await t.services.store.refresh();
    for (const host of ['a.shop.test', 'b.shop.test', 'c.shop.test']) {
      const email = `ada@${host}`;
      assert.equal((await t.post(`${auth}/register`, registration({ email }), { host })).status, 201);
    }
    await t.deliver();
    const fromOf = (to: string) => {
      const received = smtp.received.find((mail) => mail.envelopeTo.includes(to));
      assert.ok(received, `a message reached ${to}`);
      return {
        from: parseMail(received.raw).headers.get('from'),
        subject: parseMail(received.raw).headers.get('subject'),
      };
    };
    assert.equal(fromOf('ada@a.shop.test').from, `Shop A <${mailFrom}>`);
    assert.equal(fromOf('ada@b.shop.test').from, `Shop B <${mailFrom}>`);
    assert.match(fromOf('ada@b.shop.test').subject ?? '', /is your Shop B verification code$/);
    assert.equal(fromOf('ada@c.shop.test').from, 'Deals of C <deals@c.example>');
  });

  test('two stores send their own words and look over a real SMTP conversation, in English and Arabic', async () => {
    const { smtp, t } = await startWithSmtp();
    const { a, b } = await twoStores(t);
    await a.configure({ branding: { supportUrl: 'https://a.example/help' } });
    await b.configure({ languages: { languages: ['en', 'ar'], defaultLanguage: 'en' } });
    const dbOf = (storeId: string) => forStore(t.db, storeId);
    await saveTemplate(
      dbOf(a.id),
      'verification_code',
      'en',
      {
        subject: 'A says: {{code}}',
        text: 'Shop A code {{code}}',
        html: '<p>Shop A code <b>{{code}}</b></p>',
      },
      t.clock.now(),
    );
    await saveTemplate(
      dbOf(b.id),
      'verification_code',
      'ar',
      {
        subject: 'رمز {{store_name}}: {{code}}',
        text: 'رمزك {{code}}',
        html: '<p>رمزك <b>{{code}}</b></p>',
      },
      t.clock.now(),
    );
    assert.equal((await a.post(`${auth}/register`, registration({ email: 'ada@a.example' }))).status, 201);
    const arabic = { 'accept-language': 'ar' };
    assert.equal((await b.post(`${auth}/register`, registration({ email: 'ada@b.example' }), arabic)).status, 201);
    assert.equal((await b.post(`${auth}/register`, registration({ email: 'bob@b.example' }))).status, 201);
    await t.deliver();
    const mailTo = (to: string) => {
      const received = smtp.received.find((mail) => mail.envelopeTo.includes(to));
      assert.ok(received, `a message reached ${to}`);
      return parseMail(received.raw);
    };
    const fromA = mailTo('ada@a.example');
    assert.match(decodeHeader(fromA.headers.get('subject') ?? ''), /^A says: \d{6}$/);
    // What a spam filter looks at: a Message-ID and a Date, and no List-Unsubscribe on a code.
    assert.match(fromA.headers.get('message-id') ?? '', /^<[^@\s]+@[^>\s]+>$/);
    assert.ok(!Number.isNaN(Date.parse(fromA.headers.get('date') ?? '')));
    assert.equal(fromA.headers.get('list-unsubscribe'), undefined);
    const [textA, htmlA] = fromA.parts;
    assert.match(textA!.body, /^Shop A code \d{6}/);
    assert.match(htmlA!.body, /<p>Shop A code <b>\d{6}<\/b><\/p>/);

    const arabicB = mailTo('ada@b.example');
    assert.equal(arabicB.headers.get('content-language'), 'ar');
    assert.match(decodeHeader(arabicB.headers.get('subject') ?? ''), /^رمز \u2068Shop B\u2069: \u2068\d{6}\u2069$/);
    assert.match(arabicB.parts[1]!.body, /<html lang="ar" dir="rtl">/);
    // The store's template in Arabic only: its English message keeps the built-in words.
    assert.match(
      decodeHeader(mailTo('bob@b.example').headers.get('subject') ?? ''),
      /is your Shop B verification code$/,
    );
  });

  test('the SMS hook is told the store and its sender', async () => {
    const hook = await startHookServer();
    servers.push(hook);
    const secret = 'hook-secret-4f1c9a7e2b';
    const t = await harness.start({
      env: { STORE_IDENTITY_MODE: 'phone', SMS_WEBHOOK_URL: hook.url, SMS_WEBHOOK_SECRET: secret },
      overrides: { transports: { sms: createSmsWebhookTransport(hook.url, secret) } },
    });
    const { b } = await twoStores(t, { identityMode: 'phone', smsSender: 'SHOPB' });
    const body = { ...registration({ email: undefined }), phone: '+14155550123' };
    assert.equal((await t.post(`${auth}/register`, body, { host: 'b.shop.test' })).status, 201);
    await t.deliver();
    assert.equal(hook.requests.length, 1);
    const sent = JSON.parse(hook.requests[0]!.rawBody) as Record<string, unknown>;
    assert.equal(sent['store_id'], b.id);
    assert.equal(sent['sender'], 'SHOPB');
  });

  test('the hourly budget is each store’s: one store past it holds back only its own messages', async () => {
    const t = await harness.start({ overrides: { dispatcher: { budgetPerHour: 2 } } });
    await twoStores(t);
    for (const n of [1, 2, 3]) {
      const email = `a${n}@example.com`;
      assert.equal((await t.post(`${auth}/register`, registration({ email }), { host: 'a.shop.test' })).status, 201);
    }
    assert.equal(
      (await t.post(`${auth}/register`, registration({ email: 'b1@example.com' }), { host: 'b.shop.test' })).status,
      201,
    );
    await t.deliver();
    const sentTo = t.outbox.sent.map((message) => message.to).sort();
    assert.deepEqual(sentTo.filter((to) => to.startsWith('a')).length, 2);
    assert.ok(sentTo.includes('b1@example.com'), 'store B sent while store A was over its budget');
    const [waiting] = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox WHERE store_id = 'default' AND status = 'pending'`,
    );
    assert.equal(waiting?.n, 1);
  });
});
