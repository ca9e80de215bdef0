import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listAudit } from '../../../src/audit.js';
import { counterKey, limits, type LimitRule } from '../../../src/http/core/rate-limit.js';
import type { CounterStore } from '../../../src/storage/counters.js';
import { updateStore } from '../../../src/store/store.js';
import { assertProblem } from '../../helpers/assertions.js';
import { defaultStore, openTestCounterStore } from '../../helpers/database.js';
import { api, auth, registration, type Reply, type TestApp, useHarness, toReply } from '../../helpers/harness.js';

const customerPrefix = '/api/v1/customer';
const crossSite = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };

/**
 * What the shared counter store was asked, in order: every key counted (a batch of n, n times),
 * and the keys grouped by the tick they were asked in. Keys asked in one tick travel to Redis in
 * one write (the client pipelines them), so each group is one round trip; `delete` is one of its
 * own; a batch shows as `key ×n`.
 */
function recording(store: CounterStore): { store: CounterStore; keys: string[]; trips: string[][] } {
  const keys: string[] = [];
  const trips: string[][] = [];
  let open: string[] | null = null;
  const ask = (entry: string) => {
    if (open === null) {
      const trip: string[] = [];
      trips.push(trip);
      open = trip;
      queueMicrotask(() => (open = null));
    }
    open.push(entry);
  };
  const increment = store.increment.bind(store);
  store.increment = (key, windowSeconds, nowMs, amount = 1) => {
    keys.push(...Array<string>(amount).fill(key));
    ask(amount === 1 ? key : `${key} ×${amount}`);
    return increment(key, windowSeconds, nowMs, amount);
  };
  const remove = store.delete.bind(store);
  store.delete = (key) => {
    ask(`delete ${key}`);
    return remove(key);
  };
  return { store, keys, trips };
}

async function send(t: TestApp, method: 'GET' | 'POST' | 'DELETE', url: string, headers: Record<string, string> = {}) {
  return toReply(await t.app.inject({ method, url, headers }));
}

async function pause(t: TestApp): Promise<void> {
  assert.equal((await updateStore(t.db, t.clock, { status: 'paused' })).ok, true);
  t.services.store.invalidate();
}

/** The name the limiter counts `subject` under for `rule`: a MAC, never the subject (rate-limit.ts). */
function counterOf(t: TestApp, rule: LimitRule, subject: string): string {
  return counterKey(t.services.keys.counters, rule, subject, 'default');
}

function assertNoStore(reply: Reply, where: string): void {
  assert.match(String(reply.headers['cache-control']), /\bno-store\b/, where);
}

function assertCacheable(reply: Reply, where: string): void {
  assert.doesNotMatch(String(reply.headers['cache-control'] ?? ''), /\bno-store\b/, where);
}

describe('the customer calls and their hooks', () => {
  let counted: string[] = [];
  let trips: string[][] = [];
  const harness = useHarness({
    counterStore: async () => {
      const recorded = recording(await openTestCounterStore());
      counted = recorded.keys;
      trips = recorded.trips;
      return recorded.store;
    },
  });

  test('a paused store answers 503 store_unavailable, with no-store, to unknown paths and wrong methods under the customer prefix, cross-site or not', async () => {
    const t = await harness.start();
    await pause(t);
    for (const [method, url, headers] of [
      ['POST', `${auth}/nowhere`, crossSite],
      ['GET', `${auth}/nowhere`, {}],
      ['GET', `${auth}/login`, {}],
      ['DELETE', `${auth}/logout`, crossSite],
      ['GET', `${customerPrefix}/elsewhere`, {}],
      ['POST', `${customerPrefix}/`, crossSite],
    ] as const) {
      const reply = await send(t, method, url, headers);
      assertProblem(reply, 503, 'store_unavailable');
      assertNoStore(reply, `${method} ${url}`);
    }
  });

  test('an open store answers unknown customer paths 404 and wrong methods 405 with Allow, both with no-store', async () => {
    const t = await harness.start();
    const unknown = await send(t, 'GET', `${auth}/nowhere`);
    assertProblem(unknown, 404, 'not_found');
    assertNoStore(unknown, 'unknown path');
    const elsewhere = await send(t, 'GET', `${customerPrefix}/elsewhere`);
    assertProblem(elsewhere, 404, 'not_found');
    assertNoStore(elsewhere, 'unknown path beside auth');
    const wrongMethod = await send(t, 'GET', `${auth}/login`);
    assertProblem(wrongMethod, 405, 'method_not_allowed');
    assert.equal(wrongMethod.headers['allow'], 'POST');
    assertNoStore(wrongMethod, 'wrong method');
    const logged = t.logs.filter((line) => line['msg'] === 'request' && line['url'] === `${auth}/nowhere`);
    assert.deepEqual(
      logged.map((line) => [line['route'], line['status']]),
      [[null, 404]],
      'logged as no route, like any unknown path',
    );
  });

  test('a cross-site POST to an unknown customer path is refused by the origin check before the 404', async () => {
    const t = await harness.start();
    const reply = await send(t, 'POST', `${auth}/nowhere`, crossSite);
    assertProblem(reply, 403, 'untrusted_origin');
    assertNoStore(reply, 'refused cross-site');
  });

  test('paths outside the customer prefix are neither gated nor no-store, and are still counted and checked for CSRF', async () => {
    const t = await harness.start();
    await pause(t);
    const nowhere = await send(t, 'GET', `${api}/nowhere`);
    assertProblem(nowhere, 404, 'not_found');
    assertCacheable(nowhere, 'unknown API path');
    const bare = await send(t, 'GET', customerPrefix);
    assertProblem(bare, 404, 'not_found');
    assertCacheable(bare, 'the customer prefix without its slash');
    const postCsrfCookie = await send(t, 'POST', `${api}/csrf-cookie`);
    assertProblem(postCsrfCookie, 405, 'method_not_allowed');
    assert.match(String(postCsrfCookie.headers['allow']), /\bGET\b/);
    assertCacheable(postCsrfCookie, 'wrong method on the CSRF cookie route');
    assertProblem(await send(t, 'POST', `${api}/platform`, crossSite), 403, 'untrusted_origin');
    assertProblem(await send(t, 'POST', '/not-even-the-api', crossSite), 403, 'untrusted_origin');
    const platform = await send(t, 'GET', `${api}/platform`);
    assert.equal(platform.status, 200);
    assertCacheable(platform, 'platform');
    assert.equal(
      counted.filter((key) => key.startsWith('rl:any:')).length,
      6,
      'each of the calls above counted once against the any-call limit',
    );
  });

  test('health probes pass a paused store, carry no no-store and never touch the shared counters', async () => {
    const t = await harness.start();
    await pause(t);
    for (const url of [`${api}/health/live`, `${api}/health/ready`]) {
      const reply = await send(t, 'GET', url, crossSite);
      assert.equal(reply.status, 200, url);
      assertCacheable(reply, url);
      assert.equal(reply.headers['access-control-allow-origin'], undefined, `${url} answers no CORS`);
    }
    assert.deepEqual(counted, [], 'probes are counted in memory by their own limiter');
  });

  test('an open store counts customer calls against the any-call limit before the route runs, sending them in batches of 3', async () => {
    const t = await harness.start();
    const anyCall = counterOf(t, limits.anyCall, '127.0.0.1');
    const attempts = counterOf(t, limits.loginAttempts, '127.0.0.1');
    const failures = counterOf(t, limits.failedLogins, 'ada@example.com');
    for (let i = 0; i < 3; i += 1) {
      const reply = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
      assertProblem(reply, 401, 'unauthenticated');
      assertNoStore(reply, 'login');
    }
    assert.deepEqual(trips, [[attempts, failures], [attempts, failures], [`${anyCall} ×3`], [attempts, failures]]);
  });

  test('the 301st call writes exactly one rate_limited audit entry naming the limit, address and request id', async () => {
    const t = await harness.start();
    for (let i = 0; i < 300; i += 1) {
      const reply = await t.get(`${api}/platform`);
      if (reply.status !== 200) assert.fail(`call ${i + 1} answered ${reply.status}`);
    }
    const refused = await t.post(`${auth}/login`, {}, { 'x-request-id': 'req-any-call' });
    assertProblem(refused, 429, 'rate_limited');
    assertNoStore(refused, 'refused customer call');
    await t.services.background.drain();
    const entries = (await listAudit(defaultStore(t.db), { limit: 10 })).filter(
      (entry) => entry.event === 'rate_limited',
    );
    assert.equal(entries.length, 1);
    assert.equal(entries[0]!.request_id, 'req-any-call');
    assert.equal(entries[0]!.client_address, '127.0.0.1');
    assert.equal(entries[0]!.customer_id, null);
    assert.deepEqual(entries[0]!.details, { limit: 'any' });
  });

  test('a refused health probe writes one rate_limited audit entry too', async () => {
    const t = await harness.start();
    for (let i = 0; i < 300; i += 1) {
      const reply = await t.get(`${api}/health/live`);
      if (reply.status !== 200) assert.fail(`probe ${i + 1} answered ${reply.status}`);
    }
    assertProblem(await t.get(`${api}/health/live`, { 'x-request-id': 'req-probe' }), 429, 'rate_limited');
    await t.services.background.drain();
    const entries = (await listAudit(defaultStore(t.db), { limit: 10 })).filter(
      (entry) => entry.event === 'rate_limited',
    );
    assert.deepEqual(
      entries.map((entry) => [entry.request_id, entry.details]),
      [['req-probe', { limit: 'any' }]],
    );
  });

  test('a login waits for one round trip to the shared counters, its own two limits together; the any-call count goes in batches', async () => {
    const t = await harness.start();
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    const login = (password: string) => t.post(`${auth}/login`, { identity: 'ada@example.com', password });

    const anyCall = counterOf(t, limits.anyCall, '127.0.0.1');
    const attempts = counterOf(t, limits.loginAttempts, '127.0.0.1');
    const failures = counterOf(t, limits.failedLogins, 'ada@example.com');

    trips.length = 0;
    assertProblem(await login('not the password 1'), 401, 'unauthenticated');
    assert.deepEqual(trips, [[attempts, failures]], "the address's second call is still this instance's own");

    trips.length = 0;
    assert.equal((await login('analytical engine 1843')).status, 200);
    assert.deepEqual(
      trips,
      [[`${anyCall} ×3`], [attempts, failures], [`delete ${failures}`]],
      'the third call sends the batch, which the answer does not wait for; a success forgives the identity its failures',
    );
  });

  test('a call the any-call limit refuses counts nothing else: the route never runs, its limits stay untouched', async () => {
    const t = await harness.start();
    for (let i = 0; i < 300; i += 1) {
      const reply = await t.get(`${api}/platform`);
      if (reply.status !== 200) assert.fail(`call ${i + 1} answered ${reply.status}`);
    }
    counted.length = 0;
    const refused = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'not the password 1' });
    assertProblem(refused, 429, 'rate_limited');
    assert.equal(refused.headers['ratelimit-limit'], '300', 'refused by the any-call limit');
    const anyCall = counterOf(t, limits.anyCall, '127.0.0.1');
    const others = () => counted.filter((key) => key !== anyCall);
    assert.deepEqual(others(), [], "neither the address's login count nor the identity's failures moved");
    const forgot = await t.post(`${auth}/password/forgot`, { identity: 'ada@example.com' });
    assertProblem(forgot, 429, 'rate_limited');
    assert.deepEqual(others(), [], "nor the identity's message allowance");
  });
});
