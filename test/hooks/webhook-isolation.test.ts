import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import { describe, test } from 'node:test';
import { webhookRetrySeconds } from '../../src/hooks/webhook-dispatcher.js';
import { claimDueDeliveries } from '../../src/hooks/webhook-outbox.js';
import { seal } from '../../src/keys.js';
import { registeredCustomer, useHarness } from '../helpers/harness.js';
import { signedInCustomer } from '../helpers/passkeys.js';
import { registerIn, twoStores } from '../helpers/stores.js';
import {
  addEndpoint,
  deliveriesOf,
  identityOf,
  sendAfter,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
} from '../helpers/webhook-endpoints.js';

/**
 * What one delivery may not do to another: a customer's events keep their order without holding up
 * another customer's, one store's dead endpoint leaves another store's alone, a batch serves every
 * endpoint before any one twice, and a name that resolves to loopback when delivered to reaches
 * nothing.
 */

describe('webhook deliveries beside each other', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test("a customer's events arrive in order while the first waits for its retry, and another customer's are not held up", async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    let refusing = true;
    receiver.answer = (received, response) =>
      response.writeHead(refusing && identityOf(received) === 'ada@example.com' ? 500 : 204).end();
    await signedInCustomer(t);
    await registeredCustomer(t, { email: 'grace@example.com', name: 'Grace Hopper' });
    await sendWebhooks(t);
    const waiting = await deliveriesOf(call, id);
    const verified = waiting.find((delivery) => delivery.type === 'customer.verified')!;
    assert.equal(verified.attempts.length, 0, "Ada's second event waits behind her first");
    // Both customers' first events were in flight at once: they may arrive in either order.
    assert.deepEqual(receiver.received.map((entry) => `${entry.event.type} ${identityOf(entry)}`).sort(), [
      'customer.registered ada@example.com',
      'customer.registered grace@example.com',
    ]);
    refusing = false;
    await sendAfter(t, webhookRetrySeconds[0]!);
    const ada = receiver.received
      .filter((entry) => identityOf(entry) === 'ada@example.com')
      .map((entry) => entry.event.type);
    assert.deepEqual(ada, ['customer.registered', 'customer.registered', 'customer.verified']);
    assert.equal(receiver.received.length, 4);
  });

  test("one store's endpoint that never answers holds only its own lanes: another store's event goes out meanwhile", async () => {
    const { t, call } = await startWithWebhooks(harness, {
      overrides: { webhooks: { timeoutMs: 60_000, inFlight: 3, perEndpoint: 2 } },
    });
    const { a, b } = await twoStores(t);
    const dead = await receiverFor();
    const hanging: http.ServerResponse[] = [];
    dead.answer = (_received, response) => void hanging.push(response);
    await addEndpoint(call, dead, ['customer.registered'], a.slug);
    const alive = await receiverFor();
    await addEndpoint(call, alive, ['customer.registered'], b.slug);
    for (const name of ['ada', 'grace', 'hedy']) await registerIn(a, { email: `${name}@example.com` });
    const draining = sendWebhooks(t);
    await dead.receivedCount(2);
    // A's two lanes hang; its third delivery, older than B's, waits for one of them.
    await registerIn(b);
    const meanwhile = t.services.webhooks.drain();
    await alive.receivedCount(1);
    const [settled] = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE store_id = $1 AND jsonb_array_length(attempt_log) > 0',
      [a.id],
    );
    assert.equal(settled!.n, 0, "B's event arrived while all of A's attempts were still waiting for an answer");
    assert.equal(dead.received.length, 2);

    dead.answer = (_received, response) => response.writeHead(204).end();
    for (const response of hanging) response.writeHead(204).end();
    await Promise.all([draining, meanwhile]);
    assert.equal(dead.received.length, 3);
  });

  test("a batch smaller than what is due takes every endpoint's first delivery before anyone's second", async () => {
    const { t, call } = await startWithWebhooks(harness);
    const { a, b } = await twoStores(t);
    const busy = await addEndpoint(call, await receiverFor(), ['customer.registered'], a.slug);
    const quiet = await addEndpoint(call, await receiverFor(), ['customer.registered'], b.slug);
    for (const name of ['ada', 'grace', 'hedy']) await registerIn(a, { email: `${name}@example.com` });
    await registerIn(b);
    const now = t.clock.now();
    const claimed = await claimDueDeliveries(t.db, now, new Date(now.getTime() + 60_000), {
      limit: 2,
      perEndpoint: 8,
    });
    assert.deepEqual(claimed.map((delivery) => delivery.endpoint_id).sort(), [busy.id, quiet.id].sort());
  });

  test('an endpoint whose name resolves to loopback when delivered to gets nothing without WEBHOOK_ALLOW_PRIVATE', async () => {
    const { t, call } = await startWithWebhooks(harness, { env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    const receiver = await receiverFor();
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    receiver.secrets = [secret];
    // As if the name had resolved to a public address when it was added (DNS rebinding).
    const id = randomUUID();
    await t.db.query(
      `INSERT INTO webhook_endpoints (store_id, id, url, events, sealed_secret, created_at, updated_at)
       VALUES ('default', $1, $2, '{*}', $3, now(), now())`,
      [id, receiver.url.replace('127.0.0.1', 'localhost'), seal(t.services.keys.hooks, secret)],
    );
    await registeredCustomer(t);
    await sendWebhooks(t);
    assert.deepEqual([receiver.received.length, receiver.refused.length], [0, 0]);
    const [refused] = await deliveriesOf(call, id);
    assert.equal(refused!.attempts.length, 1);
    assert.equal(refused!.attempts[0]!.status, null);
    assert.match(refused!.attempts[0]!.error ?? '', /^localhost resolves to (127\.0\.0\.1|::1), a private address/);
  });
});
