import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import {
  createAdminClient,
  type AdminClient,
  type AuditRecord,
  type OutboxEntry,
} from '../../packages/client/src/admin.js';
import { eventually, refusedWith, useClientService } from '../helpers/client-service.js';
import { sparePort } from '../helpers/ports.js';

/**
 * The admin client's calls of a store's audit trail and outbox against a running service whose
 * mail goes to an SMTP port nobody listens on, so every message fails within its short window.
 */

const adminToken = 'admin-token-of-the-store-platform-backend-0123456789';

const smtpPort = await sparePort();

describe("the admin client's audit trail and outbox calls against a running service", { timeout: 120_000 }, () => {
  const running = useClientService('sfa-admin-records-', {
    ADMIN_TOKENS: adminToken,
    ADMIN_PORT: '0',
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    DELIVERY_WINDOW_SECONDS: '3',
    DELIVERY_RETRY_BASE_SECONDS: '0.2',
  });
  let admin: AdminClient;

  before(() => {
    assert.ok(running.service.adminUrl, 'the admin listener is up');
    admin = createAdminClient({ baseUrl: running.service.adminUrl, token: adminToken });
  });

  test('lists the outbox by status and retries a failed message; refusals are typed', async () => {
    // First, while the first store is the only one and so answers on every host.
    const auth = running.clientFor();
    const password = 'correct horse battery 42';
    await auth.register({ name: 'Ada', email: 'ada@example.com', password, password_confirmation: password });
    const failed = await eventually(async () => {
      const { messages } = await admin.listStoreOutbox('default', { status: 'failed' });
      return messages[0];
    });
    assert.equal(failed.recipient, 'ada@example.com');
    assert.equal(failed.purpose, 'verification');
    assert.ok(failed.last_error !== null, 'it says why');
    assert.deepEqual(
      (await admin.listStoreOutbox('default')).messages.map((message: OutboxEntry) => message.id),
      [failed.id],
    );

    assert.deepEqual(await admin.retryStoreOutboxMessage('default', failed.id), { id: failed.id, status: 'pending' });
    // Pending again for its fresh window of three seconds: not retried twice.
    await refusedWith(admin.retryStoreOutboxMessage('default', failed.id), 'message_not_retryable', 409);
    await refusedWith(admin.retryStoreOutboxMessage('default', '999999'), 'not_found', 404);
    await refusedWith(admin.listStoreOutbox('default', { limit: 0 }), 'validation_failed', 422);
    // Its new window ends as the first did: failed again, ready for another retry.
    await eventually(async () => {
      const [message] = (await admin.listStoreOutbox('default', { status: 'failed' })).messages;
      return message?.id === failed.id ? message : undefined;
    });
  });

  test("pages a store's trail newest first, by customer and by event", async () => {
    const store = (await admin.createStore({ slug: 'records', name: 'Records', hosts: ['records.example'] })).id;
    for (const name of ['One', 'Two', 'Three']) await admin.changeStore(store, { name });
    const trail = await eventually(async () => {
      const { events } = await admin.listStoreAudit(store);
      return events.length === 4 ? events : undefined;
    });
    assert.deepEqual(
      trail.map((record: AuditRecord) => record.event),
      ['store.changed', 'store.changed', 'store.changed', 'store.created'],
    );
    assert.deepEqual(trail[3]!.details['slug'], 'records');
    assert.equal(trail[3]!.details['by'], 'admin');

    const first = await admin.listStoreAudit(store, { limit: 3 });
    assert.equal(first.events.length, 3);
    assert.ok(first.next_cursor !== null, 'a full page points at the next');
    const second = await admin.listStoreAudit(store, { limit: 3, cursor: first.next_cursor });
    assert.deepEqual(
      [...first.events, ...second.events].map((record) => record.id),
      trail.map((record) => record.id),
    );
    assert.equal(second.next_cursor, null);

    const created = await admin.listStoreAudit(store, { event: 'store.created' });
    assert.deepEqual(
      created.events.map((record) => record.id),
      [trail[3]!.id],
    );
    assert.deepEqual(await admin.listStoreAudit(store, { customerId: randomUUID() }), {
      events: [],
      next_cursor: null,
    });
    await refusedWith(admin.listStoreAudit(store, { customerId: 'nobody' }), 'validation_failed', 422);
    await refusedWith(admin.listStoreAudit(store, { cursor: 'not-a-cursor' }), 'validation_failed', 422);
    await refusedWith(admin.listStoreAudit('nowhere'), 'store_not_found', 404);
  });
});
