import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createArgon2Hasher, testArgon2, type PasswordHasher } from '../../src/auth/password.js';
import { auth, createHarness, registeredCustomer, type TestApp } from '../helpers/harness.js';

/**
 * An account deletion and logins of the same customer racing it: no session survives the
 * deletion and no row references the deleted customer. The interleavings are forced: the hasher
 * holds the logins between reading the customer and opening their session, and (on PostgreSQL) a
 * lock on the outbox holds the deletion's transaction open after it has locked the customer row.
 */

/** The test hasher; `holdNext(n)` makes the next n password verifications wait until `release()`. */
function heldHasher() {
  const inner = createArgon2Hasher(testArgon2);
  let toHold = 0;
  let gate: Promise<void> = Promise.resolve();
  let release = () => {};
  let arrived = 0;
  const arrivals: Array<{ count: number; resolve: () => void }> = [];
  const hasher: PasswordHasher & { holdNext(n: number): void; release(): void; arrived(n: number): Promise<void> } = {
    hash: (password) => inner.hash(password),
    async verify(passwordHash, password) {
      if (toHold > 0) {
        toHold -= 1;
        arrived += 1;
        for (const waiter of arrivals.filter((w) => w.count <= arrived)) waiter.resolve();
        await gate;
      }
      return inner.verify(passwordHash, password);
    },
    verifyDummy: (password) => inner.verifyDummy(password),
    needsRehash: (passwordHash) => inner.needsRehash(passwordHash),
    holdNext(n) {
      toHold = n;
      arrived = 0;
      gate = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
    arrived: (count) =>
      count <= arrived ? Promise.resolve() : new Promise((resolve) => arrivals.push({ count, resolve })),
  };
  return hasher;
}

const sessionCookie = 'storefront_session';

async function login(t: TestApp, address: string, identity: string, password: string) {
  const response = await t.app.inject({
    method: 'POST',
    url: `${auth}/login`,
    remoteAddress: address,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ identity, password }),
  });
  return {
    status: response.statusCode,
    code: (response.json().code as string | undefined) ?? '',
    cookie: response.cookies.find((c) => c.name === sessionCookie)?.value,
  };
}

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

/** Polls a condition (never a fixed wait), failing after ten seconds. */
async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await delay(5);
  }
}

describe('an account deletion and logins racing it', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  before(async () => {
    harness = await createHarness();
  });
  after(async () => harness.close());

  test('logins that checked the password before the deletion answer 401 and open no session', async () => {
    const hasher = heldHasher();
    const t = await harness.start({ overrides: { hasher } });
    const ada = await signedIn(t);

    hasher.holdNext(3);
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

    const locker = new pg.Client({ connectionString: harness.databaseUrl });
    await locker.connect();
    // Watched from a connection of its own, outside any transaction (see credential-races.test.ts).
    const watcher = new pg.Client({ connectionString: harness.databaseUrl });
    await watcher.connect();
    const waitingOnLocks = async () => {
      const [row] = (
        await watcher.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      ).rows;
      return row?.n ?? 0;
    };
    try {
      hasher.holdNext(3);
      let finished = 0;
      const logins = Array.from({ length: 3 }, (_, i) =>
        login(t, `10.82.0.${i + 1}`, ada.identity, ada.password).finally(() => (finished += 1)),
      );
      await hasher.arrived(3);

      // The deletion locks the customer row, deletes the sessions and codes, then waits on the
      // outbox with none of it committed.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE outbox IN EXCLUSIVE MODE');
      const deleting = deleteAccount(t, ada.session, ada.password);
      await until(async () => (await waitingOnLocks()) === 1, 'the deletion waits on the outbox');

      hasher.release();
      await until(
        async () => finished + (await waitingOnLocks()) - 1 === 3,
        'every login has answered or waits on the deletion',
      );
      await locker.query('COMMIT');
      assert.equal((await deleting).status, 200);

      for (const reply of await Promise.all(logins)) {
        assert.deepEqual([reply.status, reply.code, reply.cookie], [401, 'unauthenticated', undefined]);
      }
      await assertNothingReferences(t, ada.id);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
      await watcher.end();
    }
  });
});
