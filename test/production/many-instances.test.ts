import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createScratchDatabase } from '../helpers/database.js';
import { registration } from '../helpers/harness.js';
import { deleteKeys, requireRedis, testKeyPrefix, testRedisUrl } from '../helpers/redis.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { RoundRobinProxy } from '../helpers/tcp-proxy.js';

/**
 * Four `serve` processes on one database and one Redis, behind a round-robin TCP proxy: every
 * invariant a single instance keeps must hold with the requests spread across them. It runs in
 * both passes: the database is a fresh one on DATABASE_URL's server, or on the embedded server
 * `npm test` started; Redis is REDIS_URL or the machine's Redis, under a key prefix of its own.
 */

const instanceCount = 4;
const auth = '/api/v1/customer/auth';
const sessionCookie = 'storefront_session';
const password = registration().password;

interface Answer {
  status: number;
  body: any;
  setCookies: string[];
  /** Which instance answered. */
  instance: number;
}

describe('four instances behind one round-robin proxy behave as one service', () => {
  const keyPrefix = testKeyPrefix('many');
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let database: pg.Client;
  let instances: ServiceProcess[] = [];
  let proxy: RoundRobinProxy;

  before(async () => {
    await requireRedis();
    scratch = await createScratchDatabase('sfa_test_many');
    database = new pg.Client({ connectionString: scratch.url });
    await database.connect();
    const env = {
      DATABASE_URL: scratch.url,
      REDIS_URL: testRedisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      APP_SECRET: 'many-instances-secret-many-instances-secret',
      NODE_ENV: 'production',
      // The log transport is the mailbox: every instance writes each message it sends as a JSON line.
      DELIVERY_LOG_IN_PRODUCTION: 'true',
      COOKIE_SECURE: 'false',
      // The test plays the load balancer and gives each request an address of its own.
      TRUST_PROXY: 'true',
      // Four instances share two cores: one hashing thread each.
      HASH_THREADS: '1',
    };
    // All at once: their migrations and first store row take turns under the advisory lock.
    const started = await Promise.allSettled(Array.from({ length: instanceCount }, () => startService(env)));
    instances = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const failed = started.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    proxy = await new RoundRobinProxy(
      instances.map((instance) => ({ host: '127.0.0.1', port: Number(new URL(instance.url).port) })),
    ).start();
  });

  after(async () => {
    await proxy?.close();
    const codes = await Promise.all(instances.map((instance) => instance.stop()));
    await database?.end();
    // Only a started instance wrote keys; before that, Redis may be the very thing missing.
    if (instances.length > 0) await deleteKeys(keyPrefix);
    await scratch?.drop();
    assert.deepEqual(codes, Array(instances.length).fill(0), 'every instance shuts down cleanly on SIGTERM');
  });

  let addresses = 0;
  /** A client address never used before, so no per-address limit answers for another request. */
  function freshAddress(): string {
    addresses += 1;
    return `10.${(addresses >> 16) & 255}.${(addresses >> 8) & 255}.${addresses & 255}`;
  }

  /**
   * One request on a connection of its own (so the proxy hands each request to the next
   * instance), through the proxy or, with `instance`, straight to that instance.
   */
  function call(
    method: 'GET' | 'POST',
    route: string,
    body?: unknown,
    options: { cookie?: string; instance?: number } = {},
  ) {
    const direct = options.instance;
    const port = direct === undefined ? proxy.port : Number(new URL(instances[direct]!.url).port);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<Answer>((resolve, reject) => {
      const request = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path: `${auth}${route}`,
          agent: false,
          headers: {
            'x-forwarded-for': freshAddress(),
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
            ...(options.cookie === undefined ? {} : { cookie: options.cookie }),
          },
        },
        (response) => {
          const instance = direct ?? proxy.targetOf(response.socket.localPort!);
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => {
            if (instance === undefined) return reject(new Error('the proxy did not record this connection'));
            resolve({
              status: response.statusCode!,
              body: text === '' ? undefined : JSON.parse(text),
              setCookies: response.headers['set-cookie'] ?? [],
              instance,
            });
          });
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  }

  const post = (route: string, body?: unknown, options?: { cookie?: string; instance?: number }) =>
    call('POST', route, body, options);
  const get = (route: string, options?: { cookie?: string; instance?: number }) =>
    call('GET', route, undefined, options);

  function sessionOf(answer: Answer): string {
    const cookie = answer.setCookies.find((value) => value.startsWith(`${sessionCookie}=`));
    assert.ok(cookie, 'a session cookie is set');
    return cookie.split(';')[0]!;
  }

  /** The instances that answered these requests, each once, in order. */
  function instancesIn(answers: Answer[]): number[] {
    return [...new Set(answers.map((answer) => answer.instance))].sort();
  }
  const everyInstance = Array.from({ length: instanceCount }, (_, i) => i);

  /** The message lines the instances' log transports wrote, with the instance that sent each. */
  function sentMessages(): Array<{ instance: number; id: string; to: string; purpose: string; text: string }> {
    return instances.flatMap((instance, index) =>
      instance.logs
        .filter((entry) => typeof entry['message_id'] === 'string' && typeof entry['text'] === 'string')
        .map((entry) => ({
          instance: index,
          id: entry['message_id'] as string,
          to: entry['to'] as string,
          purpose: entry['purpose'] as string,
          text: entry['text'] as string,
        })),
    );
  }

  /** Polls `check` every 50 ms until it returns a value, failing after `timeoutMs`. */
  async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function codeSentTo(to: string): Promise<string> {
    const message = await waitFor(`the code sent to ${to}`, () => sentMessages().find((m) => m.to === to));
    return message.text.match(/\b\d{6}\b/)![0];
  }

  test('a rate limit is one limit: ten failed logins spread over the four instances, and the eleventh is refused', async () => {
    const identity = 'limited@example.com';
    const failures: Answer[] = [];
    for (let i = 0; i < 10; i += 1) failures.push(await post('/login', { identity, password: 'not the password 1' }));
    assert.deepEqual(
      failures.map((answer) => answer.status),
      Array(10).fill(401),
    );
    assert.deepEqual(instancesIn(failures), everyInstance, 'the ten attempts reached every instance');
    const eleventh = await post('/login', { identity, password: 'not the password 1' });
    assert.equal(eleventh.status, 429, `the eleventh attempt, at instance ${eleventh.instance}, is refused`);
    assert.equal(eleventh.body.code, 'rate_limited');
  });

  test('a rate limit holds under a parallel burst: of 24 failed logins at once across the instances exactly 10 are checked', async () => {
    const identity = 'burst@example.com';
    const answers = await Promise.all(
      Array.from({ length: 24 }, () => post('/login', { identity, password: 'not the password 2' })),
    );
    assert.deepEqual(instancesIn(answers), everyInstance);
    const statuses = answers.map((answer) => answer.status);
    assert.equal(statuses.filter((status) => status === 401).length, 10, `statuses ${statuses.join(' ')}`);
    assert.equal(statuses.filter((status) => status === 429).length, 14, `statuses ${statuses.join(' ')}`);
  });

  test('a code is used once: the same code confirmed through the four instances at once succeeds exactly once', async () => {
    const identity = 'once@example.com';
    assert.equal((await post('/register', registration({ email: identity }))).status, 201);
    const code = await codeSentTo(identity);
    const answers = await Promise.all(Array.from({ length: 8 }, () => post('/verify', { identity, code })));
    assert.deepEqual(instancesIn(answers), everyInstance, 'the confirmations reached every instance');
    const accepted = answers.filter((answer) => answer.status === 200);
    assert.equal(accepted.length, 1, `statuses ${answers.map((answer) => answer.status).join(' ')}`);
    for (const answer of answers.filter((a) => a.status !== 200)) {
      assert.equal(answer.status, 422);
      assert.equal(answer.body.code, 'invalid_identity_challenge');
    }
    const { rows } = await database.query(
      `SELECT count(*)::int AS consumed FROM challenges ch JOIN customers c ON c.id = ch.customer_id
        WHERE c.identity_value = $1 AND ch.consumed_at IS NOT NULL`,
      [identity],
    );
    assert.equal(rows[0].consumed, 1);
  });

  test('a session ended through one instance is refused by every other instance on its very next request', async () => {
    const identity = 'everywhere@example.com';
    assert.equal((await post('/register', registration({ email: identity }))).status, 201);
    for (const ending of everyInstance) {
      const cookie = sessionOf(await post('/login', { identity, password }));
      for (const instance of everyInstance) {
        assert.equal((await get('/session', { cookie, instance })).status, 200, `instance ${instance} knows it`);
      }
      const loggedOut = await post('/logout', undefined, { cookie, instance: ending });
      assert.equal(loggedOut.status, 200);
      for (const instance of everyInstance.filter((i) => i !== ending)) {
        const next = await get('/session', { cookie, instance });
        assert.equal(next.status, 401, `ended through instance ${ending}, refused by instance ${instance}`);
        assert.equal(next.body.code, 'unauthenticated');
      }
    }
  });

  test('one account per identity: 12 registrations of one identity at once across the instances make one account', async () => {
    const identity = 'twelve@example.com';
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => post('/register', registration({ email: identity, name: `Twin ${i}` }))),
    );
    assert.deepEqual(instancesIn(answers), everyInstance);
    const statuses = answers.map((answer) => answer.status).sort();
    assert.deepEqual(statuses, [201, ...Array(11).fill(422)]);
    for (const answer of answers.filter((a) => a.status === 422))
      assert.equal(answer.body.code, 'identity_unavailable');
    const { rows } = await database.query(
      `SELECT (SELECT count(*)::int FROM customers WHERE identity_value = $1) AS customers,
              (SELECT count(*)::int FROM outbox WHERE recipient = $1) AS messages`,
      [identity],
    );
    assert.deepEqual(rows[0], { customers: 1, messages: 1 });
  });

  test('every message is sent, and none twice: 24 registrations and 12 reset requests spread over the instances', async (t) => {
    const identities = Array.from({ length: 24 }, (_, i) => `mail-${i}@example.com`);
    const registered = await Promise.all(identities.map((email) => post('/register', registration({ email }))));
    assert.deepEqual(
      registered.map((answer) => answer.status),
      Array(24).fill(201),
    );
    const forgot = await Promise.all(identities.slice(0, 12).map((identity) => post('/password/forgot', { identity })));
    assert.deepEqual(
      forgot.map((answer) => answer.status),
      Array(12).fill(202),
    );
    assert.deepEqual(instancesIn([...registered, ...forgot]), everyInstance);

    const rows = await waitFor('all 36 messages marked sent', async () => {
      const { rows } = await database.query<{ id: string; status: string; attempts: number }>(
        `SELECT id::text AS id, status, attempts FROM outbox WHERE recipient = ANY($1) ORDER BY id`,
        [identities],
      );
      return rows.length === 36 && rows.every((row) => row.status === 'sent') ? rows : undefined;
    });
    assert.deepEqual(
      rows.map((row) => row.attempts),
      Array(36).fill(1),
      'each message was claimed by one dispatcher, once',
    );
    const ids = rows.map((row) => row.id);
    const lines = await waitFor('a log line for every sent message', () => {
      const ours = sentMessages().filter((message) => identities.includes(message.to));
      return ids.every((id) => ours.some((message) => message.id === id)) ? ours : undefined;
    });
    const perMessage = new Map<string, number>();
    for (const line of lines) perMessage.set(line.id, (perMessage.get(line.id) ?? 0) + 1);
    assert.deepEqual([...perMessage.keys()].sort(), [...ids].sort(), 'the lines are exactly the outbox messages');
    assert.deepEqual(
      [...perMessage.entries()].filter(([, count]) => count !== 1),
      [],
      'no message was sent twice',
    );
    assert.equal(lines.filter((line) => line.purpose === 'password_reset').length, 12);
    const senders = [...new Set(lines.map((line) => line.instance))].sort();
    assert.ok(senders.length >= 2, `messages were sent by instances ${senders.join(', ')}`);
    t.diagnostic(
      `messages sent per instance: ${everyInstance.map((i) => lines.filter((line) => line.instance === i).length).join(' / ')}; ` +
        `connections per instance: ${proxy.connections.join(' / ')}`,
    );
  });
});
