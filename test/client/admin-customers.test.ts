import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createAdminClient, type AdminClient } from '../../packages/client/src/admin.js';
import { refusedWith, useClientService } from '../helpers/client-service.js';

/** The admin client's calls about a store's customers against a running service. */

const adminToken = 'admin-token-of-the-store-platform-backend-0123456789';

describe("the admin client's customer calls against a running service", { timeout: 120_000 }, () => {
  const running = useClientService('sfa-admin-customers-', { ADMIN_TOKENS: adminToken, ADMIN_PORT: '0' });
  let admin: AdminClient;

  before(() => {
    assert.ok(running.service.adminUrl, 'the admin listener is up');
    admin = createAdminClient({ baseUrl: running.service.adminUrl, token: adminToken });
  });

  test('create, find, change, block, unblock, require a reset and delete, each answer typed', async () => {
    const made = await admin.createCustomer(
      'default',
      { identity: 'Grace@Example.com', name: 'Grace Hopper', verified: true, external_id: 'crm-42' },
      { idempotencyKey: 'client-test-grace' },
    );
    assert.equal(made.identity.value, 'grace@example.com');
    assert.equal(made.status, 'active');
    assert.equal(made.session_count, 0);
    const again = await admin.createCustomer(
      'default',
      { identity: 'Grace@Example.com', name: 'Grace Hopper', verified: true, external_id: 'crm-42' },
      { idempotencyKey: 'client-test-grace' },
    );
    assert.equal(again.id, made.id, 'the same key answers the first answer');

    const page = await admin.listCustomers('default', { query: 'grace h', limit: 10 });
    assert.deepEqual(
      page.customers.map((customer) => customer.id),
      [made.id],
    );
    assert.equal(page.next_cursor, null);
    assert.equal((await admin.findCustomer('default', ' GRACE@example.com '))?.id, made.id);
    assert.equal(await admin.findCustomer('default', 'nobody@example.com'), null);

    const changed = await admin.changeCustomer('default', made.id, { name: 'Grace B. Hopper', locale: null });
    assert.equal(changed.name, 'Grace B. Hopper');
    const blocked = await admin.blockCustomer('default', made.id, {
      reason: 'chargeback fraud',
      until: '2999-01-01T00:00:00.000Z',
    });
    assert.equal(blocked.status, 'blocked');
    assert.deepEqual(
      { reason: blocked.block?.reason, until: blocked.block?.until },
      { reason: 'chargeback fraud', until: '2999-01-01T00:00:00.000Z' },
    );
    assert.deepEqual(
      (await admin.listCustomers('default', { status: 'blocked' })).customers.map((customer) => customer.id),
      [made.id],
    );
    assert.equal((await admin.unblockCustomer('default', made.id)).status, 'active');
    assert.equal((await admin.requirePasswordReset('default', made.id)).has_password, false);
    assert.equal(await admin.revokeCustomerSessions('default', made.id), 0);
    await admin.deleteCustomer('default', made.id);
    await refusedWith(admin.getCustomer('default', made.id), 'not_found', 404);
  });
});
