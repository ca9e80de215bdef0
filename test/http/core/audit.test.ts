import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listAudit } from '../../../src/audit.js';
import { runAdminCommand } from '../../../src/cli/commands.js';
import { auth, useHarness, registeredCustomer } from '../../helpers/harness.js';
import { defaultStore } from '../../helpers/database.js';

describe('the audit trail', () => {
  const harness = useHarness();

  test('records registration, verification, login success and failure, reset, logout and rate-limit hits with customer, address and request id', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    await t.post(`${auth}/verify`, { identity: customer.identity, code });
    const failed = await t.post(
      `${auth}/login`,
      { identity: customer.identity, password: 'not the password 1' },
      { 'x-request-id': 'req-failed-login' },
    );
    assert.equal(failed.status, 401);
    await t.post(`${auth}/login`, { identity: 'nobody@example.com', password: 'whatever 12345' });
    const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    const cookie = login.cookies.find((c) => c.name === 'storefront_session')!;
    await t.post(`${auth}/logout`, undefined, { cookie: `${cookie.name}=${cookie.value}` });
    await t.post(`${auth}/password/forgot`, { identity: customer.identity });
    const resetCode = await t.codeFor(customer.identity, 'password_reset');
    await t.post(`${auth}/password/reset`, {
      identity: customer.identity,
      code: resetCode,
      password: 'brand new words 9',
      password_confirmation: 'brand new words 9',
    });
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 429);
    await t.services.background.drain();

    const events = (await listAudit(defaultStore(t.db), { limit: 100 })).reverse();
    assert.deepEqual(
      events.map((entry) => entry.event),
      [
        'customer.registered',
        'customer.verified',
        'login.failed',
        'login.failed',
        'login.succeeded',
        'logout',
        'password.reset',
        'rate_limited',
      ],
    );
    const mine = events.filter((entry) => entry.event !== 'rate_limited' && entry !== events[3]);
    for (const entry of mine) assert.equal(entry.customer_id, customer.id, `${entry.event} names the customer`);
    assert.equal(events[3]!.customer_id, null, 'a failed login for an unknown identity names nobody');
    assert.equal(events[2]!.request_id, 'req-failed-login');
    assert.ok(events.every((entry) => entry.client_address === '127.0.0.1'));
    assert.deepEqual(events.at(-1)!.details, { limit: 'message-identity-m' });

    const stored = JSON.stringify(await t.db.query('SELECT * FROM audit_events'));
    for (const secret of [
      customer.password,
      'not the password 1',
      'brand new words 9',
      code,
      resetCode,
      cookie.value,
      'nobody@example.com',
    ]) {
      assert.ok(!stored.includes(secret), 'the trail holds no password, code, session id or attempted identity');
    }
  });

  test('records a wrong current_password on password change, identity change and deletion as reauthentication.failed', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    const cookie = login.cookies.find((c) => c.name === 'storefront_session')!;
    const headers = (requestId: string) => ({ cookie: `${cookie.name}=${cookie.value}`, 'x-request-id': requestId });
    const wrong = 'not the password 1';
    const attempts: Array<[string, string, Record<string, unknown>]> = [
      [
        'password.change',
        '/password/change',
        { current_password: wrong, password: 'brand new words 9', password_confirmation: 'brand new words 9' },
      ],
      ['identity.change', '/identity/change', { email: 'ada.new@example.org', current_password: wrong }],
      ['account.delete', '/account/delete', { current_password: wrong }],
    ];
    for (const [operation, path, body] of attempts) {
      const reply = await t.post(`${auth}${path}`, body, headers(`req-${operation}`));
      assert.equal(reply.status, 422, `${path}: ${JSON.stringify(reply.body)}`);
      assert.ok(reply.body.errors.current_password, path);
    }
    // A refusal for another field, with the right password, is no guess at it.
    const mismatch = {
      current_password: customer.password,
      password: 'brand new words 9',
      password_confirmation: 'other words 9',
    };
    assert.equal((await t.post(`${auth}/password/change`, mismatch, headers('req-mismatch'))).status, 422);
    await t.services.background.drain();

    const events = (await listAudit(defaultStore(t.db), { limit: 100 }))
      .reverse()
      .filter((e) => e.event === 'reauthentication.failed');
    assert.deepEqual(
      events.map((e) => [e.request_id, e.customer_id, e.client_address, e.details]),
      attempts.map(([operation]) => [`req-${operation}`, customer.id, '127.0.0.1', { operation }]),
    );
    assert.ok(
      !JSON.stringify(await t.db.query('SELECT * FROM audit_events')).includes(wrong),
      'no password in the trail',
    );
  });

  test('keeps the order of events recorded in a burst, though background work runs in parallel', async () => {
    const t = await harness.start();
    const ids = Array.from({ length: 40 }, (_, i) => `burst-${String(i).padStart(2, '0')}`);
    for (const requestId of ids) {
      t.services.audit({ storeId: 'default', event: 'login.failed', clientAddress: '127.0.0.1', requestId });
    }
    await t.services.background.drain();
    const listed = (await listAudit(defaultStore(t.db), { limit: 100 })).reverse();
    assert.deepEqual(
      listed.map((entry) => entry.request_id),
      ids,
    );
  });

  test('is listed by the command line, filtered by customer and event', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    await registeredCustomer(t, { email: 'other@example.com' });
    await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    await t.services.background.drain();
    const all = await runAdminCommand({ db: t.db, clock: t.clock, config: t.services.config }, { name: 'audit.list' });
    assert.equal((all.output as unknown[]).length, 3);
    const logins = await runAdminCommand(
      { db: t.db, clock: t.clock, config: t.services.config },
      { name: 'audit.list', identity: customer.identity, event: 'login.succeeded' },
    );
    assert.deepEqual(
      (logins.output as Array<{ event: string }>).map((entry) => entry.event),
      ['login.succeeded'],
    );
    const unknown = await runAdminCommand(
      { db: t.db, clock: t.clock, config: t.services.config },
      { name: 'audit.list', identity: 'ghost@example.com' },
    );
    assert.equal(unknown.ok, false);
  });
});
