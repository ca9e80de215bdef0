import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listKnownDevices } from '../../../src/auth/tables/known-devices.js';
import { auth, registeredCustomer, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { recording, type Recorded } from '../../helpers/recording-db.js';
import { defaultStore } from '../../helpers/database.js';

const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';

function sessionCookie(reply: Reply): string {
  const cookie = reply.cookies.find((c) => c.name === 'storefront_session');
  assert.ok(cookie, 'a session cookie');
  return `storefront_session=${cookie.value}`;
}

async function logInWith(t: TestApp, customer: { identity: string; password: string }, cookie?: string) {
  const reply = await t.post(
    `${auth}/login`,
    { identity: customer.identity, password: customer.password },
    { 'user-agent': firefox, ...(cookie === undefined ? {} : { cookie }) },
  );
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply;
}

/**
 * The statements sent for answers: the audit trail's own writes go behind the answer, and the
 * store cache reads `stores` on its own clock (its change feed polls every second), which a slow
 * host can land inside a login.
 */
function answerStatements(log: Recorded[]): string[] {
  return log
    .map((entry) => entry.sql.trim())
    .filter((sql) => !sql.startsWith('INSERT INTO audit_events') && !/\bFROM stores s\b/.test(sql));
}

describe('database round trips of a login and a session read', () => {
  const harness = useHarness();
  const log: Recorded[] = [];

  async function start(): Promise<TestApp> {
    log.length = 0;
    return harness.start({ overrides: { db: recording(harness.db, log) } });
  }

  test('a login from a known device, replacing the session it carried, is two statements and no transaction', async () => {
    const t = await start();
    const customer = await registeredCustomer(t);
    const first = await logInWith(t, customer);
    const [before] = await listKnownDevices(defaultStore(t.db), customer.id);
    t.clock.advance(60);
    log.length = 0;
    const second = await logInWith(t, customer, sessionCookie(first));
    assert.deepEqual(
      answerStatements(log).map((sql) => sql.split(/\s+/).slice(0, 2).join(' ')),
      ['SELECT id,', 'WITH opened'],
      'the customer lookup, then one statement for the session and the device',
    );
    // What the one statement did: the carried session ended, the new one works, the device is fresher.
    assert.equal((await t.get(`${auth}/session`, { cookie: sessionCookie(first) })).status, 401);
    assert.equal((await t.get(`${auth}/session`, { cookie: sessionCookie(second) })).status, 200);
    const [after] = await listKnownDevices(defaultStore(t.db), customer.id);
    assert.ok(before && after);
    assert.equal(Date.parse(after.last_seen_at) - Date.parse(before.last_seen_at), 60_000);
  });

  test('a session read is one statement', async () => {
    const t = await start();
    const customer = await registeredCustomer(t);
    const cookie = sessionCookie(await logInWith(t, customer));
    log.length = 0;
    assert.equal((await t.get(`${auth}/session`, { cookie })).status, 200);
    assert.equal(answerStatements(log).length, 1, answerStatements(log).join('\n'));
  });
});
