import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore } from '../../../src/store/store.js';
import { assertProblem } from '../../helpers/assertions.js';
import { sessionCookie, withSession } from '../../helpers/customers.js';
import {
  auth,
  registeredCustomer,
  stableHeaders,
  useHarness,
  withoutRequestId,
  type Reply,
  type TestApp,
} from '../../helpers/harness.js';
import { outboxLock, until } from '../../helpers/races.js';

/** One task at a time, two admitted: two held requests fill the queue. */
const smallQueue = { concurrency: 1, maxPending: 2 };

async function signIn(t: TestApp, identity: string, password: string): Promise<Record<string, string>> {
  const reply = await t.post(`${auth}/login`, { identity, password });
  assert.equal(reply.status, 200);
  return withSession(reply.cookies.find((cookie) => cookie.name === sessionCookie)!.value);
}

/** 503 service_unavailable with Retry-After; the same status, body and headers as `other`. */
function assertRefusedAlike(reply: Reply, other: Reply, what: string): void {
  assertProblem(reply, 503, 'service_unavailable');
  assert.ok(Number(reply.headers['retry-after']) > 0, `${what}: Retry-After`);
  assert.deepEqual(withoutRequestId(reply.body), withoutRequestId(other.body), what);
  assert.deepEqual(stableHeaders(reply), stableHeaders(other), what);
}

describe('requests answered "202, then the work behind it" while the work queue is full', () => {
  const harness = useHarness();

  test('answer 503 service_unavailable with Retry-After alike for known and unknown identities, take nothing on, and answer 202 once the queue drains', async () => {
    const t = await harness.start({ overrides: { background: smallQueue } });
    assert.equal((await updateStore(t.db, t.clock, { signInWithCode: true })).ok, true);
    t.services.store.invalidate();
    const [ada, grace, known] = [
      await registeredCustomer(t, { email: 'ada@example.com' }),
      await registeredCustomer(t, { email: 'grace@example.com' }),
      await registeredCustomer(t, { email: 'known@example.com' }),
    ];
    const session = await signIn(t, known.identity, known.password);
    await t.deliver();
    const unknown = 'nobody@example.com';
    const calls = {
      resend: (identity: string) => t.post(`${auth}/verification/resend`, { identity }),
      forgot: (identity: string) => t.post(`${auth}/password/forgot`, { identity }),
      'code request': (identity: string) => t.post(`${auth}/code/request`, { identity }),
      'identity change': (identity: string) =>
        t.post(`${auth}/identity/change`, { email: identity, current_password: known.password }, session),
    };

    // Two forgot requests whose work is held by a real lock: the first waits on the outbox, the
    // second for its turn. The queue is then full, and stays full while the lock is held.
    const outbox = await outboxLock(harness.databaseUrl);
    try {
      await outbox.lock();
      assert.equal((await calls.forgot(ada.identity)).status, 202);
      assert.equal((await calls.forgot(grace.identity)).status, 202);
      await until(async () => (await outbox.waitingOnLocks()) === 1, 'the first reset waits on the outbox');

      for (const [name, call] of Object.entries(calls)) {
        const forKnown = await call(name === 'identity change' ? grace.identity : known.identity);
        const forUnknown = await call(unknown);
        assertRefusedAlike(forKnown, forUnknown, name);
      }
      assert.equal(t.services.background.size, 2, 'nothing was queued for the refused requests');
      await outbox.commit();
    } finally {
      await outbox.close();
    }

    // The refusals spent no allowance: the same identities are taken at once, each once the queue
    // has room again (two requests fill it).
    for (const [name, call] of Object.entries(calls)) {
      await t.services.background.drain();
      assert.equal(
        (await call(name === 'resend' || name === 'identity change' ? unknown : known.identity)).status,
        202,
        name,
      );
    }
    const sent = (await t.deliver()).map((message) => `${message.purpose} ${message.to}`).sort();
    assert.deepEqual(sent, [
      'identity_change nobody@example.com',
      'password_reset ada@example.com',
      'password_reset grace@example.com',
      'password_reset known@example.com',
      'sign_in known@example.com',
    ]);
  });
});
