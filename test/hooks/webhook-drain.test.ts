import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WebhookDispatcher } from '../../src/hooks/webhook-dispatcher.js';
import type { Database } from '../../src/storage/database.js';
import { auth, registeredCustomer, useHarness } from '../helpers/harness.js';
import { addEndpoint, startWithWebhooks, useReceivers } from '../helpers/webhook-endpoints.js';

/**
 * drain(), which tests and the command line wait on: it returns only once nothing is due, even
 * when a delivery finishes while a pass is looking and makes the next one of its customer due.
 */

/** The database, with every claim after the first answered only once a delivery has settled and moved on. */
function slowClaims(db: Database): Database {
  let claims = 0;
  let settled: () => void = () => undefined;
  const firstSettled = new Promise<void>((resolve) => (settled = resolve));
  return {
    async query<Row>(sql: string, params: readonly unknown[] = []) {
      const rows = await db.query<Row>(sql, params);
      if (sql.includes('UPDATE webhook_endpoints SET failing_since = NULL')) settled();
      if (sql.includes('WITH lanes AS') && (claims += 1) === 2) {
        // Looked while the first delivery was in flight; answers after it has finished.
        await firstSettled;
        for (let tick = 0; tick < 5; tick += 1) await new Promise((resolve) => setImmediate(resolve));
      }
      return rows;
    },
    exec: (sql) => db.exec(sql),
    transaction: (work) => db.transaction(work),
    close: () => db.close(),
  };
}

describe('draining the webhook deliveries', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test("sends a customer's next event that became due while a pass was looking", async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    await addEndpoint(call, receiver, ['*']);
    const ada = await registeredCustomer(t);
    const code = await t.codeFor(ada.identity, 'verification');
    assert.equal((await t.post(`${auth}/verify`, { identity: ada.identity, code })).status, 200);

    const dispatcher = new WebhookDispatcher({
      db: slowClaims(t.db),
      clock: t.clock,
      keys: t.services.keys,
      logger: t.services.logger,
      rules: t.services.config.webhooks,
    });
    assert.equal(await dispatcher.drain(), 2);
    assert.deepEqual(receiver.types(), ['customer.registered', 'customer.verified']);
  });
});
