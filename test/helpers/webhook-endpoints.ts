import assert from 'node:assert/strict';
import { afterEach } from 'node:test';
import { adminAppOf, adminCaller } from './admin.js';
import type { Harness, TestApp, TestAppOptions } from './harness.js';
import { adminToken } from './import.js';
import { WebhookReceiver, type Received } from './webhook-receiver.js';

/**
 * A store's webhook endpoints as its platform sets them up over the admin API, each pointing at a
 * real receiver on 127.0.0.1 (allowed by WEBHOOK_ALLOW_PRIVATE), and the events they received.
 */

export const webhooksOf = (store = 'default') => `/admin/v1/stores/${store}/webhooks`;

export type AdminCall = ReturnType<typeof adminCaller>;

/** The service with the admin app beside it, loopback targets allowed unless `env` says otherwise. */
export async function startWithWebhooks(harness: Pick<Harness, 'start'>, options: TestAppOptions = {}) {
  const t = await harness.start({
    ...options,
    env: { ADMIN_TOKENS: adminToken, WEBHOOK_ALLOW_PRIVATE: 'true', ...options.env },
  });
  const admin = await adminAppOf(t);
  return { t, admin, call: adminCaller(admin, adminToken) };
}

/** Receivers started by a test, stopped after it. */
export function useReceivers(): () => Promise<WebhookReceiver> {
  const started: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((receiver) => receiver.stop()));
  });
  return async () => {
    const receiver = new WebhookReceiver();
    await receiver.start();
    started.push(receiver);
    return receiver;
  };
}

/** Adds an endpoint for `receiver` (which must answer 201) and gives the receiver its secret. */
export async function addEndpoint(
  call: AdminCall,
  receiver: WebhookReceiver,
  events: string[] = ['*'],
  store = 'default',
): Promise<{ id: string; secret: string }> {
  const reply = await call('POST', webhooksOf(store), { url: receiver.url, events });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  receiver.secrets = [reply.body.secret];
  return { id: reply.body.id, secret: reply.body.secret };
}

/** Runs the work behind the answers, then sends every due webhook delivery and waits for the answers. */
export async function sendWebhooks(t: TestApp): Promise<void> {
  await t.services.background.drain();
  await t.services.webhooks.drain();
}

/** The events the receiver got of one type, in order. */
export function eventsOf(receiver: WebhookReceiver, type: string): Received['event'][] {
  return receiver.received.filter((entry) => entry.event.type === type).map((entry) => entry.event);
}

/** The events table's rows in the order they were written (their first delivery's). */
export function eventRows(t: TestApp) {
  return t.db.query<{ id: string; type: string; customer_id: string | null; body: string | null }>(
    `SELECT e.id, e.type, e.customer_id::text AS customer_id, e.body FROM webhook_events e
      ORDER BY (SELECT min(d.id) FROM webhook_deliveries d WHERE d.store_id = e.store_id AND d.event_id = e.id)`,
  );
}

/** A delivery as the admin API lists it. */
export interface ListedDelivery {
  id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: Array<{ status: number | null; error: string | null }>;
}

/** An endpoint's deliveries, newest first. */
export async function deliveriesOf(call: AdminCall, endpointId: string, store = 'default'): Promise<ListedDelivery[]> {
  const reply = await call('GET', `${webhooksOf(store)}/${endpointId}/deliveries`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.deliveries as ListedDelivery[];
}

/** An endpoint's health as the admin API shows it. */
export async function endpointOf(call: AdminCall, endpointId: string, store = 'default') {
  const reply = await call('GET', `${webhooksOf(store)}/${endpointId}`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body as { enabled: boolean; disabled_reason: string | null; failing_since: string | null };
}

/** Moves the service's clock on by `seconds` and sends what is due then. */
export async function sendAfter(t: TestApp, seconds: number): Promise<void> {
  t.clock.advance(seconds);
  await sendWebhooks(t);
}

/** The identity (email) of the customer a received event is about. */
export function identityOf(received: Received): string {
  return (received.event.data['customer'] as { identity: { value: string } }).identity.value;
}
