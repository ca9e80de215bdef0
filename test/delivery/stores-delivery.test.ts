import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSmsWebhookTransport } from '../../src/delivery/transports/sms-webhook.js';
import { createSmtpTransport } from '../../src/delivery/transports/smtp.js';
import { createStore } from '../../src/store/store.js';
import { auth, registration, useHarness } from '../helpers/harness.js';
import { twoStores } from '../helpers/stores.js';
import { parseMail, startHookServer, startSmtpServer, type TestHookServer, type TestSmtpServer } from './servers.js';

describe('messages of many stores', () => {
  const harness = useHarness();
  const servers: Array<TestSmtpServer | TestHookServer> = [];
  after(async () => Promise.all(servers.map((server) => server.close())));

  test('each store signs its mail: its own mail_from, else a bare MAIL_FROM under its name', async () => {
    const smtp = await startSmtpServer();
    servers.push(smtp);
    const mailFrom = 'shops@example.com';
    const t = await harness.start({
      env: { SMTP_URL: smtp.url, MAIL_FROM: mailFrom, STORE_NAME: 'Shop A' },
      overrides: { transports: { email: createSmtpTransport(smtp.url, mailFrom) } },
    });
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
