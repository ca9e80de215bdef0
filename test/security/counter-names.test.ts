import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { counterKey, limits } from '../../src/http/core/rate-limit.js';
import { keyName, type CounterStore } from '../../src/storage/counters.js';
import { RedisCounterStore } from '../../src/storage/redis.js';
import { updateStore } from '../../src/store/store.js';
import { assertProblem } from '../helpers/assertions.js';
import { sessionCookie, withSession } from '../helpers/customers.js';
import { auth, registeredCustomer, useHarness, type TestApp } from '../helpers/harness.js';
import { deleteKeys, requireRedis, testKeyPrefix, testRedisUrl } from '../helpers/redis.js';

/** The counter store with every key name it is handed kept: what in-process memory counters hold. */
function recordingNames(store: CounterStore, names: Set<string>): CounterStore {
  const increment = store.increment.bind(store);
  const remove = store.delete.bind(store);
  store.increment = (key, windowSeconds, nowMs) => {
    names.add(key);
    return increment(key, windowSeconds, nowMs);
  };
  store.delete = (key) => {
    names.add(key);
    return remove(key);
  };
  return store;
}

/** Every key under `prefix` on the Redis server, by SCAN (prefix included). */
async function scanKeys(prefix: string): Promise<string[]> {
  const client = new Redis(testRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
    return found;
  } finally {
    client.disconnect();
  }
}

interface Identities {
  env: Record<string, string>;
  registration: Record<string, unknown>;
  /** The customer's identity as a client may type it (another case, spaces). */
  typed: string;
  unknown: string;
  /** The identity change request's body field and value. */
  change: Record<string, string>;
  /** Texts no counter name may contain, compared without case. */
  forbidden: string[];
}

const emailStore: Identities = {
  env: {},
  registration: { email: 'Ada.Lovelace@Example.COM' },
  typed: 'ADA.LOVELACE@example.com',
  unknown: 'Nobody.Here@Example.net',
  change: { email: 'Charles.Babbage@Example.org' },
  forbidden: ['ada.lovelace@example.com', 'lovelace', 'nobody.here', 'babbage', 'example.', '127.0.0.1'],
};

const phoneStore: Identities = {
  env: { STORE_IDENTITY_MODE: 'phone' },
  registration: { email: undefined, phone: '+44 7911 123456' },
  typed: '+44 7911 123 456',
  unknown: '+44 7911 123457',
  change: { phone: '+44 7911 123458' },
  // E.164 digits (with and without the calling code) of each number.
  forbidden: ['447911123456', '7911123456', '7911123457', '7911123458', '127.0.0.1'],
};

/** `<prefix>rl:<rule>:<22 base64url characters>`: a rule name and a MAC, nothing else. */
const counterName = /^rl:[a-z-]+:[A-Za-z0-9_-]{22}$/;

function assertNoIdentity(names: Iterable<string>, prefix: string, forbidden: string[], where: string): void {
  for (const name of names) {
    const bare = name.startsWith(prefix) ? name.slice(prefix.length) : name;
    assert.match(bare, counterName, `${where}: ${name}`);
    for (const text of forbidden) {
      assert.ok(!bare.toLowerCase().includes(text), `${where}: ${name} contains ${text}`);
    }
  }
}

/**
 * Every flow that counts per identity, each with the identity as typed: failed and successful
 * logins, resend, forgot (a known and an unknown identity), the sign-in code request, and an
 * identity change (a wrong password, then a request for a new identity).
 */
async function countEveryIdentityFlow(t: TestApp, ids: Identities): Promise<void> {
  const customer = await registeredCustomer(t, ids.registration);
  assert.equal((await updateStore(t.db, t.clock, { signInWithCode: true })).ok, true);
  t.services.store.invalidate();
  const login = (password: string) => t.post(`${auth}/login`, { identity: ids.typed, password });
  for (const password of ['wrong engine 1', 'wrong engine 2'])
    assertProblem(await login(password), 401, 'unauthenticated');
  for (const path of ['verification/resend', 'password/forgot', 'code/request']) {
    assert.equal((await t.post(`${auth}/${path}`, { identity: ids.typed })).status, 202, path);
  }
  assert.equal((await t.post(`${auth}/password/forgot`, { identity: ids.unknown })).status, 202);
  const signedIn = await login(customer.password);
  assert.equal(signedIn.status, 200);
  const session = withSession(signedIn.cookies.find((cookie) => cookie.name === sessionCookie)!.value);
  const change = (password: string) =>
    t.post(`${auth}/identity/change`, { ...ids.change, current_password: password }, session);
  assertProblem(await change('wrong engine 3'), 422, 'validation_failed');
  assert.equal((await change(customer.password)).status, 202);
  // The limits still count per identity: the same identity, typed otherwise, is held back.
  assertProblem(await t.post(`${auth}/password/forgot`, { identity: ids.typed }), 429, 'rate_limited');
}

describe('rate-limit counter names', () => {
  const prefixes: string[] = [];
  let prefix = '';
  let handed = new Set<string>();
  const harness = useHarness({
    counterStore: async () => {
      prefix = testKeyPrefix('counter-names');
      prefixes.push(prefix);
      handed = new Set();
      const store = new RedisCounterStore(testRedisUrl, { keyPrefix: prefix });
      assert.ok(await store.connected(), `the Redis at ${testRedisUrl} answers`);
      return recordingNames(store, handed);
    },
  });
  before(() => requireRedis());
  after(async () => {
    for (const used of prefixes) await deleteKeys(used);
  });

  for (const [store, ids] of [
    ['an email store', emailStore],
    ['a phone store', phoneStore],
  ] as const) {
    test(`carry a keyed hash of each identity, never the identity, in Redis and in memory: ${store}`, async () => {
      const t = await harness.start({ env: ids.env });
      await countEveryIdentityFlow(t, ids);
      await t.services.background.drain();
      const stored = await scanKeys(prefix);
      assert.ok(stored.length >= 8, `a counter per rule and subject: ${stored.join(', ')}`);
      assertNoIdentity(stored, prefix, ids.forbidden, 'Redis');
      assert.ok(handed.size >= stored.length);
      assertNoIdentity(handed, prefix, ids.forbidden, 'handed to the store');
    });
  }
});

describe('a counter name', () => {
  const key = Buffer.alloc(32, 7);
  const macOf = (scoped: string) =>
    createHmac('sha256', key).update(scoped).digest().subarray(0, 16).toString('base64url');

  test('is keyName of rl, the rule and the MAC of the store and subject, however often it is made', () => {
    for (let round = 0; round < 2; round += 1) {
      assert.equal(
        counterKey(key, limits.anyCall, '203.0.113.7', 'default'),
        keyName('rl', 'any', macOf('default\u0000203.0.113.7')),
      );
      assert.equal(counterKey(key, limits.adminCalls, 'token'), keyName('rl', 'admin', macOf('token')));
    }
    // A rule's name is escaped as keyName escapes it, so no name can give a counter a hash tag.
    const braced = { name: 'a{b}%', limit: 1, windowSeconds: 1 };
    assert.equal(counterKey(key, braced, 'x'), keyName('rl', 'a{b}%', macOf('x')));
  });
});
