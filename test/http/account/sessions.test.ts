import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listAudit } from '../../../src/audit.js';
import { maskAddress } from '../../../src/auth/rules/network.js';
import { hashSessionId } from '../../../src/auth/tables/sessions.js';
import { migrate } from '../../../src/storage/migrations.js';
import { updateStore } from '../../../src/store/store.js';
import { auth, useHarness, registeredCustomer, toReply, type Reply, type TestApp } from '../../helpers/harness.js';
import { listedSessionFields } from '../../helpers/customers.js';
import { defaultStore } from '../../helpers/database.js';

/** In seconds, as the test clock counts. */
const minute = 60;

interface Device {
  session: string;
  xsrf: string;
}

/** Logs in as a browser would: with a user-agent, from an address. */
async function loginFrom(
  t: TestApp,
  customer: { identity: string; password: string },
  { userAgent = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', address = '203.0.113.77' } = {},
): Promise<Device> {
  const reply = toReply(
    await t.app.inject({
      method: 'POST',
      url: `${auth}/login`,
      remoteAddress: address,
      headers: { 'content-type': 'application/json', 'user-agent': userAgent },
      payload: JSON.stringify({ identity: customer.identity, password: customer.password }),
    }),
  );
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const session = reply.cookies.find((cookie) => cookie.name === 'storefront_session');
  const xsrf = reply.cookies.find((cookie) => cookie.name === 'XSRF-TOKEN');
  assert.ok(session && xsrf);
  return { session: session.value, xsrf: xsrf.value };
}

const cookieOf = (device: Device) => ({ cookie: `storefront_session=${device.session}` });
const list = (t: TestApp, device?: Device) => t.get(`${auth}/sessions`, device === undefined ? {} : cookieOf(device));
const revoke = (t: TestApp, device: Device | undefined, id: string) =>
  t.post(`${auth}/sessions/${encodeURIComponent(id)}/revoke`, undefined, device === undefined ? {} : cookieOf(device));
const revokeOthers = (t: TestApp, device?: Device) =>
  t.post(`${auth}/sessions/revoke-others`, undefined, device === undefined ? {} : cookieOf(device));
const whoAmI = (t: TestApp, device: Device) => t.get(`${auth}/session`, cookieOf(device));

function assertProblem(reply: Reply, status: number, code: string) {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(reply.body.code, code);
  assert.equal(reply.headers['content-type'], 'application/problem+json; charset=utf-8');
}

/** A problem answer without what differs per request, for comparing two answers whole. */
function comparable(reply: Reply) {
  const { 'x-request-id': _id, date: _date, ...headers } = reply.headers;
  const { request_id: _requestId, ...body } = reply.body as Record<string, unknown>;
  return { status: reply.status, headers, body };
}

async function auditOf(t: TestApp, customerId: string) {
  await t.services.background.drain();
  return listAudit(defaultStore(t.db), { customerId, event: 'session.revoked' });
}

describe('account area: sessions', () => {
  const harness = useHarness();

  describe('GET /sessions', () => {
    test('lists the live sessions newest first, with the current one marked and the client as at login', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const phoneAgent =
        'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
      const phone = await loginFrom(t, ada, { userAgent: phoneAgent, address: '198.51.100.23' });
      t.clock.advance(minute);
      const laptop = await loginFrom(t, ada, { userAgent: 'Laptop Firefox', address: '2001:db8:abcd:12:3456::1' });
      const reply = await list(t, laptop);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.headers['cache-control'], 'no-store');
      const sessions = reply.body.sessions as Array<Record<string, any>>;
      assert.equal(sessions.length, 2);
      assert.deepEqual(
        sessions.map((session) => [session.current, session.client]),
        [
          [
            true,
            {
              user_agent: 'Laptop Firefox',
              device: 'Unknown browser on unknown system',
              address: '2001:db8:abcd::/48',
            },
          ],
          [false, { user_agent: phoneAgent, device: 'Safari on iOS', address: '198.51.100.0/24' }],
        ],
      );
      const [newest] = sessions;
      assert.deepEqual(Object.keys(newest!).sort(), listedSessionFields);
      assert.equal(newest!.created_at, t.clock.now().toISOString());
      assert.equal(new Date(newest!.expires_at).getTime() - t.clock.now().getTime(), 30 * 24 * 60 * minute * 1000);
      // Seen from the other device, the other one is current.
      const fromPhone = await list(t, phone);
      assert.deepEqual(
        fromPhone.body.sessions.map((session: { current: boolean }) => session.current),
        [false, true],
      );
    });

    test('the id is a stored random handle: neither the cookie nor its hash, and unlike any other', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const first = await loginFrom(t, ada);
      const second = await loginFrom(t, ada);
      const ids = (await list(t, first)).body.sessions.map((session: { id: string }) => session.id);
      assert.equal(new Set(ids).size, 2);
      for (const device of [first, second]) {
        for (const id of ids) {
          assert.notEqual(id, device.session);
          assert.notEqual(id, hashSessionId(device.session));
          assert.ok(!device.session.includes(id) && !id.includes(device.session.slice(0, 8)));
        }
      }
      const rows = await t.db.query<{ public_id: string }>('SELECT public_id::text AS public_id FROM sessions');
      assert.deepEqual(rows.map((row) => row.public_id).sort(), [...ids].sort(), 'the listed id is the stored one');
    });

    test('stores the user-agent cut to 256 characters and only the masked address', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const long = 'é'.repeat(300);
      const device = await loginFrom(t, ada, { userAgent: long, address: '::ffff:192.0.2.200' });
      const [session] = (await list(t, device)).body.sessions;
      assert.equal(session.client.user_agent, 'é'.repeat(256));
      assert.equal(session.client.address, '192.0.2.0/24');
      const stored = await t.db.query<Record<string, unknown>>('SELECT * FROM sessions');
      assert.ok(!JSON.stringify(stored).includes('192.0.2.200'), 'the full address is nowhere in the row');
    });

    test('a login with an empty user-agent lists it as null', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const device = await loginFrom(t, ada, { userAgent: '' });
      assert.equal((await list(t, device)).body.sessions[0].client.user_agent, null);
    });

    test('shows only the caller’s own live sessions', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const grace = await registeredCustomer(t, { email: 'grace@example.com' });
      const adaDevice = await loginFrom(t, ada);
      await loginFrom(t, grace);
      const stale = await loginFrom(t, ada);
      await t.db.query('UPDATE sessions SET expires_at = $2 WHERE id_hash = $1', [
        hashSessionId(stale.session),
        t.clock.now(),
      ]);
      const reply = await list(t, adaDevice);
      assert.equal(reply.body.sessions.length, 1);
      assert.equal(reply.body.sessions[0].current, true);
    });

    test('answers 401 unauthenticated without a live session', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      await loginFrom(t, ada);
      assertProblem(await list(t), 401, 'unauthenticated');
      assertProblem(await list(t, { session: 'A'.repeat(43), xsrf: '' }), 401, 'unauthenticated');
    });

    test('answers 503 store_unavailable while the store is paused', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const device = await loginFrom(t, ada);
      await updateStore(t.db, t.clock, { status: 'paused' });
      t.services.store.invalidate();
      assertProblem(await list(t, device), 503, 'store_unavailable');
      assertProblem(await revokeOthers(t, device), 503, 'store_unavailable');
    });
  });

  describe('last_seen_at', () => {
    test('is written at most once per 5 minutes per session', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const device = await loginFrom(t, ada);
      const loggedInAt = t.clock.now().toISOString();
      const lastSeen = async () => (await list(t, device)).body.sessions[0].last_seen_at as string;
      t.clock.advance(4 * minute);
      assert.equal((await whoAmI(t, device)).status, 200);
      assert.equal(await lastSeen(), loggedInAt, 'four minutes on: not written');
      t.clock.advance(61);
      assert.equal((await whoAmI(t, device)).status, 200);
      const touched = t.clock.now().toISOString();
      assert.equal(await lastSeen(), touched, 'past five minutes: written');
      t.clock.advance(2 * minute);
      assert.equal((await whoAmI(t, device)).status, 200);
      assert.equal(await lastSeen(), touched, 'two minutes after the write: not written again');
    });
  });

  describe('POST /sessions/{id}/revoke', () => {
    test('ends another of the caller’s sessions and keeps the current one', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const phone = await loginFrom(t, ada);
      t.clock.advance(minute);
      const laptop = await loginFrom(t, ada);
      const [, phoneEntry] = (await list(t, laptop)).body.sessions;
      const reply = await revoke(t, laptop, phoneEntry.id);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.deepEqual(reply.body, { status: 'revoked' });
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.equal(
        reply.cookies.find((cookie) => cookie.name === 'storefront_session'),
        undefined,
      );
      assertProblem(await whoAmI(t, phone), 401, 'unauthenticated');
      assert.equal((await whoAmI(t, laptop)).status, 200);
      assert.equal((await list(t, laptop)).body.sessions.length, 1);
      const [event] = await auditOf(t, ada.id);
      assert.deepEqual(event?.details, { count: '1', current: 'false', by: 'customer' });
      const metric = await t.services.metrics.sessionsRevoked.get();
      assert.equal(metric.values.find((value) => value.labels.scope === 'one')?.value, 1);
    });

    test('revoking the current session is a logout: cookie expired, new XSRF-TOKEN', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const device = await loginFrom(t, ada);
      const [own] = (await list(t, device)).body.sessions;
      const reply = await revoke(t, device, own.id);
      assert.equal(reply.status, 200);
      const cleared = reply.cookies.find((cookie) => cookie.name === 'storefront_session');
      assert.ok(cleared, 'a Set-Cookie for the session cookie');
      assert.ok((cleared.maxAge ?? 1) <= 0 || (cleared.expires?.getTime() ?? Infinity) <= Date.now());
      const xsrf = reply.cookies.find((cookie) => cookie.name === 'XSRF-TOKEN');
      assert.ok(xsrf && xsrf.value !== device.xsrf);
      assertProblem(await whoAmI(t, device), 401, 'unauthenticated');
      const [event] = await auditOf(t, ada.id);
      assert.deepEqual(event?.details, { count: '1', current: 'true', by: 'customer' });
    });

    test('another customer’s session answers 404 exactly as one that does not exist, and stays', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const grace = await registeredCustomer(t, { email: 'grace@example.com' });
      const adaDevice = await loginFrom(t, ada);
      const graceDevice = await loginFrom(t, grace);
      const [graceEntry] = (await list(t, graceDevice)).body.sessions;
      const theirs = await revoke(t, adaDevice, graceEntry.id);
      const nobody = await revoke(t, adaDevice, '0b7c6f3e-9d2a-4c1b-8e5f-2a3b4c5d6e7f');
      const malformed = await revoke(t, adaDevice, 'not-a-handle');
      assertProblem(theirs, 404, 'not_found');
      assert.deepEqual(comparable(theirs), comparable(nobody));
      assert.deepEqual(comparable(theirs), comparable(malformed));
      assert.equal((await whoAmI(t, graceDevice)).status, 200, 'the other customer’s session is untouched');
      assert.deepEqual(await auditOf(t, ada.id), [], 'nothing was revoked');
    });

    test('the stored hash of a session is no handle', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const first = await loginFrom(t, ada);
      const second = await loginFrom(t, ada);
      assertProblem(await revoke(t, first, hashSessionId(second.session)), 404, 'not_found');
      assertProblem(await revoke(t, first, second.session), 404, 'not_found');
      assert.equal((await whoAmI(t, second)).status, 200);
    });

    test('answers 401 unauthenticated without a live session, revoking nothing', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const device = await loginFrom(t, ada);
      const [entry] = (await list(t, device)).body.sessions;
      assertProblem(await revoke(t, undefined, entry.id), 401, 'unauthenticated');
      assert.equal((await whoAmI(t, device)).status, 200);
    });

    test('is limited per customer: the 31st in ten minutes answers 429', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const device = await loginFrom(t, ada);
      for (let i = 0; i < 30; i += 1) {
        assertProblem(await revoke(t, device, '0b7c6f3e-9d2a-4c1b-8e5f-2a3b4c5d6e7f'), 404, 'not_found');
      }
      const [entry] = (await list(t, device)).body.sessions;
      const limited = await revoke(t, device, entry.id);
      assertProblem(limited, 429, 'rate_limited');
      assert.ok(Number(limited.headers['retry-after']) > 0);
      assert.equal((await whoAmI(t, device)).status, 200, 'the refused call revoked nothing');
    });
  });

  describe('POST /sessions/revoke-others', () => {
    test('ends every other session, keeps the current one and says how many', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const grace = await registeredCustomer(t, { email: 'grace@example.com' });
      const others = [await loginFrom(t, ada), await loginFrom(t, ada), await loginFrom(t, ada)];
      const graceDevice = await loginFrom(t, grace);
      const current = await loginFrom(t, ada);
      const reply = await revokeOthers(t, current);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.deepEqual(reply.body, { status: 'revoked', count: 3 });
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.equal(
        reply.cookies.find((cookie) => cookie.name === 'storefront_session'),
        undefined,
      );
      for (const other of others) assertProblem(await whoAmI(t, other), 401, 'unauthenticated');
      assert.equal((await whoAmI(t, current)).status, 200);
      assert.equal((await whoAmI(t, graceDevice)).status, 200, 'another customer keeps their sessions');
      const [event] = await auditOf(t, ada.id);
      assert.deepEqual(event?.details, { count: '3', current: 'false', by: 'customer' });
      const metric = await t.services.metrics.sessionsRevoked.get();
      assert.equal(metric.values.find((value) => value.labels.scope === 'others')?.value, 3);
      assert.deepEqual((await revokeOthers(t, current)).body, { status: 'revoked', count: 0 });
    });

    test('answers 401 unauthenticated without a live session, revoking nothing', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const device = await loginFrom(t, ada);
      assertProblem(await revokeOthers(t), 401, 'unauthenticated');
      assertProblem(
        await revokeOthers(t, { session: hashSessionId(device.session), xsrf: '' }),
        401,
        'unauthenticated',
      );
      assert.equal((await whoAmI(t, device)).status, 200);
    });
  });

  describe('CSRF', () => {
    test('a browser request from another site is refused on both POSTs, and nothing is revoked', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      const other = await loginFrom(t, ada);
      const device = await loginFrom(t, ada);
      const [, otherEntry] = (await list(t, device)).body.sessions;
      const cookie = `storefront_session=${device.session}; XSRF-TOKEN=${device.xsrf}`;
      const crossSite = {
        cookie,
        'x-xsrf-token': device.xsrf,
        'sec-fetch-site': 'cross-site',
        origin: 'https://evil.example',
      };
      const noToken = { cookie, 'sec-fetch-site': 'same-origin' };
      for (const path of [`/sessions/${otherEntry.id}/revoke`, '/sessions/revoke-others']) {
        assertProblem(await t.post(`${auth}${path}`, undefined, crossSite), 403, 'untrusted_origin');
        assertProblem(await t.post(`${auth}${path}`, undefined, noToken), 419, 'csrf_token_mismatch');
      }
      assert.equal((await whoAmI(t, other)).status, 200);
      const sameOrigin = { ...noToken, 'x-xsrf-token': device.xsrf };
      assert.equal((await t.post(`${auth}/sessions/revoke-others`, undefined, sameOrigin)).status, 200);
      assertProblem(await whoAmI(t, other), 401, 'unauthenticated');
    });
  });

  describe('migration', () => {
    test('gives every existing session its own handle', async () => {
      const t = await harness.start();
      const ada = await registeredCustomer(t);
      await loginFrom(t, ada);
      await loginFrom(t, ada);
      await t.close();
      // Back to the schema before the handles, with the two sessions in it, then forward again.
      await harness.db.exec(`
        DROP INDEX sessions_customer_created;
        CREATE INDEX sessions_customer ON sessions (customer_id);
        ALTER TABLE sessions DROP COLUMN public_id, DROP COLUMN user_agent, DROP COLUMN client_address;
        DELETE FROM schema_migrations WHERE version = 5;
      `);
      assert.deepEqual(await migrate(harness.db), [5]);
      const rows = await harness.db.query<{ public_id: string | null }>(
        'SELECT public_id::text AS public_id FROM sessions',
      );
      assert.equal(rows.length, 2);
      assert.ok(rows.every((row) => row.public_id !== null && /^[0-9a-f-]{36}$/.test(row.public_id)));
      assert.notEqual(rows[0]!.public_id, rows[1]!.public_id);
    });
  });
});

describe('maskAddress', () => {
  test('keeps the /24 of IPv4 and the /48 of IPv6', () => {
    assert.equal(maskAddress('203.0.113.77'), '203.0.113.0/24');
    assert.equal(maskAddress('::ffff:203.0.113.77'), '203.0.113.0/24');
    assert.equal(maskAddress('2001:db8:abcd:12:3456::1'), '2001:db8:abcd::/48');
    assert.equal(maskAddress('2001:0db8:0000:ffff::1'), '2001:db8::/48');
    assert.equal(maskAddress('::1'), '::/48');
    assert.equal(maskAddress('fe80::1%eth0'), 'fe80::/48');
    assert.equal(maskAddress('not an address'), null);
  });
});
