import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { registeredCustomer, useHarness } from '../helpers/harness.js';
import { perDescribe } from '../helpers/per-describe.js';
import { addTestProvider, signedInWith, startProvider } from '../helpers/providers.js';
import { addEndpoint, eventsOf, sendWebhooks, startWithWebhooks, useReceivers } from '../helpers/webhook-endpoints.js';

/** The events of signing in with an OpenID provider, against a real provider (oidc-provider). */

describe('webhook events of a provider sign-in', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();
  const op = perDescribe(
    () => startProvider(),
    (provider) => provider.close(),
    'the provider',
  );

  /** The service at real time (the provider signs with it), the provider saved, two endpoints. */
  async function begin() {
    const { t, call } = await startWithWebhooks(harness, { clockAt: Date.now() });
    await addTestProvider(t, op());
    const everything = await receiverFor();
    const signIns = await receiverFor();
    await addEndpoint(call, everything, ['*']);
    await addEndpoint(call, signIns, ['customer.signed_in']);
    return { t, everything, signIns };
  }

  test('a new account sends customer.registered with method provider and customer.verified, and each sign-in its customer.signed_in', async () => {
    const { t, everything, signIns } = await begin();
    const first = await signedInWith(t, 'google', 'ada');
    const createdAt = t.clock.now().toISOString();
    await sendWebhooks(t);
    const customer = {
      id: first.customer.id,
      identity: { type: 'email', value: 'ada@example.com', verified_at: createdAt },
      name: 'Ada Provider',
      external_id: null,
    };
    const event = (type: string, extras: object = {}) => ({
      type,
      timestamp: createdAt,
      data: { store_id: 'default', customer, ...extras },
    });
    assert.deepEqual(
      everything.received.map((entry) => entry.event),
      [event('customer.registered', { method: 'provider' }), event('customer.verified')],
    );
    assert.deepEqual(
      signIns.received.map((entry) => entry.event),
      [event('customer.signed_in', { method: 'provider' })],
    );
    assert.equal(signIns.received[0]!.body.includes(first.session), false, 'no session id');

    await signedInWith(t, 'google', 'ada');
    await sendWebhooks(t);
    assert.deepEqual(everything.types(), ['customer.registered', 'customer.verified'], 'signing in again is no news');
    assert.deepEqual(
      eventsOf(signIns, 'customer.signed_in').map((entry) => entry.data['method']),
      ['provider', 'provider'],
    );
  });

  test("the provider's verified email is the first proof of an account registered with a password: one customer.verified, never again", async () => {
    const { t, everything } = await begin();
    const ada = await registeredCustomer(t, { email: 'ada@example.com' });
    await signedInWith(t, 'google', 'ada');
    const provenAt = t.clock.now().toISOString();
    await signedInWith(t, 'google', 'ada');
    await sendWebhooks(t);
    assert.deepEqual(everything.types(), ['customer.registered', 'customer.verified']);
    assert.equal(everything.received[0]!.event.data['method'], 'password');
    const verified = eventsOf(everything, 'customer.verified')[0]!;
    assert.deepEqual(verified.data['customer'], {
      id: ada.id,
      identity: { type: 'email', value: 'ada@example.com', verified_at: provenAt },
      name: 'Ada Lovelace',
      external_id: null,
    });
  });
});
