import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSmtpTransport } from '../../src/delivery/transports/smtp.js';
import { auth, useHarness, registration, type Harness, type TestApp } from '../helpers/harness.js';
import { updateStore } from '../../src/store/store.js';
import {
  decodeHeader,
  leafParts,
  onlyOutboxRow,
  parseMail,
  startSmtpServer,
  unusedPort,
  type MailPart,
  type TestSmtpServer,
} from './servers.js';
import { codeIn } from '../helpers/assertions.js';

const from = 'Shop <shop@example.com>';
const storeName = 'Corner & Co';

function startWithSmtp(harness: Harness, url: string): Promise<TestApp> {
  return harness.start({
    env: { SMTP_URL: url, MAIL_FROM: from, STORE_NAME: storeName },
    overrides: { transports: { email: createSmtpTransport(url, from) } },
  });
}

function partOfType(mail: MailPart, type: string): MailPart {
  const part = leafParts(mail).find((p) => (p.headers.get('content-type') ?? '').toLowerCase().startsWith(type));
  assert.ok(part, `the message has a ${type} part`);
  return part;
}

describe('email delivery through a real SMTP server', () => {
  const harness = useHarness();
  let t: TestApp | undefined;
  const servers: TestSmtpServer[] = [];

  after(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  test('the verification email arrives with sender, recipient, subject, text and HTML parts, and its code verifies the customer', async () => {
    const smtp = await startSmtpServer();
    servers.push(smtp);
    t = await startWithSmtp(harness, smtp.url);

    const registered = await t.post(`${auth}/register`, registration({ email: 'Ada@Example.com' }));
    assert.equal(registered.status, 201);
    await t.deliver();

    assert.equal(smtp.received.length, 1, 'exactly one message reached the SMTP server');
    const received = smtp.received[0]!;
    assert.equal(received.envelopeFrom, 'shop@example.com');
    assert.deepEqual(received.envelopeTo, ['ada@example.com']);

    const mail = parseMail(received.raw);
    assert.equal(mail.headers.get('from'), 'Shop <shop@example.com>');
    assert.equal(mail.headers.get('to'), 'ada@example.com');
    const subject = mail.headers.get('subject') ?? '';
    assert.match(subject, /^\d{6} is your Corner & Co verification code$/);
    assert.match(mail.headers.get('content-type') ?? '', /^multipart\/alternative/i);
    assert.equal(mail.headers.get('content-language'), 'en');

    const text = partOfType(mail, 'text/plain').body;
    const html = partOfType(mail, 'text/html').body;
    const code = codeIn(text);
    assert.equal(codeIn(subject), code, 'the subject carries the same code');
    assert.ok(text.includes(`Your ${storeName} verification code is ${code}.`), text);
    assert.ok(text.includes('10 minutes'), text);
    assert.ok(!text.includes('Ada Lovelace'), 'no name: whoever typed it, the code goes to the address');
    assert.ok(text.includes(`If you did not create an account at ${storeName}, ignore this message.`), text);
    assert.ok(text.includes(`\u2014 ${storeName}`), 'the signature survives the transfer encoding');
    assert.ok(html.includes(code), html);
    assert.ok(html.includes('10 minutes'), html);
    assert.ok(html.includes('Corner &#38; Co'), 'the store name is HTML-escaped in the HTML part');
    assert.ok(!html.includes('Corner & Co'), 'no unescaped ampersand in the HTML part');

    const row = await onlyOutboxRow(t.db);
    assert.equal(mail.headers.get('x-storefront-message-id'), row.id, 'the message names its outbox row');
    assert.equal(row.status, 'sent');
    assert.equal(row.attempts, 1);
    assert.equal(row.sealed_body, null, 'a sent message keeps no body');

    const verified = await t.post(`${auth}/verify`, { identity: 'ada@example.com', code });
    assert.equal(verified.status, 200);
    assert.equal(verified.body.identity.verified_at, t.clock.now().toISOString());
  });

  test('a customer who registered in Arabic gets an Arabic email: Content-Language ar, right to left, the code left to right', async () => {
    const smtp = await startSmtpServer();
    servers.push(smtp);
    t = await startWithSmtp(harness, smtp.url);
    assert.ok((await updateStore(t.db, t.clock, { languages: { languages: ['en', 'ar'], defaultLanguage: 'en' } })).ok);
    t.services.store.invalidate();

    const registered = await t.post(`${auth}/register`, registration(), { 'accept-language': 'ar' });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    await t.deliver();
    assert.equal(smtp.received.length, 1);
    const mail = parseMail(smtp.received[0]!.raw);
    assert.equal(mail.headers.get('content-language'), 'ar');
    const subject = decodeHeader(mail.headers.get('subject') ?? '');
    assert.ok(subject.startsWith('رمز التحقق لدى'), subject);
    const text = partOfType(mail, 'text/plain').body;
    const html = partOfType(mail, 'text/html').body;
    const code = codeIn(text);
    assert.equal(codeIn(subject), code, 'the subject carries the same code');
    assert.ok(text.includes(`رمز التحقق الخاص بك لدى \u2068${storeName}\u2069 هو \u2066${code}\u2069.`), text);
    assert.ok(text.includes('10 دقائق'), text);
    assert.match(html, /<html lang="ar" dir="rtl">/);
    assert.ok(html.includes(`<strong dir="ltr" style="font-size:1.4em;letter-spacing:0.2em">${code}</strong>`), html);
    assert.ok(html.includes('<bdi>Corner &#38; Co</bdi>'), html);

    const verified = await t.post(`${auth}/verify`, { identity: 'ada@example.com', code });
    assert.equal(verified.status, 200);
  });

  test('the password reset email and the password-changed notice both arrive, and the reset code works', async () => {
    const smtp = await startSmtpServer();
    servers.push(smtp);
    t = await startWithSmtp(harness, smtp.url);

    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    await t.deliver();
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: 'ada@example.com' })).status, 202);
    await t.deliver();
    assert.equal(smtp.received.length, 2);
    const resetMail = parseMail(smtp.received[1]!.raw);
    assert.match(resetMail.headers.get('subject') ?? '', /^\d{6} is your Corner & Co password reset code$/);
    const code = codeIn(partOfType(resetMail, 'text/plain').body);

    const reset = await t.post(`${auth}/password/reset`, {
      identity: 'ada@example.com',
      code,
      password: 'difference engine 1822',
      password_confirmation: 'difference engine 1822',
    });
    assert.equal(reset.status, 200);
    await t.deliver();
    assert.equal(smtp.received.length, 3);
    const notice = parseMail(smtp.received[2]!.raw);
    assert.equal(notice.headers.get('subject'), 'Your Corner & Co password was changed');
    assert.equal(notice.headers.get('to'), 'ada@example.com');
    assert.ok(partOfType(notice, 'text/plain').body.includes('every device was signed out'));
    assert.ok(partOfType(notice, 'text/html').body.includes('<p>'));
  });

  test('a code issued while the SMTP server is down still gets its 201, waits in the outbox, and is sent once the server is back', async () => {
    const port = await unusedPort();
    const url = `smtp://127.0.0.1:${port}`;
    t = await startWithSmtp(harness, url);

    const registered = await t.post(`${auth}/register`, registration());
    assert.equal(registered.status, 201, 'the answer does not wait for the mail server');
    await t.deliver();

    const waiting = await onlyOutboxRow(t.db);
    assert.equal(waiting.status, 'pending');
    assert.equal(waiting.attempts, 1);
    assert.ok(waiting.last_error !== null && waiting.last_error !== '', 'the failure is recorded');
    assert.ok(waiting.sealed_body !== null, 'the body is kept for the retry');
    assert.ok(waiting.next_attempt_at.getTime() > t.clock.now().getTime(), 'the retry is scheduled later');

    const smtp = await startSmtpServer(port);
    servers.push(smtp);
    await t.deliver();
    assert.equal(smtp.received.length, 0, 'nothing is sent before the retry is due');

    t.clock.advance((waiting.next_attempt_at.getTime() - t.clock.now().getTime()) / 1000 + 1);
    await t.deliver();
    assert.equal(smtp.received.length, 1, 'the message arrives on the retry');
    const sent = await onlyOutboxRow(t.db);
    assert.equal(sent.status, 'sent');
    assert.equal(sent.attempts, 2);
    assert.equal(sent.sealed_body, null);
    assert.equal(sent.last_error, null);

    const code = codeIn(partOfType(parseMail(smtp.received[0]!.raw), 'text/plain').body);
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code })).status, 200);

    t.clock.advance(3600);
    await t.deliver();
    assert.equal(smtp.received.length, 1, 'a sent message is never sent again');
  });

  test('no log line of an SMTP deployment contains a code', async () => {
    const smtp = await startSmtpServer();
    servers.push(smtp);
    t = await startWithSmtp(harness, smtp.url);

    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    await t.deliver();
    const code = codeIn(partOfType(parseMail(smtp.received[0]!.raw), 'text/plain').body);
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code })).status, 200);

    const pattern = new RegExp(`(?<![A-Za-z0-9])${code}(?![A-Za-z0-9])`);
    assert.ok(t.logs.length > 0, 'the service logged something');
    const leaking = t.logs.filter((line) => pattern.test(JSON.stringify(line)));
    assert.deepEqual(leaking, []);
  });
});
