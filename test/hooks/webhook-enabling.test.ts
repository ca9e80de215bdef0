import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertProblem } from '../helpers/assertions.js';
import { registeredCustomer, useHarness } from '../helpers/harness.js';
import {
  addEndpoint,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
  webhooksOf,
} from '../helpers/webhook-endpoints.js';

/** Turning an endpoint off and on again over the admin API: what it is sent meanwhile, and after. */

describe('a webhook endpoint turned off and on', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test('a disabled endpoint is sent nothing; enabled again, it gets what waited for it, not what happened meanwhile', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    await registeredCustomer(t);
    const off = await call('PATCH', `${webhooksOf()}/${id}`, { enabled: false });
    assert.deepEqual([off.body.enabled, off.body.disabled_reason], [false, 'disabled by the platform']);
    assert.equal(off.body.disabled_at, t.clock.now().toISOString());
    await sendWebhooks(t);
    await registeredCustomer(t, { email: 'grace@example.com' });
    await sendWebhooks(t);
    assert.deepEqual(receiver.types(), [], 'nothing while it is off');
    assertProblem(await call('POST', `${webhooksOf()}/${id}/test`), 404, 'not_found');

    const on = await call('PATCH', `${webhooksOf()}/${id}`, { enabled: true });
    assert.deepEqual([on.body.enabled, on.body.disabled_at, on.body.disabled_reason], [true, null, null]);
    await sendWebhooks(t);
    const identities = receiver.received.map(
      (entry) => (entry.event.data['customer'] as { identity: { value: string } }).identity.value,
    );
    assert.deepEqual(identities, ['ada@example.com']);
  });

  test('enabled again, what waited for a retry when it was turned off goes at once', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    receiver.answer = (_received, response) => response.writeHead(503).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    t.clock.advance(5);
    await sendWebhooks(t);
    assert.equal(receiver.received.length, 2, 'failed twice: the next attempt is 5 minutes away');
    assert.equal((await call('PATCH', `${webhooksOf()}/${id}`, { enabled: false })).body.enabled, false);

    receiver.answer = (_received, response) => response.writeHead(204).end();
    const on = await call('PATCH', `${webhooksOf()}/${id}`, { enabled: true });
    assert.deepEqual([on.body.enabled, on.body.failing_since], [true, null]);
    await sendWebhooks(t);
    assert.equal(receiver.received.length, 3);
    const [delivery] = (await call('GET', `${webhooksOf()}/${id}/deliveries`)).body.deliveries;
    assert.deepEqual(
      delivery.attempts.map((attempt: { status: number }) => attempt.status),
      [503, 503, 204],
    );
    assert.equal(delivery.status, 'sent');
  });
});
