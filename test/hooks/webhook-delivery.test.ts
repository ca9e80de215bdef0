import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { webhookRetrySeconds } from '../../src/hooks/webhook-dispatcher.js';
import { registeredCustomer, useHarness } from '../helpers/harness.js';
import {
  addEndpoint,
  deliveriesOf,
  endpointOf,
  eventRows,
  identityOf,
  sendAfter,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
  webhooksOf,
} from '../helpers/webhook-endpoints.js';

/**
 * Delivery to one endpoint: the signature, the retry schedule, a receiver that was down and is back,
 * what disables an endpoint, timeouts and redirects. Every request reaches a real receiver that
 * verifies it with the Standard Webhooks reference package; time moves on the service's fake clock.
 */

const day = 24 * 60 * 60;

describe('webhook delivery', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test('a 500 is tried again after 5 s, 5 min and the rest of the schedule, then failed; a retry by hand sends it under the same webhook-id', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    receiver.answer = (_received, response) => response.writeHead(500).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    assert.equal(receiver.received.length, 1);
    await sendAfter(t, webhookRetrySeconds[0]! - 1);
    assert.equal(receiver.received.length, 1, 'not before its 5 s');
    await sendAfter(t, 1);
    assert.equal(receiver.received.length, 2);
    await sendAfter(t, webhookRetrySeconds[1]! - 1);
    assert.equal(receiver.received.length, 2, 'not before its 5 min');
    await sendAfter(t, 1);
    assert.equal(receiver.received.length, 3);
    for (const gap of webhookRetrySeconds.slice(2)) await sendAfter(t, gap);
    assert.equal(receiver.received.length, webhookRetrySeconds.length + 1);
    await sendAfter(t, 7 * day);
    assert.equal(receiver.received.length, webhookRetrySeconds.length + 1, 'nothing after the last');
    const [failed] = await deliveriesOf(call, id);
    assert.equal(failed!.status, 'failed');
    assert.equal(failed!.attempts.length, webhookRetrySeconds.length + 1);
    assert.ok(failed!.attempts.every((attempt) => attempt.status === 500));

    receiver.answer = (_received, response) => response.writeHead(204).end();
    assert.equal((await call('POST', `${webhooksOf()}/${id}/deliveries/${failed!.id}/retry`)).status, 202);
    await sendWebhooks(t);
    assert.equal((await deliveriesOf(call, id))[0]!.status, 'sent');
    assert.equal(receiver.received.length, webhookRetrySeconds.length + 2);
    assert.deepEqual(receiver.refused, [], 'every attempt verified');
    const [event] = await eventRows(t);
    assert.equal(failed!.event_id, event!.id);
    assert.deepEqual(new Set(receiver.received.map((entry) => entry.id)), new Set([event!.id]));
    assert.deepEqual(new Set(receiver.received.map((entry) => entry.body)), new Set([event!.body]));
  });

  test('a receiver that was down gets every event once it is back: its first success brings the waiting retries forward', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    await receiver.stop();
    await registeredCustomer(t);
    await sendWebhooks(t);
    await sendAfter(t, webhookRetrySeconds[0]!);
    await registeredCustomer(t, { email: 'grace@example.com' });
    await sendWebhooks(t);
    const waiting = await deliveriesOf(call, id);
    assert.deepEqual(
      waiting.map((delivery) => [delivery.status, delivery.attempts.length]),
      [
        ['pending', 1],
        ['pending', 2],
      ],
      "Grace's next attempt is 5 s away, Ada's 5 min",
    );
    for (const attempt of waiting.flatMap((delivery) => delivery.attempts)) {
      assert.equal(attempt.status, null);
      assert.match(attempt.error ?? '', /ECONNREFUSED/);
    }

    await receiver.start();
    await registeredCustomer(t, { email: 'hedy@example.com' });
    await sendWebhooks(t);
    assert.equal(identityOf(receiver.received[0]!), 'hedy@example.com', 'the new event first, the clock unmoved');
    const events = (await eventRows(t)).map((event) => event.id);
    assert.equal(events.length, 3);
    assert.deepEqual(receiver.received.map((entry) => entry.id).sort(), events.sort(), 'each once, none missing');
    assert.deepEqual(
      (await deliveriesOf(call, id)).map((delivery) => delivery.status),
      ['sent', 'sent', 'sent'],
    );
    assert.deepEqual(receiver.refused, []);
  });

  test('an event the receiver answered with an error keeps its schedule when another one succeeds', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    receiver.answer = (received, response) =>
      response.writeHead(identityOf(received) === 'ada@example.com' ? 500 : 204).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    await registeredCustomer(t, { email: 'grace@example.com' });
    await sendWebhooks(t);
    assert.equal((await endpointOf(call, id)).failing_since, null, "Grace's success ended the run of failures");
    assert.deepEqual(receiver.received.map(identityOf), ['ada@example.com', 'grace@example.com']);
    await sendAfter(t, webhookRetrySeconds[0]! - 1);
    assert.equal(receiver.received.length, 2, "Ada's retry still waits for its 5 s");
    await sendAfter(t, 1);
    assert.deepEqual(receiver.received.map(identityOf), ['ada@example.com', 'grace@example.com', 'ada@example.com']);
  });

  test('410 Gone disables the endpoint at once, and later events are not sent to it', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    receiver.answer = (_received, response) => response.writeHead(410).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    const gone = await endpointOf(call, id);
    assert.equal(gone.enabled, false);
    assert.match(gone.disabled_reason ?? '', /410 Gone/);
    assert.equal((await deliveriesOf(call, id))[0]!.status, 'failed');
    await registeredCustomer(t, { email: 'grace@example.com' });
    await sendAfter(t, 60);
    assert.equal(receiver.received.length, 1);
    assert.equal((await deliveriesOf(call, id)).length, 1, 'no delivery is made for a disabled endpoint');
  });

  test('an endpoint failing for 5 days is disabled with its reason; a success in between starts the count again', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    receiver.answer = (received, response) =>
      response.writeHead(identityOf(received) === 'grace@example.com' ? 204 : 503).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    assert.equal((await endpointOf(call, id)).failing_since, t.clock.now().toISOString());
    await sendAfter(t, 4 * day);
    await registeredCustomer(t, { email: 'grace@example.com' });
    await sendWebhooks(t);
    assert.equal((await endpointOf(call, id)).failing_since, null, 'a success ends the run of failures');

    // Ada's retries still fail: 6 days after her first failure, but 2 after the success.
    await sendAfter(t, 2 * day);
    const counted = await endpointOf(call, id);
    assert.deepEqual([counted.enabled, counted.failing_since], [true, t.clock.now().toISOString()]);
    await sendAfter(t, 5 * day - 1);
    assert.equal((await endpointOf(call, id)).enabled, true, 'a second short of 5 days');
    t.clock.advance(1);
    await registeredCustomer(t, { email: 'hedy@example.com' });
    await sendWebhooks(t);
    const disabled = await endpointOf(call, id);
    assert.equal(disabled.enabled, false);
    assert.match(disabled.disabled_reason ?? '', /5 days/);
    assert.equal(receiver.received.length, 6, "Ada's 4 attempts, Grace's and Hedy's");
  });

  test('no answer within the timeout and a redirect are failed attempts, and the redirect is not followed', async () => {
    const { t, call } = await startWithWebhooks(harness, { overrides: { webhooks: { timeoutMs: 300 } } });
    const slow = await receiverFor();
    const slowEndpoint = await addEndpoint(call, slow, ['customer.registered']);
    slow.answer = () => {};
    const redirecting = await receiverFor();
    const elsewhere = await receiverFor();
    const redirectEndpoint = await addEndpoint(call, redirecting, ['customer.registered']);
    elsewhere.secrets = redirecting.secrets;
    redirecting.answer = (_received, response) => response.writeHead(301, { location: elsewhere.url }).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    assert.equal(slow.received.length, 1);
    const [timedOut] = await deliveriesOf(call, slowEndpoint.id);
    assert.equal(timedOut!.status, 'pending');
    assert.deepEqual(
      timedOut!.attempts.map((a) => [a.status, a.error]),
      [[null, 'no answer within 0.3 s']],
    );
    assert.equal(redirecting.received.length, 1);
    const [redirected] = await deliveriesOf(call, redirectEndpoint.id);
    assert.equal(redirected!.status, 'pending');
    assert.deepEqual(
      redirected!.attempts.map((a) => a.status),
      [301],
    );
    assert.deepEqual([elsewhere.received.length, elsewhere.refused.length], [0, 0]);
  });
});
