import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { findSessionCustomer } from '../../../src/auth/tables/sessions.js';
import { auth, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { count, signedIn as loggedIn } from '../../helpers/customers.js';
import { defaultStore } from '../../helpers/database.js';

const day = 24 * 60 * 60;

function logout(t: TestApp, session?: string) {
  return t.post(`${auth}/logout`, undefined, session === undefined ? {} : { cookie: `storefront_session=${session}` });
}

function assertUnauthenticated(reply: Reply) {
  assert.equal(reply.status, 401, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'unauthenticated');
}

function sessionsOf(t: TestApp, customerId: string): Promise<number> {
  return count(t, 'sessions WHERE customer_id = $1', [customerId]);
}

describe('logout and sessions', () => {
  const harness = useHarness();

  describe('logout', () => {
    test('answers 200 signed_out with a live session', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      const reply = await logout(t, customer.session);
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, { status: 'signed_out' });
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.equal(await sessionsOf(t, customer.id), 0, 'the session is deleted on the server');
    });

    test('answers 401 unauthenticated without a cookie', async () => {
      const t = await harness.start();
      await loggedIn(t);
      assertUnauthenticated(await logout(t));
    });

    test('answers 401 unauthenticated with a cookie that names no session', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      assertUnauthenticated(await logout(t, 'A'.repeat(43)));
      assertUnauthenticated(await logout(t, ''));
      assert.equal(await sessionsOf(t, customer.id), 1, 'the real session is untouched');
    });

    test('answers 401 unauthenticated the second time', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      assert.equal((await logout(t, customer.session)).status, 200);
      assertUnauthenticated(await logout(t, customer.session));
    });

    test('answers 401 when given the stored hash instead of the cookie value', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      const [row] = await t.db.query<{ id_hash: string }>('SELECT id_hash FROM sessions');
      assert.ok(row);
      assertUnauthenticated(await logout(t, row.id_hash));
      assert.equal((await logout(t, customer.session)).status, 200);
    });

    test('expires the session cookie', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      const reply = await logout(t, customer.session);
      const cleared = reply.cookies.find((cookie) => cookie.name === 'storefront_session');
      assert.ok(cleared, 'a Set-Cookie for the session cookie');
      assert.notEqual(cleared.value, customer.session);
      const expiredByAge = cleared.maxAge !== undefined && cleared.maxAge <= 0;
      const expiredByDate = cleared.expires !== undefined && cleared.expires.getTime() <= Date.now();
      assert.ok(expiredByAge || expiredByDate, JSON.stringify(cleared));
      assert.equal(cleared.path, '/');
    });

    test('issues a new XSRF-TOKEN', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      const reply = await logout(t, customer.session);
      const token = reply.cookies.find((cookie) => cookie.name === 'XSRF-TOKEN');
      assert.ok(token);
      assert.ok(token.value.length > 0);
      assert.notEqual(token.value, customer.xsrf);
    });

    test('ends only the session it was given', async () => {
      const t = await harness.start();
      const ada = await loggedIn(t);
      const grace = await loggedIn(t, { email: 'grace@example.com' });
      assert.equal((await logout(t, ada.session)).status, 200);
      assert.equal(await sessionsOf(t, grace.id), 1);
      assert.equal((await logout(t, grace.session)).status, 200);
    });
  });

  describe('storage', () => {
    test('stores only a hash of the session id', async () => {
      const t = await harness.start();
      const first = await loggedIn(t);
      const second = await t.post(`${auth}/login`, { identity: first.identity, password: first.password });
      const secondSession = second.cookies.find((cookie) => cookie.name === 'storefront_session');
      assert.ok(secondSession);
      const rows = await t.db.query<{ id_hash: string; whole: string }>(
        'SELECT id_hash, s::text AS whole FROM sessions s',
      );
      assert.equal(rows.length, 2);
      for (const row of rows) {
        for (const value of [first.session, secondSession.value]) {
          assert.notEqual(row.id_hash, value);
          assert.ok(!row.whole.includes(value), 'the cookie value appears nowhere in the row');
        }
      }
      assert.notEqual(rows[0]?.id_hash, rows[1]?.id_hash);
    });

    test('session ids carry at least 32 random bytes', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      assert.ok(Buffer.from(customer.session, 'base64url').length >= 32, customer.session);
    });
  });

  describe('lifetime', () => {
    test('a session unused for 14 days and a second is dead', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      t.clock.advance(14 * day + 1);
      assertUnauthenticated(await logout(t, customer.session));
    });

    test('a session unused for a second less than 14 days still works', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      t.clock.advance(14 * day - 1);
      assert.equal((await logout(t, customer.session)).status, 200);
    });

    test('using a session slides its idle timeout', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      t.clock.advance(13 * day);
      assert.equal((await findSessionCustomer(defaultStore(t.db), t.clock, customer.session))?.id, customer.id);
      t.clock.advance(13 * day);
      // 26 days after login, 13 after the last use.
      assert.equal((await findSessionCustomer(defaultStore(t.db), t.clock, customer.session))?.id, customer.id);
      assert.equal((await logout(t, customer.session)).status, 200);
    });

    test('a session used every 13 days still ends 30 days after login', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      for (const step of [13 * day, 13 * day, 4 * day - 1]) {
        t.clock.advance(step);
        assert.equal((await findSessionCustomer(defaultStore(t.db), t.clock, customer.session))?.id, customer.id);
      }
      t.clock.advance(1);
      assert.equal(await findSessionCustomer(defaultStore(t.db), t.clock, customer.session), null);
      assertUnauthenticated(await logout(t, customer.session));
    });
  });

  describe('ending sessions from elsewhere', () => {
    test('a password reset ends every session of that customer and no one else', async () => {
      const t = await harness.start();
      const ada = await loggedIn(t);
      const adaAgain = await t.post(`${auth}/login`, { identity: ada.identity, password: ada.password });
      const adaSecond = adaAgain.cookies.find((cookie) => cookie.name === 'storefront_session');
      assert.ok(adaSecond);
      const grace = await loggedIn(t, { email: 'grace@example.com' });
      assert.equal(await sessionsOf(t, ada.id), 2);

      assert.equal((await t.post(`${auth}/password/forgot`, { identity: ada.identity })).status, 202);
      const code = await t.codeFor(ada.identity, 'password_reset');
      const reset = await t.post(`${auth}/password/reset`, {
        identity: ada.identity,
        code,
        password: 'difference engine 1822',
        password_confirmation: 'difference engine 1822',
      });
      assert.equal(reset.status, 200);

      assert.equal(await sessionsOf(t, ada.id), 0);
      assertUnauthenticated(await logout(t, ada.session));
      assertUnauthenticated(await logout(t, adaSecond.value));
      assert.equal((await logout(t, grace.session)).status, 200);
    });

    test('deleting the customer ends its session', async () => {
      const t = await harness.start();
      const customer = await loggedIn(t);
      await t.db.query('DELETE FROM customers WHERE id = $1', [customer.id]);
      assert.equal(await findSessionCustomer(defaultStore(t.db), t.clock, customer.session), null);
      assertUnauthenticated(await logout(t, customer.session));
    });
  });
});
