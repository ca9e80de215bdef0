import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { webhookRetrySeconds } from '../../src/hooks/webhook-dispatcher.js';
import { claimDueDeliveries } from '../../src/hooks/webhook-outbox.js';
import { seal } from '../../src/keys.js';
import { registeredCustomer, useHarness, type TestApp } from '../helpers/harness.js';
import { signedInCustomer } from '../helpers/passkeys.js';
import { registerIn, twoStores } from '../helpers/stores.js';
import {
  addEndpoint,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
  webhooksOf,
  type AdminCall,
} from '../helpers/webhook-endpoints.js';

/**
 * Delivery: the retry schedule, what disables an endpoint, timeouts and redirects, a customer's
 * order, one store's dead endpoint beside another's, a name that resolves to loopback at delivery,
 * and a delivery whose sender died. Every request reaches a real receiver that verifies it with the
 * Standard Webhooks reference package; time moves on the service's fake clock.
 */

interface Delivery {
  id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: Array<{ status: number | null; error: string | null }>;
}

async function deliveries(call: AdminCall, endpointId: string, store = 'default'): Promise<Delivery[]> {
  const reply = await call('GET', `${webhooksOf(store)}/${endpointId}/deliveries`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.deliveries as Delivery[];
}

async function endpoint(call: AdminCall, endpointId: string) {
  const reply = await call('GET', `${webhooksOf()}/${endpointId}`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body as { enabled: boolean; disabled_reason: string | null; failing_since: string | null };
}

/** Moves the service's clock on and sends what is due then. */
async function after(t: TestApp, seconds: number): Promise<void> {
  t.clock.advance(seconds);
  await sendWebhooks(t);
}

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
    await after(t, webhookRetrySeconds[0]! - 1);
    assert.equal(receiver.received.length, 1, 'not before its 5 s');
    await after(t, 1);
    assert.equal(receiver.received.length, 2);
    await after(t, webhookRetrySeconds[1]! - 1);
    assert.equal(receiver.received.length, 2, 'not before its 5 min');
    await after(t, 1);
    assert.equal(receiver.received.length, 3);
    for (const gap of webhookRetrySeconds.slice(2)) await after(t, gap);
    assert.equal(receiver.received.length, webhookRetrySeconds.length + 1);
    await after(t, 7 * 24 * 60 * 60);
    assert.equal(receiver.received.length, webhookRetrySeconds.length + 1, 'nothing after the last');
    const [failed] = await deliveries(call, id);
    assert.equal(failed!.status, 'failed');
    assert.equal(failed!.attempts.length, webhookRetrySeconds.length + 1);
    assert.ok(failed!.attempts.every((attempt) => attempt.status === 500));

    receiver.answer = (_received, response) => response.writeHead(204).end();
    assert.equal((await call('POST', `${webhooksOf()}/${id}/deliveries/${failed!.id}/retry`)).status, 202);
    await sendWebhooks(t);
    assert.equal((await deliveries(call, id))[0]!.status, 'sent');
    assert.deepEqual(new Set(receiver.received.map((entry) => entry.id)), new Set([failed!.event_id]));
  });

  test('410 Gone disables the endpoint at once, and later events are not sent to it', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    receiver.answer = (_received, response) => response.writeHead(410).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    const gone = await endpoint(call, id);
    assert.equal(gone.enabled, false);
    assert.match(gone.disabled_reason ?? '', /410 Gone/);
    assert.equal((await deliveries(call, id))[0]!.status, 'failed');
    await registeredCustomer(t, { email: 'grace@example.com' });
    await after(t, 60);
    assert.equal(receiver.received.length, 1);
  });

  test('an endpoint failing for 5 days is disabled with its reason; a success in between starts the count again', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    const day = 24 * 60 * 60;
    receiver.answer = (_received, response) => response.writeHead(503).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    assert.ok((await endpoint(call, id)).failing_since !== null);
    receiver.answer = (_received, response) => response.writeHead(204).end();
    await after(t, webhookRetrySeconds[0]!);
    assert.equal((await endpoint(call, id)).failing_since, null, 'a success ends the run of failures');

    receiver.answer = (_received, response) => response.writeHead(503).end();
    await registeredCustomer(t, { email: 'grace@example.com' });
    await sendWebhooks(t);
    await after(t, 5 * day - 60);
    await registeredCustomer(t, { email: 'hedy@example.com' });
    await sendWebhooks(t);
    assert.equal((await endpoint(call, id)).enabled, true, 'just under 5 days');
    await registeredCustomer(t, { email: 'ida@example.com' });
    await after(t, 60);
    const disabled = await endpoint(call, id);
    assert.equal(disabled.enabled, false);
    assert.match(disabled.disabled_reason ?? '', /5 days/);
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
    const [timedOut] = await deliveries(call, slowEndpoint.id);
    assert.equal(timedOut!.status, 'pending');
    assert.deepEqual(
      timedOut!.attempts.map((a) => [a.status, a.error]),
      [[null, 'no answer within 0.3 s']],
    );
    const [redirected] = await deliveries(call, redirectEndpoint.id);
    assert.equal(redirected!.status, 'pending');
    assert.deepEqual(
      redirected!.attempts.map((a) => a.status),
      [301],
    );
    assert.equal(elsewhere.received.length, 0);
  });

  test("a customer's events arrive in order while the first waits for its retry, and another customer's are not held up", async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    let refusing = true;
    receiver.answer = (received, response) => {
      const customer = received.event.data['customer'] as { name?: string } | undefined;
      response.writeHead(refusing && customer?.name === 'Ada Lovelace' ? 500 : 204).end();
    };
    await signedInCustomer(t);
    await registeredCustomer(t, { email: 'grace@example.com', name: 'Grace Hopper' });
    await sendWebhooks(t);
    const waiting = await deliveries(call, id);
    const verified = waiting.find((d) => d.type === 'customer.verified')!;
    assert.equal(verified.attempts.length, 0, "Ada's second event waits behind her first");
    assert.deepEqual(
      receiver.received.map((entry) => [entry.event.type, (entry.event.data['customer'] as { name: string }).name]),
      [
        ['customer.registered', 'Ada Lovelace'],
        ['customer.registered', 'Grace Hopper'],
      ],
    );
    refusing = false;
    await after(t, webhookRetrySeconds[0]!);
    const ada = receiver.received
      .filter((entry) => (entry.event.data['customer'] as { name: string }).name === 'Ada Lovelace')
      .map((entry) => entry.event.type);
    assert.deepEqual(ada, ['customer.registered', 'customer.registered', 'customer.verified']);
  });

  test("one store's endpoint that never answers holds only its own lanes: another store's event goes out meanwhile", async () => {
    const { t, call } = await startWithWebhooks(harness, {
      overrides: { webhooks: { timeoutMs: 1_000, inFlight: 4, perEndpoint: 2 } },
    });
    const { a, b } = await twoStores(t);
    const dead = await receiverFor();
    dead.answer = () => {};
    await addEndpoint(call, dead, ['customer.registered'], a.slug);
    const alive = await receiverFor();
    await addEndpoint(call, alive, ['customer.registered'], b.slug);
    for (const name of ['ada', 'grace', 'hedy', 'ida', 'joan']) await registerIn(a, { email: `${name}@example.com` });
    await registerIn(b);
    const draining = sendWebhooks(t);
    await alive.receivedCount(1);
    // B's event arrived before any of A's attempts had ended (the first ends after its 1 s timeout).
    const [settled] = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE store_id = 'default' AND jsonb_array_length(attempt_log) > 0`,
    );
    assert.equal(settled!.n, 0);
    await draining;
    assert.equal(dead.received.length, 5);
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
    assert.equal(receiver.received.length, 0);
    const [refused] = await deliveries(call, id);
    assert.match(refused!.attempts[0]!.error ?? '', /^localhost resolves to (127\.0\.0\.1|::1), a private address/);
  });

  test('a delivery whose sender stopped before settling it is sent again after its lease, with the same webhook-id', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    await registeredCustomer(t);
    const now = t.clock.now();
    const [leased] = await claimDueDeliveries(t.db, now, new Date(now.getTime() + 60_000), {
      limit: 10,
      perEndpoint: 8,
    });
    assert.ok(leased);
    await sendWebhooks(t);
    assert.equal(receiver.received.length, 0, 'leased elsewhere');
    await after(t, 61);
    assert.deepEqual(
      receiver.received.map((entry) => entry.id),
      [leased.event_id],
    );
    assert.equal((await deliveries(call, id))[0]!.status, 'sent');
  });
});
