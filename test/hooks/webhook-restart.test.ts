import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/database.js';
import { adminToken } from '../helpers/import.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * A service killed (SIGKILL, no shutdown) while its webhook deliveries wait for a receiver that is
 * down: the next process on the same database delivers every event once the receiver is back.
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
