import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { enqueueMessage } from '../../src/delivery/outbox.js';
import { createSmsWebhookTransport } from '../../src/delivery/transports/sms-webhook.js';
import { auth, useHarness, type TestApp } from '../helpers/harness.js';
import { onlyOutboxRow, outboxRows, startHookServer, type HookRequest, type TestHookServer } from './servers.js';
import { codeIn } from '../helpers/assertions.js';
import { defaultStore } from '../helpers/database.js';
import { updateStore } from '../../src/store/store.js';

const secret = 'hook-secret-4f1c9a7e2b';
const phone = '+14155550123';
const storeName = 'Corner Shop';

function phoneRegistration() {
  return {
    name: 'Ada Lovelace',
    phone: '+1 (415) 555-0123',
    password: 'analytical engine 1843',
    password_confirmation: 'analytical engine 1843',
  };
}

function signatureIsValid(request: HookRequest): boolean {
  const header = request.headers['x-signature'];
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', secret).update(request.rawBody, 'utf8').digest();
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('SMS delivery through the provider hook', () => {
  const harness = useHarness();
  const hooks: TestHookServer[] = [];

  after(async () => {
    await Promise.all(hooks.map((hook) => hook.close()));
  });

  async function startPhoneStore(): Promise<{ t: TestApp; hook: TestHookServer }> {
    const hook = await startHookServer();
    hooks.push(hook);
    const t = await harness.start({
      env: {
        STORE_IDENTITY_MODE: 'phone',
        STORE_NAME: storeName,
        SMS_WEBHOOK_URL: hook.url,
        SMS_WEBHOOK_SECRET: secret,
      },
      overrides: { transports: { sms: createSmsWebhookTransport(hook.url, secret) } },
    });
    return { t, hook };
  }

  test('the verification SMS is a signed JSON POST to the hook and its code verifies the customer', async () => {
    const { t, hook } = await startPhoneStore();
    const registered = await t.post(`${auth}/register`, phoneRegistration());
    assert.equal(registered.status, 201);
    assert.equal(registered.body.identity.value, phone);
    await t.deliver();

    assert.equal(hook.requests.length, 1);
    const request = hook.requests[0]!;
    assert.equal(request.method, 'POST');
    assert.equal(request.url, '/hook');
    assert.match(String(request.headers['content-type']), /^application\/json/);
    assert.match(String(request.headers['x-signature']), /^sha256=[0-9a-f]{64}$/);
    assert.ok(signatureIsValid(request), 'X-Signature is the HMAC-SHA256 of the raw body with the shared secret');
    assert.equal(
      signatureIsValid({ ...request, rawBody: request.rawBody.replace(phone, '+14155550199') }),
      false,
      'the check rejects a changed body',
    );

    const row = await onlyOutboxRow(t.db);
    const body = JSON.parse(request.rawBody) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['id', 'language', 'purpose', 'sender', 'store_id', 'text', 'to']);
    assert.equal(body['language'], 'en');
    assert.equal(body['store_id'], 'default');
    assert.equal(body['sender'], null, 'no sms_sender set for the store');
    assert.equal(body['id'], row.id);
    assert.equal(body['to'], phone);
    assert.equal(body['purpose'], 'verification');
    assert.equal(typeof body['text'], 'string');
    const text = body['text'] as string;
    assert.ok(text.includes(storeName), text);
    assert.ok(text.includes('10 minutes'), text);
    assert.equal(row.status, 'sent');
    assert.equal(row.sealed_body, null);

    const verified = await t.post(`${auth}/verify`, { identity: phone, code: codeIn(text) });
    assert.equal(verified.status, 200);
    assert.equal(verified.body.identity.verified_at, t.clock.now().toISOString());
  });

  test('a customer who chose Arabic gets Arabic SMS, named by `language`, each in one UCS-2 part', async () => {
    const { t, hook } = await startPhoneStore();
    assert.ok((await updateStore(t.db, t.clock, { languages: { languages: ['en', 'ar'], defaultLanguage: 'en' } })).ok);
    t.services.store.invalidate();
    const registered = await t.post(`${auth}/register`, { ...phoneRegistration(), locale: 'ar' });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    await t.deliver();
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: phone })).status, 202);
    await t.deliver();
    const bodies = hook.requests.map((request) => JSON.parse(request.rawBody) as Record<string, string>);
    assert.deepEqual(
      bodies.map((body) => [body['purpose'], body['language']]),
      [
        ['verification', 'ar'],
        ['password_reset', 'ar'],
      ],
    );
    for (const { text } of bodies) {
      assert.ok(text!.length <= 70, `${text!.length} UTF-16 units: ${text}`);
      assert.match(text!, /[\u0600-\u06ff]/);
      assert.ok(text!.includes(storeName), text);
    }
    const code = codeIn(bodies[0]!['text']!);
    assert.equal((await t.post(`${auth}/verify`, { identity: phone, code })).status, 200);
  });

  test('reset and password-changed messages go to the hook with their own purposes', async () => {
    const { t, hook } = await startPhoneStore();
    assert.equal((await t.post(`${auth}/register`, phoneRegistration())).status, 201);
    await t.deliver();
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: phone })).status, 202);
    await t.deliver();
    const resetBody = JSON.parse(hook.requests[1]!.rawBody) as { purpose: string; text: string; to: string };
    assert.equal(resetBody.purpose, 'password_reset');
    assert.equal(resetBody.to, phone);

    const reset = await t.post(`${auth}/password/reset`, {
      identity: phone,
      code: codeIn(resetBody.text),
      password: 'difference engine 1822',
      password_confirmation: 'difference engine 1822',
    });
    assert.equal(reset.status, 200);
    await t.deliver();
    assert.equal(hook.requests.length, 3);
    const notice = JSON.parse(hook.requests[2]!.rawBody) as { purpose: string; text: string };
    assert.equal(notice.purpose, 'password_changed');
    assert.ok(hook.requests.every(signatureIsValid), 'every request is signed');
  });

  test('a hook that answers 500 and then 200 gets the message delivered once, after two attempts', async () => {
    const { t, hook } = await startPhoneStore();
    hook.script.push('error');
    assert.equal((await t.post(`${auth}/register`, phoneRegistration())).status, 201);
    await t.deliver();

    const waiting = await onlyOutboxRow(t.db);
    assert.equal(waiting.status, 'pending');
    assert.equal(waiting.attempts, 1);
    assert.match(waiting.last_error ?? '', /500/);
    assert.equal(hook.requests.length, 1);

    t.clock.advance((waiting.next_attempt_at.getTime() - t.clock.now().getTime()) / 1000);
    await t.deliver();
    assert.equal(hook.requests.length, 2);
    const sent = await onlyOutboxRow(t.db);
    assert.equal(sent.status, 'sent');
    assert.equal(sent.attempts, 2);
    assert.equal(sent.last_error, null);
    assert.equal(sent.sealed_body, null);
    const [first, second] = hook.requests.map((r) => JSON.parse(r.rawBody) as { id: string; text: string });
    assert.equal(first!.id, second!.id, 'the retry carries the same message id, so the provider can deduplicate');
    assert.equal(first!.text, second!.text);

    assert.equal((await t.post(`${auth}/verify`, { identity: phone, code: codeIn(second!.text) })).status, 200);
    t.clock.advance(3600);
    await t.deliver();
    assert.equal(hook.requests.length, 2, 'a delivered message is not sent again');
  });

  for (const status of [307, 302] as const) {
    test(`a hook that answers ${status} is a failed attempt: the redirect is not followed, the message is retried, and the log names the Location`, async () => {
      const { t, hook } = await startPhoneStore();
      const elsewhere = await startHookServer();
      hooks.push(elsewhere);
      const location = `${elsewhere.url}?from=redirect`;
      hook.script.push({ redirect: status, location });
      assert.equal((await t.post(`${auth}/register`, phoneRegistration())).status, 201);
      await t.deliver();

      assert.equal(hook.requests.length, 1);
      assert.equal(elsewhere.requests.length, 0, 'the target of the redirect receives nothing');
      const waiting = await onlyOutboxRow(t.db);
      assert.equal(waiting.status, 'pending', 'a redirect does not mark the message sent');
      assert.equal(waiting.attempts, 1);
      assert.ok(waiting.sealed_body !== null, 'the body is kept for the retry');
      assert.ok(waiting.last_error?.includes(String(status)), `last_error: ${waiting.last_error}`);
      assert.ok(waiting.last_error?.includes(location), `last_error names the Location: ${waiting.last_error}`);
      const warning = t.logs.find((line) => line['msg'] === 'message not delivered; will retry');
      assert.ok(String(warning?.['reason']).includes(location), 'the log line names the Location');

      t.clock.advance((waiting.next_attempt_at.getTime() - t.clock.now().getTime()) / 1000);
      await t.deliver();
      assert.equal(hook.requests.length, 2, 'the hook itself is tried again');
      assert.equal(elsewhere.requests.length, 0);
      assert.equal((await onlyOutboxRow(t.db)).status, 'sent');
    });
  }

  test('a hook that drops the connection leaves the message pending with its error, and after the delivery window it is failed with the error kept', async () => {
    const { t, hook } = await startPhoneStore();
    hook.fallback = 'destroy';
    assert.equal((await t.post(`${auth}/register`, phoneRegistration())).status, 201);
    // A notice carries no code, so nothing but the delivery window ends its retries.
    const noticeId = await enqueueMessage(
      defaultStore(t.db),
      { clock: t.clock, keys: t.services.keys },
      {
        channel: 'sms',
        purpose: 'password_changed',
        to: phone,
        customerId: null,
        storeName,
        language: 'en',
      },
    );
    await t.deliver();

    const firstTry = await outboxRows(t.db);
    assert.equal(firstTry.length, 2);
    for (const row of firstTry) {
      assert.equal(row.status, 'pending');
      assert.equal(row.attempts, 1);
      assert.ok(row.last_error !== null && row.last_error !== '', 'the failure is recorded');
    }
    assert.equal(hook.dropped, 2);
    assert.equal(hook.requests.length, 0);
    const firstError = firstTry.find((row) => row.id === noticeId)!.last_error;

    let pendingAtHalfHour = false;
    for (let elapsed = 0; elapsed < 3600 + 900; elapsed += 300) {
      t.clock.advance(300);
      await t.deliver();
      if (elapsed + 300 === 1800) {
        pendingAtHalfHour = (await outboxRows(t.db)).find((row) => row.id === noticeId)?.status === 'pending';
      }
    }
    assert.ok(pendingAtHalfHour, 'the notice is still being retried within the hour');

    const rows = await outboxRows(t.db);
    const notice = rows.find((row) => row.id === noticeId)!;
    assert.equal(notice.status, 'failed');
    assert.equal(notice.last_error, firstError, 'the last error is kept on the failed message');
    assert.ok(notice.attempts > 5, `retried several times (attempts ${notice.attempts})`);
    assert.ok(hook.dropped >= notice.attempts, 'every attempt of the notice reached the hook');
    const verification = rows.find((row) => row.id !== noticeId)!;
    assert.equal(verification.status, 'dropped', 'a code message whose code expired is not retried further');
    assert.ok(verification.last_error !== null, 'the dropped message keeps its last error');

    const dropsBefore = hook.dropped;
    t.clock.advance(3600);
    await t.deliver();
    assert.equal(hook.dropped, dropsBefore, 'a failed message is not retried on its own');
  });
});
