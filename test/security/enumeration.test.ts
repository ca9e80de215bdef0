import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { sharedHashPool } from '../../src/auth/rules/hash-pool.js';
import { problemEntry, type ProblemCode } from '../../src/http/core/problems.js';
import { loginRefusedDetail } from '../../src/http/sign-in/password.js';
import { catalogue } from '../../src/i18n/strings.js';
import { testArgon2 } from '../helpers/argon2.js';
import { auth, useHarness, registration, type TestApp } from '../helpers/harness.js';

/**
 * Account enumeration: nothing an unauthenticated caller sees (status, body, header names and
 * values) may depend on whether an identity has an account, whether it is verified, or whether
 * the password was right but the account refused. Each answer is reduced to a snapshot and the
 * snapshots are compared with each other and with an expected object written here.
 */

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: any;
}

interface Snapshot {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** Headers whose values differ between any two requests by nature; their presence still counts. */
const varyingHeaders = new Set(['date', 'x-request-id', 'set-cookie']);

function snapshot(answer: Answer): Snapshot {
  const { request_id: requestId, ...body } = answer.body as Record<string, unknown>;
  if (requestId !== undefined) assert.equal(requestId, answer.headers['x-request-id'], 'request_id equals the header');
  const headers = Object.fromEntries(
    Object.keys(answer.headers)
      .sort()
      .map((name) => [name, varyingHeaders.has(name) ? '<varies>' : String(answer.headers[name])]),
  );
  return { status: answer.status, body, headers };
}

const commonHeaders = {
  'access-control-allow-credentials': 'true',
  'access-control-expose-headers':
    'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, x-xsrf-token',
  'cache-control': 'no-store',
  connection: 'keep-alive',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  date: '<varies>',
  'referrer-policy': 'no-referrer',
  vary: 'Origin',
  'x-content-type-options': 'nosniff',
  'x-request-id': '<varies>',
};

/** What a problem document answer must look like, exactly (request ids are 36-character UUIDs). */
/** `detail` is the catalogue's unless the operation words its own (`ownDetail`). */
function expectedProblem(code: ProblemCode, extraHeaders: Record<string, string> = {}, ownDetail?: string): Snapshot {
  const { status, title, detail: ownCodeDetail } = problemEntry(code);
  const detail = ownDetail ?? ownCodeDetail;
  const body = { type: 'about:blank', title, status, code, detail };
  const length = Buffer.byteLength(JSON.stringify({ ...body, request_id: '0'.repeat(36) }));
  const headers: Record<string, string> = {
    ...commonHeaders,
    'content-length': String(length),
    'content-type': 'application/problem+json; charset=utf-8',
    // A problem's words follow Accept-Language (none here: the store's default, English).
    'content-language': 'en',
    vary: 'Origin, Accept-Language',
    ...extraHeaders,
  };
  return { status, body, headers: Object.fromEntries(Object.entries(headers).sort(([a], [b]) => a.localeCompare(b))) };
}

function sortedKeys(snap: Snapshot): Snapshot {
  return { ...snap, headers: Object.fromEntries(Object.entries(snap.headers).sort(([a], [b]) => a.localeCompare(b))) };
}

const accepted: Snapshot = sortedKeys({
  status: 202,
  body: { status: 'accepted' },
  headers: { ...commonHeaders, 'content-length': '21', 'content-type': 'application/json; charset=utf-8' },
});

let addressCounter = 0;
/** A fresh client address per request, so per-address limits never decide an answer here. */
function nextAddress(): string {
  addressCounter += 1;
  return `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`;
}

async function post(t: TestApp, path: string, body: unknown): Promise<Answer> {
  const response = await t.app.inject({
    method: 'POST',
    url: `${auth}${path}`,
    remoteAddress: nextAddress(),
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  return { status: response.statusCode, headers: response.headers, body: response.json() };
}

const password = 'analytical engine 1843';

interface StoreCase {
  label: string;
  env: Record<string, string>;
  field: 'email' | 'phone';
  verified: string;
  unverified: string;
  unknown: string;
  malformed: string;
  verificationRequired: boolean;
}

const stores: StoreCase[] = [
  {
    mode: 'email',
    field: 'email',
    verified: 'ada@example.com',
    unverified: 'grace@example.com',
    unknown: 'nobody@example.com',
    malformed: 'not an email',
  },
  {
    mode: 'phone',
    field: 'phone',
    verified: '+14155550123',
    unverified: '+14155550124',
    unknown: '+14155550199',
    malformed: '+1 123 456 7890',
  },
].flatMap(({ mode, ...identities }) =>
  [false, true].map((verificationRequired) => ({
    label: `${mode} store, verification ${verificationRequired ? 'required' : 'not required'}`,
    env: { STORE_IDENTITY_MODE: mode, STORE_VERIFICATION_REQUIRED: String(verificationRequired) },
    verificationRequired,
    ...(identities as Omit<StoreCase, 'label' | 'env' | 'verificationRequired'>),
  })),
);

/** One verified and one unverified customer with the same password. */
async function seed(t: TestApp, store: StoreCase): Promise<void> {
  for (const identity of [store.verified, store.unverified]) {
    const reply = await post(
      t,
      '/register',
      registration({ email: undefined, [store.field]: identity, password, password_confirmation: password }),
    );
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
  }
  const code = await t.codeFor(store.verified, 'verification');
  assert.equal((await post(t, '/verify', { identity: store.verified, code })).status, 200);
  await t.deliver();
}

function assertAllEqual(snapshots: Snapshot[], expected: Snapshot, labels: string[]): void {
  snapshots.forEach((snap, i) => assert.deepEqual(snap, expected, labels[i]));
}

describe('account enumeration', () => {
  const harness = useHarness();

  for (const store of stores) {
    describe(store.label, () => {
      test('login refused for an unknown identity, a wrong password or (where verification is required) an unverified account is one identical 401', async () => {
        const t = await harness.start({ env: store.env });
        await seed(t, store);
        const cases: Array<[string, unknown, string]> = [
          ['unknown identity', store.unknown, password],
          ['malformed identity', store.malformed, password],
          ['wrong password', store.verified, 'analytical engine 1844'],
          ['wrong password of an unverified account', store.unverified, 'analytical engine 1844'],
        ];
        if (store.verificationRequired)
          cases.push(['unverified account with the right password', store.unverified, password]);
        const snapshots = [];
        for (const [, identity, secret] of cases)
          snapshots.push(snapshot(await post(t, '/login', { identity, password: secret })));
        assertAllEqual(
          snapshots,
          expectedProblem('unauthenticated', {}, catalogue.say('en', loginRefusedDetail)),
          cases.map(([label]) => label),
        );
        const headerNames = snapshots.map((snap) => Object.keys(snap.headers).join(','));
        assert.equal(new Set(headerNames).size, 1, 'one set of header names');
        assert.ok(!headerNames[0]!.includes('set-cookie'), 'no cookie is set on a refusal');
        const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
        assert.equal(sessions?.n, 0);
      });

      test('an identity throttled by the failed-login limit gets the same 429 with or without an account, whatever the password', async () => {
        const t = await harness.start({ env: store.env });
        await seed(t, store);
        const identities = [store.verified, store.unverified, store.unknown, store.malformed];
        // Ten failures for each identity at the same instant, so every counter resets at the same time.
        for (let i = 0; i < 10; i += 1) {
          for (const identity of identities) {
            const reply = await post(t, '/login', { identity, password: `wrong engine ${i}` });
            assert.equal(reply.status, 401, `failure ${i + 1} of ${identity}`);
          }
        }
        t.clock.advance(90);
        const cases: Array<[string, string, string]> = [
          ['verified account, right password', store.verified, password],
          ['verified account, wrong password', store.verified, 'analytical engine 1844'],
          ['unverified account, right password', store.unverified, password],
          ['unknown identity', store.unknown, password],
          ['malformed identity', store.malformed, password],
        ];
        const snapshots = [];
        for (const [, identity, secret] of cases)
          snapshots.push(snapshot(await post(t, '/login', { identity, password: secret })));
        const retry = String(15 * 60 - 90);
        const expected = expectedProblem('rate_limited', {
          'ratelimit-limit': '10',
          'ratelimit-remaining': '0',
          'ratelimit-reset': retry,
          'retry-after': retry,
        });
        assertAllEqual(
          snapshots,
          expected,
          cases.map(([label]) => label),
        );
      });

      for (const [operation, path] of [
        ['resend verification', '/verification/resend'],
        ['forgot password', '/password/forgot'],
      ] as const) {
        const identitiesOf = (s: StoreCase) => [s.verified, s.unverified, s.unknown, s.malformed];
        const labels = ['verified account', 'unverified account', 'unknown identity', 'malformed identity'];

        test(`${operation} accepts identities with and without accounts alike, and refuses a repeat within the minute alike`, async () => {
          const t = await harness.start({ env: store.env });
          await seed(t, store);
          const firsts = [];
          for (const identity of identitiesOf(store)) firsts.push(snapshot(await post(t, path, { identity })));
          assertAllEqual(firsts, accepted, labels);
          t.clock.advance(20);
          const repeats = [];
          for (const identity of identitiesOf(store)) repeats.push(snapshot(await post(t, path, { identity })));
          const expected = expectedProblem('rate_limited', {
            'ratelimit-limit': '1',
            'ratelimit-remaining': '0',
            'ratelimit-reset': '40',
            'retry-after': '40',
          });
          assertAllEqual(
            repeats,
            expected,
            labels.map((label) => `${label}, repeated`),
          );
        });

        test(`${operation} refuses the sixth call within the hour alike for identities with and without accounts`, async () => {
          const t = await harness.start({ env: store.env });
          await seed(t, store);
          for (let call = 0; call < 5; call += 1) {
            const answers = [];
            for (const identity of identitiesOf(store)) answers.push(snapshot(await post(t, path, { identity })));
            assertAllEqual(
              answers,
              accepted,
              labels.map((label) => `${label}, call ${call + 1}`),
            );
            t.clock.advance(61);
          }
          const sixth = [];
          for (const identity of identitiesOf(store)) sixth.push(snapshot(await post(t, path, { identity })));
          const retry = String(60 * 60 - 5 * 61);
          const expected = expectedProblem('rate_limited', {
            'ratelimit-limit': '5',
            'ratelimit-remaining': '0',
            'ratelimit-reset': retry,
            'retry-after': retry,
          });
          assertAllEqual(
            sixth,
            expected,
            labels.map((label) => `${label}, sixth call`),
          );
        });
      }
    });
  }

  describe('with the password hasher full', () => {
    /** The process's hashing threads, which the test can stop from taking on new work. */
    function holdablePool() {
      const pool = sharedHashPool();
      let held: Promise<void> = Promise.resolve();
      let release = () => {};
      let taken = () => {};
      return {
        hash: async (...args: Parameters<typeof pool.hash>) => (taken(), await held, pool.hash(...args)),
        check: async (...args: Parameters<typeof pool.check>) => (taken(), await held, pool.check(...args)),
        /** Holds the threads; resolves once a job is waiting on them. */
        hold(): { busy: Promise<void>; release(): void } {
          held = new Promise((resolve) => (release = resolve));
          const busy = new Promise<void>((resolve) => (taken = resolve));
          return { busy, release: () => release() };
        },
      };
    }

    test('an unknown identity and a wrong password both answer 503 service_unavailable with Retry-After, and 401 alike once it has room', async () => {
      const pool = holdablePool();
      const hasher = createArgon2Hasher(testArgon2, { concurrency: 1, maxWaiting: 0, pool });
      const store = stores[0]!;
      const t = await harness.start({ env: store.env, overrides: { hasher } });
      await seed(t, store);

      // One login takes the hasher's only slot and waits on the threads: the hasher is full.
      const held = pool.hold();
      const occupying = post(t, '/login', { identity: store.verified, password: 'analytical engine 1844' });
      await held.busy;
      const full = [
        snapshot(await post(t, '/login', { identity: store.unknown, password })),
        snapshot(await post(t, '/login', { identity: store.verified, password: 'analytical engine 1844' })),
      ];
      assertAllEqual(full, expectedProblem('service_unavailable', { 'retry-after': '2' }), [
        'unknown identity while full',
        'wrong password while full',
      ]);
      held.release();
      assert.equal((await occupying).status, 401);

      const later = [
        snapshot(await post(t, '/login', { identity: store.unknown, password })),
        snapshot(await post(t, '/login', { identity: store.verified, password: 'analytical engine 1844' })),
      ];
      assertAllEqual(later, expectedProblem('unauthenticated', {}, catalogue.say('en', loginRefusedDetail)), [
        'unknown identity later',
        'wrong password later',
      ]);
    });
  });
});
