import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { breachedRangeTimeoutMs } from '../../../src/auth/rules/breached.js';
import { insertBreachedHashes } from '../../../src/auth/tables/breached-hashes.js';
import { assertFieldError } from '../../helpers/assertions.js';
import { loginFrom, resetWithCode, withSession, signedIn } from '../../helpers/customers.js';
import { auth, registration, useHarness, type TestApp } from '../../helpers/harness.js';
import { imported, startAdmin } from '../../helpers/import.js';
import { scrape, total } from '../../helpers/metrics.js';

/** The SHA-1 of a password as the Pwned Passwords corpus lists it: 40 uppercase hex digits. */
function sha1(password: string): string {
  return createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
}

const breached = 'summer garden 2019';
/** What another shop's customer chose, and that shop's bcrypt hash of it (an import brings the hash). */
const legacy = 'correct horse 1843';
const legacyHash = '$2y$10$6nW3PybUsD5mSwWHAMoXtuozjX2m9Ov2M92nx.lOvDgPaDYMdKNUu';
const clean = 'analytical engine 1843';
const padded = 'quiet lantern 7731';
const checks = 'storefront_breached_password_checks_total';

interface RangeRequest {
  url: string;
  padding: string | undefined;
}

/**
 * A Pwned-Passwords-compatible range API on a loopback port: `breached` is in its corpus; the
 * ranges of `clean` and `padded` hold only other suffixes and padding, and `padded`'s own suffix
 * comes as a padding line (count 0). `hold` keeps every answer back until `close`: a slow server.
 */
async function rangeServer({ hold = false, alsoBreached = [] as string[] } = {}) {
  const corpus = new Map<string, string[]>();
  const line = (password: string, count: number) => {
    const hash = sha1(password);
    const lines = corpus.get(hash.slice(0, 5)) ?? [];
    corpus.set(hash.slice(0, 5), [...lines, `${hash.slice(5)}:${count}`]);
  };
  line(breached, 37_861);
  for (const password of alsoBreached) line(password, 12);
  line(padded, 0);
  for (const password of [breached, clean, padded]) {
    const prefix = sha1(password).slice(0, 5);
    for (let i = 0; i < 3; i += 1) corpus.get(prefix)?.push(`${'0'.repeat(34)}${i}:${i + 1}`);
    corpus.get(prefix)?.push(`${'F'.repeat(35)}:0`);
  }
  const requests: RangeRequest[] = [];
  const held: http.ServerResponse[] = [];
  const server = http.createServer((request, response) => {
    requests.push({ url: request.url ?? '', padding: request.headers['add-padding'] as string | undefined });
    if (hold) return void held.push(response);
    const prefix = /^\/range\/([0-9A-F]{5})$/.exec(request.url ?? '')?.[1];
    if (prefix === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'text/plain' }).end((corpus.get(prefix) ?? []).join('\r\n'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback URL where nothing listens: a port that was free a moment ago. */
async function refusedUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function register(t: TestApp, password: string, email = 'ada@example.com') {
  return t.post(`${auth}/register`, registration({ email, password, password_confirmation: password }));
}

function assertBreachedRefusal(reply: { body: Record<string, any> }) {
  assertFieldError(reply as never, 'password');
  assert.deepEqual(reply.body.errors.password, ['This password has appeared in a data breach; choose another.']);
}

describe('breached passwords', () => {
  const harness = useHarness();

  describe('against a range API (BREACHED_PASSWORDS_URL)', () => {
    test('refuses a breached password at registration with 422 on password, asking only its 5-digit range, padded', async () => {
      const api = await rangeServer();
      try {
        const t = await harness.start({ env: { BREACHED_PASSWORDS_URL: api.url } });
        const reply = await register(t, breached);
        assertBreachedRefusal(reply);
        assert.equal(await customers(t), 0);
        assert.deepEqual(api.requests, [{ url: `/range/${sha1(breached).slice(0, 5)}`, padding: 'true' }]);
        for (const { url } of api.requests) {
          assert.doesNotMatch(url, /[0-9A-F]{6}/i, 'never more than 5 hex digits of the hash');
          assert.ok(!url.includes(sha1(breached).slice(5)) && !url.includes(encodeURIComponent(breached)));
        }
        assert.equal(total(await scrape(t), checks, { source: 'range_api', outcome: 'breached' }), 1);
      } finally {
        await api.close();
      }
    });

    test('takes a password whose suffix comes only as a padding line (count 0), and a clean one', async () => {
      const api = await rangeServer();
      try {
        const t = await harness.start({ env: { BREACHED_PASSWORDS_URL: api.url } });
        assert.equal((await register(t, padded)).status, 201);
        assert.equal((await register(t, clean, 'bob@example.com')).status, 201);
        assert.equal(total(await scrape(t), checks, { source: 'range_api', outcome: 'clean' }), 2);
      } finally {
        await api.close();
      }
    });

    test('asks for a range once: a second check in the same range is answered from the cache', async () => {
      const api = await rangeServer();
      try {
        const t = await harness.start({ env: { BREACHED_PASSWORDS_URL: api.url } });
        assertBreachedRefusal(await register(t, breached));
        assertBreachedRefusal(await register(t, breached, 'bob@example.com'));
        assert.equal((await register(t, clean)).status, 201);
        assert.equal((await register(t, clean, 'bob@example.com')).status, 201);
        assert.deepEqual(
          api.requests.map((request) => request.url),
          [`/range/${sha1(breached).slice(0, 5)}`, `/range/${sha1(clean).slice(0, 5)}`],
        );
      } finally {
        await api.close();
      }
    });

    test('fails open when the API is slower than 1.5 s: the password is taken, counted and logged', async () => {
      const api = await rangeServer({ hold: true });
      try {
        const t = await harness.start({ env: { BREACHED_PASSWORDS_URL: api.url } });
        const started = performance.now();
        const reply = await register(t, breached);
        const waitedMs = performance.now() - started;
        assert.equal(reply.status, 201, JSON.stringify(reply.body));
        assert.equal(breachedRangeTimeoutMs, 1_500);
        assert.ok(waitedMs >= breachedRangeTimeoutMs - 50, `waited ${waitedMs} ms`);
        assert.equal(api.requests.length, 1);
        assert.equal(total(await scrape(t), checks, { source: 'range_api', outcome: 'failed_open' }), 1);
        assert.ok(t.logs.some((line) => /breached-password check failed/.test(String(line['msg']))));
      } finally {
        await api.close();
      }
    });

    test('fails open when the API refuses the connection, and asks again at the next check', async () => {
      const t = await harness.start({ env: { BREACHED_PASSWORDS_URL: await refusedUrl() } });
      assert.equal((await register(t, breached)).status, 201);
      assert.equal((await register(t, breached, 'bob@example.com')).status, 201);
      assert.equal(total(await scrape(t), checks, { source: 'range_api', outcome: 'failed_open' }), 2);
      assert.equal(t.logs.filter((line) => /breached-password check failed/.test(String(line['msg']))).length, 2);
    });

    test('refuses a breached password at reset and at change, and takes a clean one', async () => {
      const api = await rangeServer();
      try {
        const t = await harness.start({ env: { BREACHED_PASSWORDS_URL: api.url } });
        const customer = await signedIn(t);
        assertBreachedRefusal((await resetWithCode(t, customer.identity, breached)).reply);
        const change = (password: string) =>
          t.post(
            `${auth}/password/change`,
            { current_password: customer.password, password, password_confirmation: password },
            withSession(customer.session),
          );
        assertBreachedRefusal(await change(breached));
        assert.equal((await change(padded)).status, 200);
      } finally {
        await api.close();
      }
    });

    test('an imported password that is breached still signs in and is re-hashed; the deployment is told', async () => {
      const api = await rangeServer({ alsoBreached: [legacy] });
      try {
        const { t, admin } = await startAdmin({
          start: (options = {}) =>
            harness.start({ ...options, env: { ...options.env, BREACHED_PASSWORDS_URL: api.url } }),
        });
        const line = JSON.stringify({ email: 'old@example.com', verified: true, password_hash: legacyHash });
        assert.equal((await imported(t, admin, [line])).body.created, 1);
        const first = await loginFrom(t, '198.51.100.7', 'old@example.com', legacy);
        assert.equal(first.status, 200);
        const [row] = await t.db.query<{ id: string; password_hash: string }>(
          'SELECT id, password_hash FROM customers WHERE identity_value = $1',
          ['old@example.com'],
        );
        assert.equal(t.services.hasher.needsRehash(row!.password_hash), false, 're-hashed');
        const told = t.logs.filter((entry) => /imported password .* breach corpus/.test(String(entry['msg'])));
        assert.deepEqual(
          told.map((entry) => entry['customer_id']),
          [row!.id],
        );
        // Checked once, at the re-hash: the service's own hash is not checked again at each sign-in.
        assert.equal((await loginFrom(t, '198.51.100.7', 'old@example.com', legacy)).status, 200);
        assert.deepEqual(
          api.requests.map((request) => request.url),
          [`/range/${sha1(legacy).slice(0, 5)}`],
        );
      } finally {
        await api.close();
      }
    });
  });

  describe('against the local copy (breached load)', () => {
    test('refuses a breached password with one read of the table, and takes a clean one', async () => {
      const t = await harness.start();
      await insertBreachedHashes(t.db, [sha1(breached), sha1('another leaked 42')]);
      assertBreachedRefusal(await register(t, breached));
      assert.equal((await register(t, clean)).status, 201);
      const samples = await scrape(t);
      assert.equal(total(samples, checks, { source: 'local', outcome: 'breached' }), 1);
      assert.equal(total(samples, checks, { source: 'local', outcome: 'clean' }), 1);
    });

    test('checks nothing when neither a URL nor a loaded copy is there', async () => {
      const t = await harness.start();
      assert.equal((await register(t, breached)).status, 201);
      assert.equal(total(await scrape(t), checks), 0);
    });
  });
});

async function customers(t: TestApp): Promise<number> {
  const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers');
  return row?.n ?? -1;
}
