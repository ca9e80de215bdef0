import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../../packages/client/src/backend.js';
import { webhookHeaders, webhookSecretKey } from '../../src/hooks/standard-webhooks.js';

/**
 * The client's webhook check against the Standard Webhooks reference library (which signs), and
 * against the service's own signing, which the reference library verifies.
 */

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = JSON.stringify({ type: 'customer.registered', data: { customer: { id: 'c1' } } });

/** Headers as the reference library signs them, at `at`. */
function signedByReference(secret: string, at: Date, payload = body): Record<string, string> {
  const id = `msg_${randomBytes(8).toString('hex')}`;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, payload),
  };
}

async function refused(promise: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(
    promise,
    (error: unknown) => error instanceof WebhookVerificationError && message.test(error.message),
  );
}

describe('verifyWebhook', () => {
  test('accepts what the reference library signed, from a Headers object or a plain one, and returns the parsed body', async () => {
    const secret = newSecret();
    const headers = signedByReference(secret, new Date());
    assert.deepEqual(await verifyWebhook(secret, headers, body), JSON.parse(body));
    assert.deepEqual(await verifyWebhook(secret, new Headers(headers), body), JSON.parse(body));
    const shouting = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    assert.deepEqual(await verifyWebhook(secret, shouting, body), JSON.parse(body), 'header names in any case');
  });

  test('refuses another body, another secret, a missing header and a bad secret', async () => {
    const secret = newSecret();
    const headers = signedByReference(secret, new Date());
    await refused(verifyWebhook(secret, headers, body.replace('c1', 'c2')), /no signature matches/);
    await refused(verifyWebhook(newSecret(), headers, body), /no signature matches/);
    await refused(verifyWebhook(secret, { ...headers, 'webhook-id': 'msg_other' }, body), /no signature matches/);
    const { 'webhook-signature': _dropped, ...unsigned } = headers;
    await refused(verifyWebhook(secret, unsigned, body), /no webhook-signature header/);
    await refused(verifyWebhook('not-a-secret', headers, body), /not a whsec_ secret/);
  });

  test('refuses a timestamp more than five minutes from now, either way, unless told a wider tolerance', async () => {
    const secret = newSecret();
    const now = new Date();
    const old = signedByReference(secret, new Date(now.getTime() - 301_000));
    await refused(verifyWebhook(secret, old, body, { now }), /too far from now/);
    const ahead = signedByReference(secret, new Date(now.getTime() + 301_000));
    await refused(verifyWebhook(secret, ahead, body, { now }), /too far from now/);
    const recent = signedByReference(secret, new Date(now.getTime() - 299_000));
    assert.ok(await verifyWebhook(secret, recent, body, { now }));
    assert.ok(await verifyWebhook(secret, old, body, { now, toleranceSeconds: 600 }));
  });

  test('during a rotation either secret verifies the message signed with both', async () => {
    const [oldSecret, newer] = [newSecret(), newSecret()];
    const headers = webhookHeaders([webhookSecretKey(newer)!, webhookSecretKey(oldSecret)!], body);
    assert.match(headers['webhook-signature'], /^v1,\S+ v1,\S+$/);
    assert.ok(await verifyWebhook(oldSecret, headers, body));
    assert.ok(await verifyWebhook(newer, headers, body));
    await refused(verifyWebhook(newSecret(), headers, body), /no signature matches/);
  });

  test("the service's signing passes the reference library's verification", () => {
    const secret = newSecret();
    const headers = webhookHeaders([webhookSecretKey(secret)!], body);
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    assert.throws(() => new Webhook(newSecret()).verify(body, headers));
  });
});
