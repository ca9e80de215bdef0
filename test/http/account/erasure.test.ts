import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { attributeUnownedMessages } from '../../../src/delivery/outbox.js';
import { updateStore } from '../../../src/store/store.js';
import { auth, useHarness, registeredCustomer, registration, type TestApp } from '../../helpers/harness.js';
import { assertProblem } from '../../helpers/assertions.js';
import {
  count,
  listedSessionFields,
  loginFrom,
  sessionCookie,
  signedIn,
  withSession,
} from '../../helpers/customers.js';
import { auditRows as auditEvents } from '../../helpers/audit.js';
import { defaultStore } from '../../helpers/database.js';

/**
 * Export my data and delete my account: what each answers, what each refuses, and what a
 * deletion leaves behind in the database (the customer id in the audit trail, nothing else).
 */

function exportData(t: TestApp, session?: string) {
  return t.get(`${auth}/account/export`, session === undefined ? {} : withSession(session));
}

function deleteAccount(t: TestApp, session: string | undefined, body: unknown) {
  return t.post(`${auth}/account/delete`, body, session === undefined ? {} : withSession(session));
}

/**
 * Every text-like column of every table in the database, cast to text, that contains `needle`
 * (without regard to case): "table.column" for each hit.
 */
async function placesHolding(t: TestApp, needle: string): Promise<string[]> {
  const columns = await t.db.query<{ table_name: string; column_name: string }>(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
        AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'uuid')
      ORDER BY c.table_name, c.column_name`,
  );
  assert.ok(columns.length > 10, 'the scan sees the schema');
  const hits: string[] = [];
  for (const { table_name: table, column_name: column } of columns) {
    const [row] = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${table}" WHERE strpos(lower("${column}"::text), lower($1)) > 0`,
      [needle],
    );
    if ((row?.n ?? 0) > 0) hits.push(`${table}.${column}`);
  }
  return hits;
}

describe('export my data and delete my account', () => {
  const harness = useHarness();

  test('a paused store answers 503 store_unavailable to both, with no-store, and deletes nothing', async () => {
    const t = await harness.start();
    const ada = await signedIn(t);
    assert.equal((await updateStore(t.db, t.clock, { status: 'paused' })).ok, true);
    t.services.store.invalidate();
    for (const reply of [
      await exportData(t, ada.session),
      await deleteAccount(t, ada.session, { current_password: ada.password }),
      await deleteAccount(t, undefined, '{not json'),
    ]) {
      assertProblem(reply, 503, 'store_unavailable');
      assert.equal(reply.headers['cache-control'], 'no-store');
    }
    assert.equal(await count(t, 'customers'), 1);
  });

  describe('GET /account/export', () => {
    test('answers 200 with an attachment holding the customer, their sessions and their audit events', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      // A second session of Ada's, opened elsewhere.
      t.clock.advance(10);
      assert.equal((await t.post(`${auth}/login`, { identity: ada.identity, password: ada.password })).status, 200);
      await t.services.background.drain();

      const reply = await exportData(t, ada.session);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.match(String(reply.headers['content-type']), /^application\/json/);
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.equal(reply.headers['content-disposition'], 'attachment; filename="account-export-2026-01-15.json"');
      const data = reply.body;
      assert.equal(data.customer.id, ada.id);
      assert.equal(data.customer.name, 'Ada Lovelace');
      assert.equal(data.customer.identity.value, ada.identity);
      assert.equal(data.customer.created_at, '2026-01-15T10:00:00.000Z');
      assert.equal(data.sessions.length, 2);
      assert.deepEqual(
        data.sessions.map((s: { current: boolean }) => s.current),
        [false, true],
        'newest first, the current one marked',
      );
      for (const session of data.sessions) {
        // As the session list shows them: a public handle, never the cookie or its hash.
        assert.deepEqual(Object.keys(session).sort(), listedSessionFields);
      }
      // Both logins came from one device: remembered once, as its family and masked network only.
      assert.equal(data.known_devices.length, 1);
      assert.deepEqual(Object.keys(data.known_devices[0]).sort(), ['family', 'last_seen_at', 'masked_address']);
      assert.match(data.known_devices[0].masked_address, /\/(24|48)$/);
      const events = data.audit_events.map((e: { event: string }) => e.event);
      assert.deepEqual(events, ['login.succeeded', 'login.succeeded', 'customer.registered']);
      assert.equal(JSON.stringify(data).includes(ada.session), false, 'no session id');
    });

    test('holds nothing of another customer: id, identity, name, sessions or audit entries', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const grace = await signedIn(t, {
        name: 'Grace Hopper',
        email: 'grace@example.com',
        password: 'compiler cobol 1959',
        password_confirmation: 'compiler cobol 1959',
      });
      // Grace's failures and logout land in the trail too, with her id.
      await t.post(`${auth}/login`, { identity: grace.identity, password: 'wrong password 1' });
      await t.post(`${auth}/logout`, undefined, withSession(grace.session));
      await t.services.background.drain();

      const reply = await exportData(t, ada.session);
      assert.equal(reply.status, 200);
      const text = JSON.stringify(reply.body);
      for (const value of [grace.id, grace.identity, 'Grace Hopper', grace.session]) {
        assert.equal(text.includes(value), false, `the export mentions ${value}`);
      }
      const hashes = await t.db.query<{ id_hash: string }>('SELECT id_hash FROM sessions');
      assert.ok(hashes.length >= 1);
      for (const { id_hash } of hashes) assert.equal(text.includes(id_hash), false, 'a session hash');
      assert.equal(reply.body.sessions.length, 1);
      assert.equal(reply.body.audit_events.length, 2, 'registered and signed in: Ada only');
      // Grace's own export is hers alone.
      const hers = await exportData(t, (await signedIn(t, { email: 'grace2@example.com' })).session);
      assert.equal(JSON.stringify(hers.body).includes(ada.id), false);
    });

    test("shows a stranger's failed logins against the account by network only: /24 for IPv4, /48 for IPv6", async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      // Someone else guesses Ada's password, from an IPv4 address and then an IPv6 one.
      for (const address of ['198.51.100.77', '2001:db8:abcd:12::77']) {
        assert.equal((await loginFrom(t, address, ada.identity, 'not her password 1')).status, 401);
      }
      await t.services.background.drain();

      const reply = await exportData(t, ada.session);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      const events: Array<{ event: string; client_address: string | null }> = reply.body.audit_events;
      assert.deepEqual(
        events.filter((e) => e.event === 'login.failed').map((e) => e.client_address),
        ['2001:db8:abcd::/48', '198.51.100.0/24'],
        'newest first',
      );
      // Ada's own events too: no address in the export is a full one.
      for (const { event, client_address: address } of events) assert.match(String(address), /\/(24|48)$/, event);
      const text = JSON.stringify(reply.body);
      for (const full of ['198.51.100.77', '2001:db8:abcd:12']) assert.equal(text.includes(full), false, full);
      // The trail itself keeps the full address, for the operator's eyes only.
      const failed = await auditEvents(t, 'login.failed');
      assert.deepEqual(
        failed.map((e) => e.client_address),
        ['198.51.100.77', '2001:db8:abcd:12::77'],
      );
    });

    test('masks an address held in the details of an exported event as it masks the client address', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      await t.services.background.drain();
      // No event records an address in its details today; one that did must not leak it either.
      await t.db.query(
        `INSERT INTO audit_events (store_id, occurred_at, event, customer_id, client_address, details)
         VALUES ('default', now(), 'session.revoked', $1, NULL,
                 '{"from": "203.0.113.9", "via": "::ffff:192.0.2.44", "v6": "2001:db8:1:2::3", "by": "customer"}')`,
        [ada.id],
      );
      const reply = await exportData(t, ada.session);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      const revoked = reply.body.audit_events.find((e: { event: string }) => e.event === 'session.revoked');
      assert.deepEqual(revoked, {
        occurred_at: revoked.occurred_at,
        event: 'session.revoked',
        client_address: null,
        details: { from: '203.0.113.0/24', via: '192.0.2.0/24', v6: '2001:db8:1::/48', by: 'customer' },
      });
    });

    test('answers 401 unauthenticated without a live session', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      assertProblem(await exportData(t), 401, 'unauthenticated');
      assertProblem(await exportData(t, 'A'.repeat(43)), 401, 'unauthenticated');
      await t.post(`${auth}/logout`, undefined, withSession(ada.session));
      assertProblem(await exportData(t, ada.session), 401, 'unauthenticated');
    });

    test('allows one export per minute per customer and audits account.exported', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const grace = await signedIn(t, { email: 'grace@example.com' });
      assert.equal((await exportData(t, ada.session)).status, 200);
      const again = await exportData(t, ada.session);
      assertProblem(again, 429, 'rate_limited');
      assert.ok(Number(again.headers['retry-after']) >= 1);
      assert.equal((await exportData(t, grace.session)).status, 200, 'counted per customer, not per address');
      const exported = await auditEvents(t, 'account.exported');
      assert.deepEqual(
        exported.map((e) => e.customer_id),
        [ada.id, grace.id],
      );
    });
  });

  describe('POST /account/delete', () => {
    test('answers 200 deleted, clears the cookie, removes the account and lets the identity register again', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const reply = await deleteAccount(t, ada.session, { current_password: ada.password });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.deepEqual(reply.body, { status: 'deleted' });
      assert.equal(reply.headers['cache-control'], 'no-store');
      const cleared = reply.cookies.find((cookie) => cookie.name === sessionCookie);
      assert.ok(cleared, 'the session cookie is set');
      assert.equal(cleared.value, '');
      assert.ok(cleared.expires !== undefined && cleared.expires.getTime() <= Date.now(), 'and expired');
      assert.ok(reply.cookies.find((cookie) => cookie.name === 'XSRF-TOKEN')?.value, 'a fresh XSRF-TOKEN');

      assert.equal(await count(t, 'customers'), 0);
      assert.equal(await count(t, 'sessions'), 0);
      assert.equal(await count(t, 'challenges'), 0);
      assertProblem(await t.get(`${auth}/session`, withSession(ada.session)), 401, 'unauthenticated');
      assertProblem(
        await t.post(`${auth}/login`, { identity: ada.identity, password: ada.password }),
        401,
        'unauthenticated',
      );

      const sent = await t.deliver();
      const notices = sent.filter((m) => m.purpose === 'account_deleted');
      assert.equal(notices.length, 1);
      assert.equal(notices[0]!.to, ada.identity);
      assert.match(notices[0]!.content.subject, /account was deleted/);
      assert.doesNotMatch(notices[0]!.content.text, /https?:/, 'no links');

      const deleted = await auditEvents(t, 'account.deleted');
      assert.deepEqual(
        deleted.map((e) => e.customer_id),
        [ada.id],
      );
      const again = await t.post(`${auth}/register`, registration());
      assert.equal(again.status, 201, 'the identity is free at once');
      assert.notEqual(again.body.id, ada.id);
    });

    test('a wrong current_password is 422 on that field, deletes nothing, and counts toward the failed-login limit', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const wrong = await deleteAccount(t, ada.session, { current_password: 'not the password 1' });
      assertProblem(wrong, 422, 'validation_failed');
      assert.deepEqual(
        wrong.body.errors,
        { current_password: ['Is not correct.'] },
        'the same words as the other account calls',
      );
      assert.equal(await count(t, 'customers'), 1);
      assert.equal((await t.get(`${auth}/session`, withSession(ada.session))).status, 200, 'still signed in');
      // Ten failures in all (this one made 1): the next check, even with the right password, is 429.
      for (let i = 0; i < 9; i += 1) {
        assertProblem(
          await deleteAccount(t, ada.session, { current_password: `wrong ${i}` }),
          422,
          'validation_failed',
        );
      }
      assertProblem(await deleteAccount(t, ada.session, { current_password: ada.password }), 429, 'rate_limited');
      assertProblem(
        await t.post(`${auth}/login`, { identity: ada.identity, password: ada.password }),
        429,
        'rate_limited',
      );
      assert.equal(await count(t, 'customers'), 1);
    });

    test('a missing or empty current_password is 422 naming it', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      for (const body of [{}, { current_password: '' }, { current_password: 7 }]) {
        const reply = await deleteAccount(t, ada.session, body);
        assertProblem(reply, 422, 'validation_failed');
        assert.ok(reply.body.errors.current_password, JSON.stringify(reply.body));
      }
      assert.equal(await count(t, 'customers'), 1);
    });

    test('answers 401 unauthenticated without a live session, whatever the body', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      assertProblem(await deleteAccount(t, undefined, { current_password: ada.password }), 401, 'unauthenticated');
      assertProblem(await deleteAccount(t, undefined, {}), 401, 'unauthenticated');
      assertProblem(await deleteAccount(t, 'A'.repeat(43), { current_password: ada.password }), 401, 'unauthenticated');
      assert.equal(await count(t, 'customers'), 1);
    });

    test('is refused 419 to a browser request without the CSRF token', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const reply = await t.post(
        `${auth}/account/delete`,
        { current_password: ada.password },
        { cookie: `${sessionCookie}=${ada.session}`, 'sec-fetch-site': 'same-origin' },
      );
      assertProblem(reply, 419, 'csrf_token_mismatch');
      assert.equal(await count(t, 'customers'), 1);
      const withToken = await t.post(
        `${auth}/account/delete`,
        { current_password: ada.password },
        {
          cookie: `${sessionCookie}=${ada.session}; XSRF-TOKEN=${ada.xsrf}`,
          'sec-fetch-site': 'same-origin',
          'x-xsrf-token': ada.xsrf,
        },
      );
      assert.equal(withToken.status, 200, JSON.stringify(withToken.body));
    });

    test("drops the customer's unsent messages: only the account_deleted notice goes out", async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const grace = await registeredCustomer(t, { email: 'grace@example.com' });
      await t.deliver();
      t.clock.advance(120);
      assert.equal((await t.post(`${auth}/password/forgot`, { identity: ada.identity })).status, 202);
      assert.equal((await t.post(`${auth}/password/forgot`, { identity: grace.identity })).status, 202);
      await t.services.background.drain(); // queued, not sent
      assert.equal(await count(t, "outbox WHERE status = 'pending'"), 2);

      assert.equal((await deleteAccount(t, ada.session, { current_password: ada.password })).status, 200);
      assert.equal(await count(t, "outbox WHERE status = 'dropped' AND sealed_body IS NULL"), 1);
      const sent = await t.deliver();
      assert.deepEqual(sent.map((m) => [m.to, m.purpose]).sort(), [
        [ada.identity, 'account_deleted'],
        [grace.identity, 'password_reset'],
      ]);
      assert.equal(await count(t, "outbox WHERE status = 'pending'"), 0);
    });

    test("strips the identity from the details of the customer's audit events, keeping the customer id", async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const grace = await registeredCustomer(t, { email: 'grace@example.com' });
      await t.services.background.drain();
      // Events whose details name an identity, as an identity change records.
      await t.db.query(
        `INSERT INTO audit_events (store_id, occurred_at, event, customer_id, details) VALUES
           ('default', now(), 'customer.verified', $1, jsonb_build_object('old', upper($2::text), 'kept', 'x')),
           ('default', now(), 'customer.verified', $3, jsonb_build_object('old', $4::text))`,
        [ada.id, ada.identity, grace.id, grace.identity],
      );
      const before = await count(t, 'audit_events WHERE customer_id = $1', [ada.id]);
      assert.equal((await deleteAccount(t, ada.session, { current_password: ada.password })).status, 200);
      await t.services.background.drain();
      assert.equal(await count(t, 'audit_events WHERE customer_id = $1', [ada.id]), before + 1, 'events stay');
      const [adas] = await t.db.query<{ details: Record<string, string> }>(
        `SELECT details FROM audit_events WHERE customer_id = $1 AND details ? 'old'`,
        [ada.id],
      );
      assert.deepEqual(adas?.details, { old: '(erased)', kept: 'x' });
      const [graces] = await t.db.query<{ details: Record<string, string> }>(
        `SELECT details FROM audit_events WHERE customer_id = $1 AND details ? 'old'`,
        [grace.id],
      );
      assert.deepEqual(graces?.details, { old: grace.identity }, "another customer's events are untouched");
    });

    test('leaves the identity nowhere in the database and the customer id only in audit rows', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const grace = await signedIn(t, { email: 'grace@example.com' });
      // Leave traces everywhere: a sent message, a pending one, a live code, a failed login, a logout.
      await t.deliver();
      t.clock.advance(120);
      await t.post(`${auth}/password/forgot`, { identity: ada.identity });
      await t.post(`${auth}/login`, { identity: ada.identity, password: 'wrong password 1' });
      const second = await t.post(`${auth}/login`, { identity: ada.identity, password: ada.password });
      await t.post(
        `${auth}/logout`,
        undefined,
        withSession(second.cookies.find((c) => c.name === sessionCookie)!.value),
      );
      await t.services.background.drain();
      assert.ok((await placesHolding(t, ada.identity)).length > 0, 'the scan finds the identity before');

      assert.equal((await deleteAccount(t, ada.session, { current_password: ada.password })).status, 200);
      await t.services.background.drain();
      // Until it is sent, the notice's recipient is the one place the identity is kept.
      assert.deepEqual(await placesHolding(t, ada.identity), ['outbox.recipient']);
      assert.equal(await count(t, "outbox WHERE recipient = $1 AND purpose = 'account_deleted'", [ada.identity]), 1);
      await t.deliver();
      assert.deepEqual(await placesHolding(t, ada.identity), [], 'the identity is nowhere once the notice is sent');
      assert.deepEqual(await placesHolding(t, ada.id), ['audit_events.customer_id']);
      assert.equal(
        await count(t, 'audit_events WHERE customer_id = $1 AND details::text ILIKE $2', [ada.id, `%${ada.identity}%`]),
        0,
      );
      // Grace is untouched.
      assert.ok((await placesHolding(t, grace.identity)).includes('customers.identity_value'));
      assert.equal((await t.get(`${auth}/session`, withSession(grace.session))).status, 200);
    });

    test('after a change of identity it leaves none of the old, the new or a requested identity, nor the customer id', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const grace = await signedIn(t, { email: 'grace@example.com' });
      await t.deliver();
      const changeTo = (email: string) =>
        t.post(`${auth}/identity/change`, { email, current_password: ada.password }, withSession(ada.session));
      // A code to the new address (sent), the switch, and its notice to the old address (still queued).
      const current = 'ada.new@example.org';
      assert.equal((await changeTo(current)).status, 202);
      const code = await t.codeFor(current, 'identity_change');
      t.clock.advance(60);
      const confirmed = await t.post(`${auth}/identity/confirm`, { code }, withSession(ada.session));
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
      // A second change asked for and never confirmed: its code to a third address is still queued.
      t.clock.advance(120);
      const requested = 'ada.third@example.net';
      assert.equal((await changeTo(requested)).status, 202);
      // A message about Grace: it must outlive Ada's deletion.
      assert.equal((await changeTo(grace.identity)).status, 202);
      await t.services.background.drain();
      for (const identity of [ada.identity, current, requested]) {
        assert.ok(
          (await placesHolding(t, identity)).includes('outbox.recipient'),
          `the outbox holds ${identity} before`,
        );
      }

      assert.equal((await deleteAccount(t, ada.session, { current_password: ada.password })).status, 200);
      await t.services.background.drain();
      assert.deepEqual(await placesHolding(t, ada.identity), [], 'the old identity is nowhere');
      assert.deepEqual(await placesHolding(t, requested), [], 'the requested identity is nowhere');
      // Until it is sent, the notice's recipient is the one place the current identity is kept.
      assert.deepEqual(await placesHolding(t, current), ['outbox.recipient']);
      assert.equal(await count(t, "outbox WHERE recipient = $1 AND purpose = 'account_deleted'", [current]), 1);
      assert.deepEqual(await placesHolding(t, ada.id), ['audit_events.customer_id']);
      const sent = await t.deliver();
      assert.deepEqual(
        sent.map((m) => `${m.purpose} to ${m.to}`).sort(),
        [`account_deleted to ${current}`, `identity_taken to ${grace.identity}`],
        'only the notice of deletion and the message to Grace are sent; the rest were dropped',
      );
      assert.deepEqual(await placesHolding(t, current), [], 'the identity is nowhere once the notice is sent');
      assert.deepEqual(await placesHolding(t, ada.id), ['audit_events.customer_id']);
      assert.ok((await placesHolding(t, grace.identity)).includes('customers.identity_value'));
    });

    test('messages queued before the outbox named customers get theirs from their code or their address', async () => {
      const t = await harness.start();
      const ada = await signedIn(t);
      const grace = await registeredCustomer(t, { email: 'grace@example.com' });
      const current = 'ada.new@example.org';
      const change = { email: current, current_password: ada.password };
      assert.equal((await t.post(`${auth}/identity/change`, change, withSession(ada.session))).status, 202);
      const code = await t.codeFor(current, 'identity_change');
      assert.equal((await t.post(`${auth}/identity/confirm`, { code }, withSession(ada.session))).status, 200);
      await t.services.background.drain();
      await t.close();
      // Back to messages that name no customer, as those queued before the outbox had the column
      // (migration 10). The schema cannot be taken back past migration 13 (keys lead with the store),
      // so migration 10's rules are applied as an import from an earlier version applies them, in the
      // store; migration 10 itself is tested on a database made by the migrations before it
      // (test/storage/migrations.test.ts).
      await harness.db.query('UPDATE outbox SET customer_id = NULL');
      assert.equal(await attributeUnownedMessages(defaultStore(harness.db)), 3);
      const rows = await harness.db.query<{ message: string; customer_id: string | null }>(
        `SELECT purpose || ' to ' || recipient AS message, customer_id::text AS customer_id FROM outbox ORDER BY id`,
      );
      assert.deepEqual(rows, [
        { message: `verification to ${ada.identity}`, customer_id: ada.id },
        { message: `verification to ${grace.identity}`, customer_id: grace.id },
        { message: `identity_change to ${current}`, customer_id: ada.id },
        // Its code is gone and the address is no one's now: the janitor's retention ends it.
        { message: `identity_changed to ${ada.identity}`, customer_id: null },
      ]);
    });
  });
});
