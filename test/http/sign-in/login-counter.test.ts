import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { counterKey, limits } from '../../../src/http/core/rate-limit.js';
import type { CounterStore } from '../../../src/storage/counters.js';
import { firstStoreId } from '../../../src/store/store.js';
import { openTestCounterStore } from '../../helpers/database.js';
import { auth, registeredCustomer, useHarness, type TestApp } from '../../helpers/harness.js';
import { until } from '../../helpers/races.js';

/** The counters of the test backend, with `delete` replaced. */
async function countersWithDelete(
  remove: (inner: CounterStore, key: string) => Promise<void>,
): Promise<{ store: CounterStore; deletes: string[] }> {
  const inner = await openTestCounterStore();
  const deletes: string[] = [];
  const store: CounterStore = {
    increment: (key, windowSeconds, nowMs) => inner.increment(key, windowSeconds, nowMs),
    peek: (key, nowMs) => inner.peek(key, nowMs),
    delete: (key) => {
      deletes.push(key);
      return remove(inner, key);
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  return { store, deletes };
}

function login(t: TestApp, identity: string, password: string) {
  return t.post(`${auth}/login`, { identity, password });
}

async function failedLoginsOf(t: TestApp, identity: string): Promise<number> {
  const key = counterKey(t.services.keys.counters, limits.failedLogins, identity, firstStoreId);
  return (await t.services.counters.peek(key, t.clock.now().getTime())).count;
}

describe('the failed-login counter after a successful login', () => {
  const harness = useHarness();

  test('is cleared once the login has answered', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    for (let i = 0; i < 3; i += 1) assert.equal((await login(t, customer.identity, `wrong ${i}`)).status, 401);
    assert.equal(await failedLoginsOf(t, customer.identity), 3);
    assert.equal((await login(t, customer.identity, customer.password)).status, 200);
    await until(async () => (await failedLoginsOf(t, customer.identity)) === 0, 'the counter is cleared');
  });

  test('a wrong password sent right after the answer still counts', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    assert.equal((await login(t, customer.identity, 'wrong 1')).status, 401);
    assert.equal((await login(t, customer.identity, customer.password)).status, 200);
    assert.equal((await login(t, customer.identity, 'wrong 2')).status, 401);
    // The clearing was sent before the answer, so it cannot overtake the count that follows it.
    assert.equal(await failedLoginsOf(t, customer.identity), 1);
  });

  test('does not hold the answer while the store is slow to clear it', { timeout: 20_000 }, async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const { store, deletes } = await countersWithDelete(async (inner, key) => {
      await held;
      await inner.delete(key);
    });
    const t = await harness.start({ overrides: { counters: store } });
    const customer = await registeredCustomer(t);
    assert.equal((await login(t, customer.identity, 'wrong 1')).status, 401);
    const answer = await login(t, customer.identity, customer.password);
    assert.equal(answer.status, 200);
    assert.deepEqual(deletes, [
      counterKey(t.services.keys.counters, limits.failedLogins, customer.identity, firstStoreId),
    ]);
    // The login itself was counted too, before its password was checked.
    assert.equal(await failedLoginsOf(t, customer.identity), 2, 'not cleared yet');
    release();
    await until(async () => (await failedLoginsOf(t, customer.identity)) === 0, 'the counter is cleared');
  });

  test('a store that fails to clear it is logged and the login stands', async () => {
    const { store } = await countersWithDelete(() => Promise.reject(new Error('counter store unreachable')));
    const t = await harness.start({ overrides: { counters: store } });
    const customer = await registeredCustomer(t);
    assert.equal((await login(t, customer.identity, customer.password)).status, 200);
    await until(
      async () => t.logs.some((line) => line['msg'] === 'a rate-limit counter could not be cleared'),
      'the failure is logged',
    );
    const line = t.logs.find((entry) => entry['msg'] === 'a rate-limit counter could not be cleared')!;
    assert.equal(line['limit'], 'login-failed');
    assert.equal(line['level'], 40);
  });
});
