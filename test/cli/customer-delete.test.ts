import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runAdminCommand } from '../../src/cli/commands.js';
import { deriveKeys } from '../../src/keys.js';
import { cliEnv, runCommand, tempFolders } from '../helpers/cli.js';
import { auth, useHarness, registeredCustomer, registration, testSecret, type TestApp } from '../helpers/harness.js';
import { count, signedIn } from '../helpers/customers.js';

/**
 * `customer delete <identity> --yes`: the same erasure as the customer's own, without a password,
 * audited as the operator's. Run in-process against the harness's database, and once as the real
 * binary with DATABASE_URL pointing at it.
 */

const slow = { timeout: 60_000 };
const folders = tempFolders('sfa-cli-delete-');

function deleteCommand(t: TestApp, identity: string) {
  return runAdminCommand(
    { db: t.db, clock: t.clock, config: t.services.config, keys: deriveKeys(testSecret) },
    { name: 'customer.delete', identity },
  );
}

describe('customer delete', () => {
  const harness = useHarness();
  after(async () => {
    folders.removeAll();
  });

  test('erases the customer as self-service deletion does, queues the notice and audits it as the operator', async () => {
    const t = await harness.start();
    const ada = await signedIn(t);
    const grace = await signedIn(t, { email: 'grace@example.com' });
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: ada.identity })).status, 202);
    await t.services.background.drain();

    const result = await deleteCommand(t, 'ADA@example.com');
    assert.deepEqual(result, { ok: true, output: { id: ada.id, status: 'deleted' } });
    assert.equal(await count(t, 'customers WHERE id = $1', [ada.id]), 0);
    assert.equal(await count(t, 'sessions WHERE customer_id = $1', [ada.id]), 0);
    assert.equal(await count(t, 'challenges WHERE customer_id = $1', [ada.id]), 0);
    assertUnauthenticated((await t.get(`${auth}/session`, { cookie: `storefront_session=${ada.session}` })).status);
    assert.equal((await t.get(`${auth}/session`, { cookie: `storefront_session=${grace.session}` })).status, 200);

    const sent = await t.deliver();
    assert.deepEqual(
      sent.filter((m) => m.to === ada.identity).map((m) => m.purpose),
      ['account_deleted'],
      'the pending reset code was dropped; the notice went out, sealed with the deployment key',
    );
    const audit = await t.db.query<{ client_address: string | null; details: Record<string, string> }>(
      "SELECT client_address, details FROM audit_events WHERE event = 'account.deleted' AND customer_id = $1",
      [ada.id],
    );
    assert.deepEqual(audit, [{ client_address: null, details: { by: 'operator' } }]);
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201, 'the identity is free again');
  });

  test('an unknown identity fails and deletes nothing', async () => {
    const t = await harness.start();
    await registeredCustomer(t);
    const result = await deleteCommand(t, 'nobody@example.com');
    assert.equal(result.ok, false);
    assert.match(result.error ?? '', /no customer with email nobody@example.com/);
    assert.equal(await count(t, 'customers'), 1);
  });

  test('--help names the command and its confirmation flag', async () => {
    const result = await runCommand(['--help'], cliEnv(path.join(folders.fresh(), 'unused')));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /customer delete <identity> --yes/);
  });

  test('the binary refuses without --yes (exit 2) and deletes with it (exit 0)', slow, async () => {
    const t = await harness.start();
    const ada = await registeredCustomer(t);
    const env = cliEnv(path.join(folders.fresh(), 'unused'), {
      DATABASE_URL: harness.databaseUrl,
      APP_SECRET: testSecret,
    });

    const refused = await runCommand(['customer', 'delete', ada.identity], env);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /add --yes to confirm/);
    assert.equal(refused.stdout, '');
    assert.equal(await count(t, 'customers'), 1);

    const missing = await runCommand(['customer', 'delete', '--yes'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /customer delete needs an identity/);

    const done = await runCommand(['customer', 'delete', ada.identity, '--yes'], env);
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(JSON.parse(done.stdout), { id: ada.id, status: 'deleted' });
    assert.equal(await count(t, 'customers'), 0);
    // The binary stamps the notice with the real time; the test's clock catches up to send it.
    t.clock.advance((Date.now() - t.clock.now().getTime()) / 1000 + 60);
    const sent = await t.deliver();
    assert.deepEqual(
      sent.filter((m) => m.purpose === 'account_deleted').map((m) => m.to),
      [ada.identity],
      'the notice the binary queued opens with the service keys',
    );

    const again = await runCommand(['customer', 'delete', ada.identity, '--yes'], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no customer with email/);
  });
});

function assertUnauthenticated(status: number) {
  assert.equal(status, 401);
}
