import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertProblem } from '../helpers/assertions.js';
import { sessionCookie, withSession } from '../helpers/customers.js';
import { auth, useHarness, type TestApp } from '../helpers/harness.js';
import { imported } from '../helpers/import.js';
import { signedInCustomer } from '../helpers/passkeys.js';
import {
  addEndpoint,
  eventRows,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
  webhooksOf,
  type AdminCall,
} from '../helpers/webhook-endpoints.js';

/**
 * A deleted customer's webhooks: their `customer.deleted` names only what lets a receiver forget
 * them, arrives after everything before it, and their events lose their bodies once sent.
 */

const password = 'analytical engine 1843';
const newPassword = 'difference engine 1822';

/** The endpoint's deliveries by event type (newest first within a type). */
async function deliveriesByType(call: AdminCall, endpointId: string): Promise<Map<string, string[]>> {
  const reply = await call('GET', `${webhooksOf()}/${endpointId}/deliveries`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const byType = new Map<string, string[]>();
  for (const delivery of reply.body.deliveries as Array<{ id: string; type: string }>)
    byType.set(delivery.type, [...(byType.get(delivery.type) ?? []), delivery.id]);
  return byType;
}

/** Ada, proven and signed in, with `shop-4711` as her id in the store's own system. */
async function adaWithExternalId(t: TestApp, admin: Parameters<typeof imported>[1]) {
  const ada = await signedInCustomer(t, { password, password_confirmation: password });
  const report = await imported(t, admin, [
    JSON.stringify({ email: ada.identity, name: 'Ada Lovelace', external_id: 'shop-4711' }),
  ]);
  assert.equal(report.body.updated, 1, JSON.stringify(report.body));
  return ada;
}

describe('webhooks of a deleted customer', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test('customer.deleted carries only id and external_id, and waits until the earlier events of that customer are through', async () => {
    const { t, admin, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    await addEndpoint(call, receiver, ['*']);
    const ada = await adaWithExternalId(t, admin);
    await sendWebhooks(t);
    // The import's event is the store's, in no customer's order.
    assert.deepEqual(receiver.types().sort(), ['customer.imported', 'customer.registered', 'customer.verified']);

    // The receiver is down for the password change: it waits for a retry when the account goes.
    receiver.answer = (_received, response) => response.writeHead(503).end();
    const change = { current_password: password, password: newPassword, password_confirmation: newPassword };
    const changed = await t.post(`${auth}/password/change`, change, withSession(ada.session));
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    await sendWebhooks(t);
    const session = changed.cookies.find((cookie) => cookie.name === sessionCookie)!.value;
    const deleted = await t.post(`${auth}/account/delete`, { current_password: newPassword }, withSession(session));
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    const deletedAt = t.clock.now().toISOString();
    await sendWebhooks(t);
    assert.deepEqual(receiver.types().slice(3), ['customer.password_changed'], 'the deletion waits behind it');

    receiver.answer = (_received, response) => response.writeHead(204).end();
    t.clock.advance(5);
    await sendWebhooks(t);
    assert.deepEqual(receiver.types().slice(3), [
      'customer.password_changed',
      'customer.password_changed',
      'customer.deleted',
    ]);
    const last = receiver.received.at(-1)!;
    assert.deepEqual(last.event, {
      type: 'customer.deleted',
      timestamp: deletedAt,
      data: { store_id: 'default', customer: { id: ada.id, external_id: 'shop-4711' } },
    });
    assert.equal(last.body.includes(ada.identity), false);
    assert.equal(last.body.includes('Ada'), false);
  });

  test("the customer's sent events lose their bodies, and a retry of one answers 409 delivery_erased", async () => {
    const { t, admin, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const endpoint = await addEndpoint(call, receiver, ['*', 'customer.signed_in']);
    const grace = await signedInCustomer(t, { email: 'grace@example.com' });
    const ada = await adaWithExternalId(t, admin);
    await sendWebhooks(t);
    const before = await deliveriesByType(call, endpoint.id);

    const deleted = await t.post(`${auth}/account/delete`, { current_password: password }, withSession(ada.session));
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    const rows = await eventRows(t);
    const ofAda = rows.filter((row) => row.customer_id === ada.id);
    assert.deepEqual(
      ofAda.map((row) => [row.type, row.body === null]),
      [
        ['customer.registered', true],
        ['customer.verified', true],
        ['customer.signed_in', true],
        ['customer.deleted', false],
      ],
    );
    assert.deepEqual(JSON.parse(ofAda.at(-1)!.body!).data.customer, { id: ada.id, external_id: 'shop-4711' });
    const others = rows.filter((row) => row.customer_id !== ada.id);
    assert.ok(others.length >= 4, 'the import and Grace’s events');
    for (const row of others) assert.notEqual(row.body, null, `${row.type} of someone else keeps its body`);
    for (const row of rows) assert.equal(row.body?.includes(ada.identity) ?? false, false, row.type);

    await sendWebhooks(t);
    assert.equal(receiver.types().at(-1), 'customer.deleted');

    const retry = (id: string) => call('POST', `${webhooksOf()}/${endpoint.id}/deliveries/${id}/retry`);
    const [adaRegistered, graceRegistered] = before.get('customer.registered')!;
    assertProblem(await retry(adaRegistered!), 409, 'delivery_erased');
    assert.equal((await retry(graceRegistered!)).status, 202, 'another customer’s event is still sent again');
    await sendWebhooks(t);
    assert.equal(receiver.types().at(-1), 'customer.registered');
    assert.equal(receiver.received.at(-1)!.body.includes(grace.identity), true);
  });

  test('an event still waiting when its customer is deleted is sent whole, then loses its body too', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const endpoint = await addEndpoint(call, receiver, ['*']);
    const ada = await signedInCustomer(t, { password, password_confirmation: password });
    const deleted = await t.post(`${auth}/account/delete`, { current_password: password }, withSession(ada.session));
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    await sendWebhooks(t);
    assert.deepEqual(receiver.types(), ['customer.registered', 'customer.verified', 'customer.deleted']);
    assert.equal(receiver.received[0]!.body.includes(ada.identity), true, 'sent as it was written');

    const rows = await eventRows(t);
    assert.deepEqual(
      rows.map((row) => [row.type, row.body === null]),
      [
        ['customer.registered', true],
        ['customer.verified', true],
        ['customer.deleted', false],
      ],
    );
    const registered = (await deliveriesByType(call, endpoint.id)).get('customer.registered')![0]!;
    assertProblem(
      await call('POST', `${webhooksOf()}/${endpoint.id}/deliveries/${registered}/retry`),
      409,
      'delivery_erased',
    );
  });
});
