import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  createAdminClient,
  StorefrontAuthError,
  type AdminClient,
  type CreatedWebhook,
  type WebhookDelivery,
} from '../../packages/client/src/admin.js';
import { eventually, refusedWith, useClientService } from '../helpers/client-service.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The admin client's webhook calls against a running service, delivering to a real receiver that
 * verifies each request with the Standard Webhooks reference package.
 */

const adminToken = 'admin-token-of-the-store-platform-backend-0123456789';

function withoutSecret({ secret: _secret, ...endpoint }: CreatedWebhook) {
  return endpoint;
}

describe("the admin client's webhook calls against a running service", { timeout: 120_000 }, () => {
  const running = useClientService('sfa-admin-webhooks-', {
    ADMIN_TOKENS: adminToken,
    ADMIN_PORT: '0',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  const receiver = new WebhookReceiver();
  let admin: AdminClient;

  before(async () => {
    await receiver.start();
    assert.ok(running.service.adminUrl, 'the admin listener is up');
    admin = createAdminClient({ baseUrl: running.service.adminUrl, token: adminToken });
  });
  after(() => receiver.stop());

  test('adds, reads, tests, pages the deliveries of, retries, changes, rotates and removes an endpoint', async () => {
    const created = await admin.addWebhook('default', { url: receiver.url, events: ['*'], description: 'CRM' });
    assert.match(created.secret, /^whsec_/);
    assert.equal(created.enabled, true);
    assert.deepEqual(created.events, ['*']);
    receiver.secrets = [created.secret];

    const listed = await admin.listWebhooks('default');
    assert.deepEqual(listed, [withoutSecret(created)]);
    assert.ok(!JSON.stringify(listed).includes(created.secret), 'a list never shows the secret');
    assert.deepEqual(await admin.getWebhook('default', created.id), withoutSecret(created));

    await admin.testWebhook('default', created.id);
    await receiver.receivedCount(1);
    assert.deepEqual(receiver.types(), ['webhook.test']);
    assert.equal(receiver.received[0]!.event.data['webhook_id'], created.id);

    const sent = await eventually(async () => {
      const [delivery] = (await admin.listWebhookDeliveries('default', created.id)).deliveries;
      return delivery?.status === 'sent' ? delivery : undefined;
    }, 15_000);
    assert.equal(sent.type, 'webhook.test');
    assert.equal(sent.event_id, receiver.received[0]!.id);
    assert.equal(sent.attempts.at(-1)?.status, 204);

    await admin.retryWebhookDelivery('default', created.id, sent.id);
    await receiver.receivedCount(2);
    assert.equal(receiver.received[1]!.id, sent.event_id, 'a retry carries the same webhook-id');

    await admin.testWebhook('default', created.id);
    await receiver.receivedCount(3);
    const first = await admin.listWebhookDeliveries('default', created.id, { limit: 1 });
    assert.equal(first.deliveries.length, 1);
    assert.ok(first.next_cursor !== null, 'a full page points at the next');
    const second = await admin.listWebhookDeliveries('default', created.id, { cursor: first.next_cursor, limit: 1 });
    assert.deepEqual(
      [...first.deliveries, ...second.deliveries].map((delivery: WebhookDelivery) => delivery.id),
      [first.deliveries[0]!.id, sent.id],
      'newest first, page after page',
    );

    const changed = await admin.changeWebhook('default', created.id, {
      description: 'Orders',
      events: ['customer.registered'],
    });
    assert.equal(changed.description, 'Orders');
    assert.deepEqual(changed.events, ['customer.registered']);

    const rotated = await admin.rotateWebhookSecret('default', created.id);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, created.secret);
    assert.ok(rotated.previous_secret_until !== null, 'the old secret signs beside the new one for a while');

    await admin.removeWebhook('default', created.id);
    assert.deepEqual(await admin.listWebhooks('default'), []);
    await refusedWith(admin.getWebhook('default', created.id), 'not_found', 404);
  });

  test('refusals are typed: a bad URL and an unknown event name their fields, an unknown id is not_found, the 21st endpoint webhook_limit', async () => {
    await assert.rejects(
      admin.addWebhook('default', { url: 'ftp://crm.example/hooks', events: ['customer.nope'] }),
      (error) => {
        assert.ok(error instanceof StorefrontAuthError);
        assert.equal(error.code, 'validation_failed');
        assert.deepEqual(Object.keys(error.errors).sort(), ['events', 'url']);
        return true;
      },
    );
    const unknown = randomUUID();
    await refusedWith(admin.getWebhook('default', unknown), 'not_found', 404);
    await refusedWith(admin.changeWebhook('default', unknown, { enabled: false }), 'not_found', 404);
    await refusedWith(admin.removeWebhook('default', unknown), 'not_found', 404);
    await refusedWith(admin.testWebhook('default', unknown), 'not_found', 404);
    await refusedWith(admin.rotateWebhookSecret('default', unknown), 'not_found', 404);
    await refusedWith(admin.listWebhookDeliveries('default', unknown), 'not_found', 404);
    await refusedWith(admin.retryWebhookDelivery('default', unknown, '1'), 'not_found', 404);
    await refusedWith(admin.listWebhooks('nowhere'), 'store_not_found', 404);

    // A store of its own, so the other test's endpoint does not count.
    const store = (await admin.createStore({ slug: 'limits', name: 'Limits', hosts: ['limits.example'] })).id;
    for (let n = 0; n < 20; n++)
      await admin.addWebhook(store, { url: `${receiver.url}/${n}`, events: ['customer.deleted'] });
    await refusedWith(admin.addWebhook(store, { url: receiver.url, events: ['*'] }), 'webhook_limit', 409);
    assert.equal((await admin.listWebhooks(store)).length, 20);
  });
});
