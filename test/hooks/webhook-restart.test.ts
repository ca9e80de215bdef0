import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { defaultWebhookDispatcherOptions } from '../../src/hooks/webhook-dispatcher.js';
import { claimDueDeliveries } from '../../src/hooks/webhook-outbox.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/database.js';
import { registeredCustomer, useHarness } from '../helpers/harness.js';
import { adminToken } from '../helpers/import.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import {
  addEndpoint,
  deliveriesOf,
  sendAfter,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
} from '../helpers/webhook-endpoints.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * A sender that dies with deliveries on its hands. A service killed (SIGKILL, no shutdown) while its
 * deliveries wait for a receiver that is down: the next process on the same database delivers every
 * event once the receiver is back. It is killed once every delivery is back in the queue, unleased:
 * one it had leased would wait out the 60 s lease first, which the test below covers on the fake
 * clock instead.
 */

const auth = '/api/v1/customer/auth';
const customers = ['ada', 'grace', 'hedy', 'ida', 'joan'];

describe('webhooks across a crash', () => {
  let scratch: ScratchDatabase | undefined;
  const services: ServiceProcess[] = [];
  const receiver = new WebhookReceiver();
  after(async () => {
    for (const service of services) if (service.child.exitCode === null) service.child.kill('SIGKILL');
    await receiver.stop();
    await scratch?.drop();
  });

  test('every event pending when the service was killed is delivered by the next one, none missing', async () => {
    scratch = await createScratchDatabase('sfa_test_webhook_restart');
    const env = {
      DATABASE_URL: scratch.url,
      APP_SECRET: 'w'.repeat(40),
      ADMIN_TOKENS: adminToken,
      ADMIN_PORT: '0',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    await receiver.start();
    await receiver.stop(); // down, its port kept for when it comes back
    const first = await startService(env);
    services.push(first);
    const added = await fetch(`${first.adminUrl}/admin/v1/stores/default/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, events: ['customer.registered'] }),
    });
    assert.equal(added.status, 201);
    receiver.secrets = [((await added.json()) as { secret: string }).secret];
    for (const name of customers) {
      const password = 'analytical engine 1843';
      const answer = await fetch(`${first.url}${auth}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, email: `${name}@example.com`, password, password_confirmation: password }),
      });
      assert.equal(answer.status, 201);
    }

    const db = new pg.Client({ connectionString: scratch.url });
    await db.connect();
    try {
      // Killed once each delivery has failed its first attempt and is back in the queue, unleased.
      const settled = async () => {
        const [row] = (
          await db.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM webhook_deliveries WHERE attempts > 0 AND locked_until IS NULL AND status = $1',
            ['pending'],
          )
        ).rows;
        return row!.n;
      };
      while ((await settled()) < customers.length) await new Promise((resolve) => setImmediate(resolve));
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
      const events = (await db.query<{ id: string }>('SELECT id FROM webhook_events')).rows.map((row) => row.id);
      assert.equal(events.length, customers.length);

      await receiver.start();
      const second = await startService(env);
      services.push(second);
      await receiver.receivedCount(customers.length);
      assert.deepEqual(receiver.received.map((entry) => entry.id).sort(), [...events].sort());
      assert.deepEqual(receiver.refused, []);
      assert.equal(await second.stop(), 0);
    } finally {
      await db.end();
    }
  });
});

describe('a delivery whose sender died holding it', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test('is left alone until its lease runs out, then sent under the same webhook-id', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver);
    await registeredCustomer(t);
    const leaseSeconds = defaultWebhookDispatcherOptions.leaseSeconds;
    const now = t.clock.now();
    // Claimed as a dispatcher would, and never sent nor settled.
    const [leased] = await claimDueDeliveries(t.db, now, new Date(now.getTime() + leaseSeconds * 1000), {
      limit: 10,
      perEndpoint: 8,
    });
    assert.ok(leased);
    await sendWebhooks(t);
    assert.equal(receiver.received.length, 0, 'leased elsewhere');
    await sendAfter(t, leaseSeconds - 1);
    assert.equal(receiver.received.length, 0, 'a second before the lease ends');
    await sendAfter(t, 1);
    assert.deepEqual(
      receiver.received.map((entry) => entry.id),
      [leased.event_id],
    );
    const [delivery] = await deliveriesOf(call, id);
    assert.equal(delivery!.status, 'sent');
    assert.equal(delivery!.attempts.length, 1, 'the lost attempt left no record');
  });
});
