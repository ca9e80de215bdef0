import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { auth, useHarness, registeredCustomer, type TestApp } from '../helpers/harness.js';
import { heldHasher, loginsAgainstOpenWrite } from '../helpers/races.js';
import { loginFrom as login, works } from '../helpers/customers.js';
import { auditCount } from '../helpers/audit.js';

/**
 * A password reset signs the customer out everywhere, and a password change everywhere but the
 * device that made it, including of logins that checked the old password while either ran. The interleavings are forced, not hoped for: the hasher holds
 * every login between reading the stored hash and opening its session, and (on PostgreSQL) a lock
 * on the outbox holds the reset's transaction open after it has deleted the sessions.
 */

const newPassword = 'difference engine 1822';

async function reset(t: TestApp, identity: string, code: string) {
  return t.post(`${auth}/password/reset`, {
    identity,
    code,
    password: newPassword,
    password_confirmation: newPassword,
  });
}

describe('a password reset and logins racing it', () => {
  const harness = useHarness();

  test('logins sent around a reset keep no working session once the reset has answered', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
    const code = await t.codeFor(customer.identity, 'password_reset');

    // Eight, as refused logins count toward the identity's limit of ten failures.
    const logins = Array.from({ length: 8 }, (_, i) =>
      login(t, `10.70.0.${i + 1}`, customer.identity, customer.password),
    );
    assert.equal((await reset(t, customer.identity, code)).status, 200);
    for (const reply of await Promise.all(logins)) {
      if (reply.cookie !== undefined)
        assert.equal(await works(t, reply.cookie), false, 'an old-password session works');
    }
    assert.equal((await login(t, '10.70.1.1', customer.identity, newPassword)).status, 200);
  });

  test('a login that checked the old password before the reset committed answers 401 and opens no session', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ overrides: { hasher } });
    const customer = await registeredCustomer(t);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
    const code = await t.codeFor(customer.identity, 'password_reset');

    hasher.hold();
    const logins = Array.from({ length: 8 }, (_, i) =>
      login(t, `10.71.0.${i + 1}`, customer.identity, customer.password),
    );
    await hasher.arrived(8);
    assert.equal((await reset(t, customer.identity, code)).status, 200);
    hasher.release();

    const replies = await Promise.all(logins);
    for (const reply of replies) {
      if (reply.cookie !== undefined)
        assert.equal(await works(t, reply.cookie), false, 'an old-password session works');
      assert.deepEqual([reply.status, reply.code], [401, 'unauthenticated']);
    }
    const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
    assert.equal(sessions?.n, 0);
    assert.equal(await auditCount(t, 'login.succeeded'), 0, 'no login succeeded with the replaced password');
    assert.equal(await auditCount(t, 'login.failed'), 8);
  });

  test('a login that opens its session while the reset transaction is still open answers 401 and opens no session', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ overrides: { hasher } });
    const customer = await registeredCustomer(t);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
    const code = await t.codeFor(customer.identity, 'password_reset');

    // The reset's last statement queues the notice: it waits there with the sessions deleted
    // and the new password written, neither committed.
    const { written: resetReply, logins } = await loginsAgainstOpenWrite({
      databaseUrl: harness.databaseUrl,
      hasher,
      login: (i) => login(t, `10.72.0.${i + 1}`, customer.identity, customer.password),
      write: () => reset(t, customer.identity, code),
      what: 'the reset',
    });
    assert.equal(resetReply.status, 200);

    for (const reply of logins) {
      if (reply.cookie !== undefined) {
        assert.equal(await works(t, reply.cookie), false, 'an old-password session works');
      }
      assert.deepEqual([reply.status, reply.code], [401, 'unauthenticated']);
    }
    assert.equal(await auditCount(t, 'login.succeeded'), 0);
  });

  test('parallel logins that upgrade an old-parameter hash all keep working sessions', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const olderHash = await createArgon2Hasher({ memoryCost: 2048, timeCost: 1, parallelism: 1 }).hash(
      customer.password,
    );
    await t.db.query('UPDATE customers SET password_hash = $2 WHERE id = $1', [customer.id, olderHash]);

    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) => login(t, `10.73.0.${i + 1}`, customer.identity, customer.password)),
    );
    for (const reply of replies) {
      assert.equal(reply.status, 200);
      assert.ok(reply.cookie !== undefined);
      assert.equal(await works(t, reply.cookie), true, 'a session of an upgrading login was ended');
    }
    const [row] = await t.db.query<{ password_hash: string }>('SELECT password_hash FROM customers WHERE id = $1', [
      customer.id,
    ]);
    assert.equal(t.services.hasher.needsRehash(row?.password_hash ?? ''), false, 'the hash was upgraded');
  });
});

/** Logs in and returns the session cookie, for a password change to be made from. */
async function signedIn(t: TestApp, identity: string, password: string): Promise<string> {
  const reply = await login(t, '10.80.9.9', identity, password);
  assert.equal(reply.status, 200);
  return reply.cookie!;
}

async function change(t: TestApp, session: string, currentPassword: string) {
  return t.post(
    `${auth}/password/change`,
    { current_password: currentPassword, password: newPassword, password_confirmation: newPassword },
    { cookie: `${t.services.config.sessionCookieName}=${session}` },
  );
}

/** The session cookie a successful change handed back. */
function rotated(t: TestApp, reply: Awaited<ReturnType<typeof change>>): string {
  const cookie = reply.cookies.find((c) => c.name === t.services.config.sessionCookieName)?.value;
  assert.ok(cookie !== undefined, 'the change sets a new session cookie');
  return cookie;
}

describe('a password change and logins racing it', () => {
  const harness = useHarness();

  test('logins sent around a change keep no working session once the change has answered', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const session = await signedIn(t, customer.identity, customer.password);

    // Eight, as refused logins and the change itself count toward the identity's limit of ten failures.
    const logins = Array.from({ length: 8 }, (_, i) =>
      login(t, `10.80.0.${i + 1}`, customer.identity, customer.password),
    );
    const changed = await change(t, session, customer.password);
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    for (const reply of await Promise.all(logins)) {
      if (reply.cookie !== undefined)
        assert.equal(await works(t, reply.cookie), false, 'an old-password session works');
    }
    assert.equal(await works(t, rotated(t, changed)), true, "the changing device's new session works");
    const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
    assert.equal(sessions?.n, 1, "only the changing device's session is left");
  });

  test('a login that checked the old password before the change committed answers 401 and opens no session', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ overrides: { hasher } });
    const customer = await registeredCustomer(t);
    const session = await signedIn(t, customer.identity, customer.password);

    hasher.hold(8);
    const logins = Array.from({ length: 8 }, (_, i) =>
      login(t, `10.81.0.${i + 1}`, customer.identity, customer.password),
    );
    await hasher.arrived(8);
    const changed = await change(t, session, customer.password);
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    hasher.release();

    for (const reply of await Promise.all(logins)) {
      if (reply.cookie !== undefined)
        assert.equal(await works(t, reply.cookie), false, 'an old-password session works');
      assert.deepEqual([reply.status, reply.code], [401, 'unauthenticated']);
    }
    const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
    assert.equal(sessions?.n, 1, "only the changing device's session is left");
    assert.equal(await works(t, rotated(t, changed)), true);
    assert.equal(await auditCount(t, 'login.succeeded'), 1, 'only the sign-in before the change succeeded');
    assert.equal(await auditCount(t, 'login.failed'), 8);
  });

  test('a login that opens its session while the change transaction is still open answers 401 and opens no session', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ overrides: { hasher } });
    const customer = await registeredCustomer(t);
    const session = await signedIn(t, customer.identity, customer.password);

    // The change's last statement queues the notice: it waits there with the customer row
    // locked, the sessions deleted and the new password written, none of it committed.
    const { written: changed, logins } = await loginsAgainstOpenWrite({
      databaseUrl: harness.databaseUrl,
      hasher,
      login: (i) => login(t, `10.82.0.${i + 1}`, customer.identity, customer.password),
      write: () => change(t, session, customer.password),
      what: 'the change',
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));

    for (const reply of logins) {
      if (reply.cookie !== undefined) {
        assert.equal(await works(t, reply.cookie), false, 'an old-password session works');
      }
      assert.deepEqual([reply.status, reply.code], [401, 'unauthenticated']);
    }
    assert.equal(await auditCount(t, 'login.succeeded'), 1, 'only the sign-in before the change succeeded');
    assert.equal(await works(t, rotated(t, changed)), true);
  });
});
