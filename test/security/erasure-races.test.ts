import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness, registeredCustomer, type TestApp } from '../helpers/harness.js';
import { heldHasher, loginsAgainstOpenWrite } from '../helpers/races.js';
import { loginFrom as login, sessionCookie } from '../helpers/customers.js';

/**
 * An account deletion and logins of the same customer racing it: no session survives the
 * deletion and no row references the deleted customer. The interleavings are forced: the hasher
 * holds the logins between reading the customer and opening their session, and (on PostgreSQL) a
 * lock on the outbox holds the deletion's transaction open after it has locked the customer row.
 */

async function signedIn(t: TestApp) {
  const customer = await registeredCustomer(t);
  const reply = await login(t, '10.80.0.1', customer.identity, customer.password);
  assert.equal(reply.status, 200);
  assert.ok(reply.cookie);
  return { ...customer, session: reply.cookie };
}

function deleteAccount(t: TestApp, session: string, password: string) {
  return t.post(`${auth}/account/delete`, { current_password: password }, { cookie: `${sessionCookie}=${session}` });
}

/** No row anywhere still points at the customer, except the audit trail's (which has no foreign key). */
async function assertNothingReferences(t: TestApp, customerId: string) {
  for (const table of [
    'customers WHERE id = $1',
    'sessions WHERE customer_id = $1',
    'challenges WHERE customer_id = $1',
  ]) {
    const [row] = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`, [customerId]);
    assert.equal(row?.n, 0, table);
  }
  const [all] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
  assert.equal(all?.n, 0, 'no session at all survives');
}

describe('an account deletion and logins racing it', () => {
  const harness = useHarness();

  test('logins that checked the password before the deletion answer 401 and open no session', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ overrides: { hasher } });
    const ada = await signedIn(t);

    hasher.hold(3);
    const logins = Array.from({ length: 3 }, (_, i) => login(t, `10.81.0.${i + 1}`, ada.identity, ada.password));
    await hasher.arrived(3);
    assert.equal((await deleteAccount(t, ada.session, ada.password)).status, 200);
    hasher.release();

    for (const reply of await Promise.all(logins)) {
      assert.deepEqual([reply.status, reply.code, reply.cookie], [401, 'unauthenticated', undefined]);
    }
    await assertNothingReferences(t, ada.id);
  });

  test('logins that open their session while the deletion transaction is open answer 401 and open none', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ overrides: { hasher } });
    const ada = await signedIn(t);

    // The deletion locks the customer row, deletes the sessions and codes, then waits on the
    // outbox with none of it committed.
    const { written: deleted, logins } = await loginsAgainstOpenWrite({
      databaseUrl: harness.databaseUrl,
      hasher,
      login: (i) => login(t, `10.82.0.${i + 1}`, ada.identity, ada.password),
      write: () => deleteAccount(t, ada.session, ada.password),
      what: 'the deletion',
    });
    assert.equal(deleted.status, 200);

    for (const reply of logins) {
      assert.deepEqual([reply.status, reply.code, reply.cookie], [401, 'unauthenticated', undefined]);
    }
    await assertNothingReferences(t, ada.id);
  });
});
