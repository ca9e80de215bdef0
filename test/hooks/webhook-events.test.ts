import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runAdminCommand } from '../../src/cli/commands.js';
import { updateStore } from '../../src/store/store.js';
import { count, sessionCookie, withSession } from '../helpers/customers.js';
import { auth, registeredCustomer, useHarness, type Reply, type TestApp } from '../helpers/harness.js';
import { allowPasskeys, signedInCustomer, addPasskey, signInWithPasskey } from '../helpers/passkeys.js';
import { imported } from '../helpers/import.js';
import { SoftAuthenticator } from '../helpers/webauthn.js';
import { addEndpoint, eventsOf, sendWebhooks, startWithWebhooks, useReceivers } from '../helpers/webhook-endpoints.js';
import type { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The events each customer flow writes beside its change, as a store's system receives them over
 * HTTP: their bodies, who gets which, and none for a change that did not happen.
 */

const password = 'analytical engine 1843';
const changedPassword = 'difference engine 1822';
const resetPassword = 'jacquard loom 1804';

/** The customer as a body shows them. */
function customerAs(id: string, value: string, verifiedAt: string | null, externalId: string | null = null) {
  return {
    id,
    identity: { type: 'email', value, verified_at: verifiedAt },
    name: 'Ada Lovelace',
    external_id: externalId,
  };
}

/** An event as it is expected now: the type, the clock's time, the store, the customer and the extras. */
function expected(t: TestApp, type: string, customer: object, extras: object = {}) {
  return { type, timestamp: t.clock.now().toISOString(), data: { store_id: 'default', customer, ...extras } };
}

/** The events the receiver got since the last call, once everything due was sent. */
function follower(t: TestApp, receiver: WebhookReceiver) {
  let seen = 0;
  return async () => {
    await sendWebhooks(t);
    const fresh = receiver.received.slice(seen).map((entry) => entry.event);
    seen = receiver.received.length;
    return fresh;
  };
}

function sessionOf(reply: Reply): string {
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const session = reply.cookies.find((cookie) => cookie.name === sessionCookie)?.value;
  assert.ok(session, 'a session cookie is set');
  return session;
}

const login = (t: TestApp, identity: string, secret: string) => t.post(`${auth}/login`, { identity, password: secret });

async function allowCodes(t: TestApp): Promise<void> {
  assert.ok((await updateStore(t.db, t.clock, { signInWithCode: true })).ok);
  t.services.store.invalidate();
}

async function codeLogin(t: TestApp, identity: string): Promise<Reply> {
  assert.equal((await t.post(`${auth}/code/request`, { identity })).status, 202);
  return t.post(`${auth}/code/login`, { identity, code: await t.codeFor(identity, 'sign_in') });
}

describe('webhook events from the customer flows', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test('each flow sends its event with the customer as the change left them, and never a code, password, hash or session', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    await addEndpoint(call, receiver, ['*']);
    const next = follower(t, receiver);
    const secrets: string[] = [password, changedPassword, resetPassword];

    const ada = await registeredCustomer(t, { password, password_confirmation: password });
    assert.deepEqual(await next(), [
      expected(t, 'customer.registered', customerAs(ada.id, ada.identity, null), { method: 'password' }),
    ]);

    t.clock.advance(60);
    const verification = await t.codeFor(ada.identity, 'verification');
    secrets.push(verification);
    assert.equal((await t.post(`${auth}/verify`, { identity: ada.identity, code: verification })).status, 200);
    const verifiedAt = t.clock.now().toISOString();
    const proven = customerAs(ada.id, ada.identity, verifiedAt);
    assert.deepEqual(await next(), [expected(t, 'customer.verified', proven)]);

    t.clock.advance(60);
    const laptop = sessionOf(await login(t, ada.identity, password));
    const phone = sessionOf(await login(t, ada.identity, password));
    secrets.push(laptop, phone);
    assert.deepEqual(await next(), [], '`*` leaves customer.signed_in out');
    const listed = await t.get(`${auth}/sessions`, withSession(laptop));
    const other = listed.body.sessions.find((entry: { current: boolean }) => !entry.current);
    assert.equal((await t.post(`${auth}/sessions/${other.id}/revoke`, undefined, withSession(laptop))).status, 200);
    const revokedOne = { sessions: 'one', by: 'customer' };
    assert.deepEqual(await next(), [expected(t, 'customer.sessions_revoked', proven, revokedOne)]);

    secrets.push(sessionOf(await login(t, ada.identity, password)));
    assert.equal((await t.post(`${auth}/sessions/revoke-others`, undefined, withSession(laptop))).status, 200);
    const revokedOthers = { sessions: 'others', by: 'customer' };
    assert.deepEqual(await next(), [expected(t, 'customer.sessions_revoked', proven, revokedOthers)]);

    t.clock.advance(60);
    const changeBody = {
      current_password: password,
      password: changedPassword,
      password_confirmation: changedPassword,
    };
    const rotated = sessionOf(await t.post(`${auth}/password/change`, changeBody, withSession(laptop)));
    secrets.push(rotated);
    assert.deepEqual(await next(), [expected(t, 'customer.password_changed', proven, { how: 'changed' })]);

    t.clock.advance(60);
    const newEmail = 'ada.new@example.org';
    const asked = await t.post(
      `${auth}/identity/change`,
      { email: newEmail, current_password: changedPassword },
      withSession(rotated),
    );
    assert.equal(asked.status, 202, JSON.stringify(asked.body));
    const change = await t.codeFor(newEmail, 'identity_change');
    secrets.push(change);
    assert.equal((await t.post(`${auth}/identity/confirm`, { code: change }, withSession(rotated))).status, 200);
    const moved = customerAs(ada.id, newEmail, t.clock.now().toISOString());
    const previous = { previous_identity: { type: 'email', value: ada.identity } };
    assert.deepEqual(await next(), [expected(t, 'customer.identity_changed', moved, previous)]);

    t.clock.advance(60);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: newEmail })).status, 202);
    const reset = await t.codeFor(newEmail, 'password_reset');
    secrets.push(reset);
    const resetBody = {
      identity: newEmail,
      code: reset,
      password: resetPassword,
      password_confirmation: resetPassword,
    };
    assert.equal((await t.post(`${auth}/password/reset`, resetBody)).status, 200);
    assert.deepEqual(await next(), [expected(t, 'customer.password_changed', moved, { how: 'reset' })]);
    const [row] = await t.db.query<{ password_hash: string }>('SELECT password_hash FROM customers');
    secrets.push(row!.password_hash);

    // Staff end every session: from the admin API, then from the command line.
    secrets.push(sessionOf(await login(t, newEmail, resetPassword)));
    const revoked = await call('POST', `/admin/v1/stores/default/customers/${ada.id}/revoke-sessions`);
    assert.deepEqual(revoked.body, { count: 1 });
    const byStaff = { sessions: 'all', by: 'staff' };
    assert.deepEqual(await next(), [expected(t, 'customer.sessions_revoked', moved, byStaff)]);
    secrets.push(sessionOf(await login(t, newEmail, resetPassword)));
    const config = t.services.config;
    const command = { name: 'customer.revoke-sessions', identity: newEmail } as const;
    assert.deepEqual(await runAdminCommand({ db: t.db, clock: t.clock, config }, command), {
      ok: true,
      output: { status: 'revoked', count: 1 },
    });
    assert.deepEqual(await next(), [expected(t, 'customer.sessions_revoked', moved, byStaff)]);

    const last = sessionOf(await login(t, newEmail, resetPassword));
    secrets.push(last);
    const hashes = await t.db.query<{ id_hash: string }>('SELECT id_hash FROM sessions');
    secrets.push(...hashes.map((entry) => entry.id_hash));
    assert.ok(hashes.length > 0);
    const deleted = await t.post(`${auth}/account/delete`, { current_password: resetPassword }, withSession(last));
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.deepEqual(await next(), [expected(t, 'customer.deleted', { id: ada.id, external_id: null })]);

    assert.equal(receiver.refused.length, 0, 'every request verified');
    const ids = receiver.received.map((entry) => entry.id);
    assert.equal(new Set(ids).size, ids.length, 'each event its own webhook-id');
    for (const { body, event } of receiver.received) {
      for (const secret of secrets) assert.equal(body.includes(secret), false, `${event.type} carries ${secret}`);
      assert.doesNotMatch(body, /password_hash|session_id|\$argon2/);
    }
  });

  describe('customer.verified is sent once, for the first proof of control', () => {
    const firstProofs: Array<{ way: string; prove: (t: TestApp, identity: string) => Promise<void> }> = [
      {
        way: 'a verification code',
        async prove(t, identity) {
          const code = await t.codeFor(identity, 'verification');
          assert.equal((await t.post(`${auth}/verify`, { identity, code })).status, 200);
        },
      },
      {
        way: 'a reset code',
        async prove(t, identity) {
          assert.equal((await t.post(`${auth}/password/forgot`, { identity })).status, 202);
          const code = await t.codeFor(identity, 'password_reset');
          const body = { identity, code, password: resetPassword, password_confirmation: resetPassword };
          assert.equal((await t.post(`${auth}/password/reset`, body)).status, 200);
        },
      },
      {
        way: 'a sign-in code',
        async prove(t, identity) {
          sessionOf(await codeLogin(t, identity));
        },
      },
    ];

    for (const { way, prove } of firstProofs) {
      test(`by ${way}, and not again for later proofs`, async () => {
        const { t, call } = await startWithWebhooks(harness);
        await allowCodes(t);
        const receiver = await receiverFor();
        await addEndpoint(call, receiver, ['customer.verified']);
        const ada = await registeredCustomer(t);
        await prove(t, ada.identity);
        await sendWebhooks(t);
        assert.deepEqual(receiver.types(), ['customer.verified']);
        const verifiedAt = t.clock.now().toISOString();
        assert.deepEqual(eventsOf(receiver, 'customer.verified'), [
          expected(t, 'customer.verified', customerAs(ada.id, ada.identity, verifiedAt)),
        ]);

        // A reset and a sign-in code prove the identity again: neither is a first proof now.
        t.clock.advance(120);
        for (const later of firstProofs.slice(1)) await later.prove(t, ada.identity);
        await sendWebhooks(t);
        assert.deepEqual(receiver.types(), ['customer.verified']);
      });
    }

    test('an import that vouches for a claimed identity sends only its customer.imported', async () => {
      const { t, admin, call } = await startWithWebhooks(harness);
      const receiver = await receiverFor();
      await addEndpoint(call, receiver, ['*']);
      const ada = await registeredCustomer(t);
      const report = await imported(t, admin, [JSON.stringify({ email: ada.identity, verified: true })]);
      assert.equal(report.body.updated, 1, JSON.stringify(report.body));
      await sendWebhooks(t);
      assert.deepEqual(receiver.types(), ['customer.registered', 'customer.imported']);
    });
  });

  describe('a change that did not happen sends nothing', () => {
    const refusals: Array<{
      change: string;
      attempt: (t: TestApp, ada: { identity: string; session: string }) => Promise<Reply>;
    }> = [
      {
        change: 'a registration of a taken identity',
        attempt: (t) =>
          t.post(`${auth}/register`, {
            name: 'Eve',
            email: 'ada@example.com',
            password,
            password_confirmation: password,
          }),
      },
      {
        change: 'a reset with a wrong code',
        attempt: (t, ada) =>
          t.post(`${auth}/password/reset`, {
            identity: ada.identity,
            code: '000000',
            password: resetPassword,
            password_confirmation: resetPassword,
          }),
      },
      {
        change: 'a password change with a wrong current password',
        attempt: (t, ada) =>
          t.post(
            `${auth}/password/change`,
            {
              current_password: 'not the password 1',
              password: changedPassword,
              password_confirmation: changedPassword,
            },
            withSession(ada.session),
          ),
      },
      {
        change: 'a deletion with a wrong current password',
        attempt: (t, ada) =>
          t.post(`${auth}/account/delete`, { current_password: 'not the password 1' }, withSession(ada.session)),
      },
      {
        change: 'a revocation of a session that is not theirs',
        attempt: (t, ada) =>
          t.post(`${auth}/sessions/0b7c6f3e-9d2a-4c1b-8e5f-2a3b4c5d6e7f/revoke`, undefined, withSession(ada.session)),
      },
    ];

    for (const { change, attempt } of refusals) {
      test(change, async () => {
        const { t, call } = await startWithWebhooks(harness);
        const ada = await signedInCustomer(t, { password, password_confirmation: password });
        const receiver = await receiverFor();
        await addEndpoint(call, receiver, ['*', 'customer.signed_in']);
        const before = await count(t, 'webhook_events');
        const reply = await attempt(t, ada);
        assert.ok(reply.status >= 400, `${change} is refused: ${reply.status}`);
        await sendWebhooks(t);
        assert.deepEqual(receiver.types(), []);
        assert.equal(await count(t, 'webhook_events'), before);
      });
    }
  });

  test('`*` leaves out customer.signed_in; an endpoint naming it gets one per sign-in, with its method', async () => {
    const { t, call } = await startWithWebhooks(harness);
    await allowCodes(t);
    await allowPasskeys(t);
    const everything = await receiverFor();
    const signIns = await receiverFor();
    await addEndpoint(call, everything, ['*']);
    await addEndpoint(call, signIns, ['customer.signed_in']);

    const ada = await signedInCustomer(t, { password, password_confirmation: password });
    const authenticator = new SoftAuthenticator('localhost', 'http://localhost');
    assert.equal((await addPasskey(t, ada, authenticator)).status, 201);
    sessionOf(await codeLogin(t, ada.identity));
    sessionOf(await signInWithPasskey(t, authenticator));
    assert.equal((await login(t, ada.identity, 'not the password 1')).status, 401);
    await sendWebhooks(t);

    assert.deepEqual(
      eventsOf(signIns, 'customer.signed_in').map((event) => event.data['method']),
      ['password', 'code', 'passkey'],
    );
    assert.deepEqual(signIns.types(), ['customer.signed_in', 'customer.signed_in', 'customer.signed_in']);
    assert.deepEqual(everything.types(), ['customer.registered', 'customer.verified']);
    const [first] = eventsOf(signIns, 'customer.signed_in');
    assert.deepEqual(Object.keys(first!.data).sort(), ['customer', 'method', 'store_id']);
    assert.equal((first!.data['customer'] as { id: string }).id, ada.id);
  });

  test('an endpoint gets only the types it named', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const registrations = await receiverFor();
    const passwords = await receiverFor();
    await addEndpoint(call, registrations, ['customer.registered']);
    await addEndpoint(call, passwords, ['customer.password_changed', 'customer.deleted']);
    const ada = await signedInCustomer(t, { password, password_confirmation: password });
    const body = { current_password: password, password: changedPassword, password_confirmation: changedPassword };
    assert.equal((await t.post(`${auth}/password/change`, body, withSession(ada.session))).status, 200);
    await registeredCustomer(t, { email: 'grace@example.com' });
    await sendWebhooks(t);
    assert.deepEqual(registrations.types(), ['customer.registered', 'customer.registered']);
    assert.deepEqual(passwords.types(), ['customer.password_changed']);
  });

  test('an import sends one customer.imported with its counts; a dry run sends none', async () => {
    const { t, admin, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    await addEndpoint(call, receiver, ['customer.imported']);
    const lines = [
      JSON.stringify({ email: 'ada@example.com', name: 'Ada', external_id: 'shop-1', invite: true }),
      JSON.stringify({ email: 'bob@example.com', name: 'Bob', external_id: 'shop-2' }),
      JSON.stringify({ email: 'not an email', name: 'Eve' }),
    ];
    const dry = await imported(t, admin, lines, '?dry_run=true');
    assert.equal(dry.body.created, 2, JSON.stringify(dry.body));
    await sendWebhooks(t);
    assert.deepEqual(receiver.types(), [], 'a dry run is not announced');

    const report = await imported(t, admin, lines);
    await sendWebhooks(t);
    assert.deepEqual(
      receiver.received.map((entry) => entry.event),
      [
        {
          type: 'customer.imported',
          timestamp: t.clock.now().toISOString(),
          data: {
            store_id: 'default',
            import_id: report.body.id,
            created: 2,
            updated: 0,
            unchanged: 0,
            refused: 1,
            invited: 1,
          },
        },
      ],
    );
    assert.equal(receiver.received[0]!.body.includes('ada@example.com'), false, 'counts, never customers');
  });
});
