import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PasswordHasher } from '../../../src/auth/rules/password.js';
import { api, auth, useHarness, registration, toReply, type Reply, type TestApp } from '../../helpers/harness.js';

const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * What must never reach a client: stack frames, SQL, file paths, library internals. A plain
 * substring 'at ' would also match our own prose ("fields that are missing"), so stack frames are
 * matched by their shape: "at fn (file:line:col)" or "at /path:line:col".
 */
function assertNoLeak(reply: Reply): void {
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  assert.doesNotMatch(text, /\n\s+at |\bat \S+ \(|\bat (?:file:|node:|\/)|\.[cm]?[jt]s:\d+/, `stack trace in ${text}`);
  for (const needle of ['SELECT', 'INSERT', '/work/', 'node_modules', 'FST_', 'Error:']) {
    assert.ok(!text.includes(needle), `${needle} leaked in ${text}`);
  }
}

/** docs/reference/wire-format-and-errors.md: every failure is an RFC 9457 problem document whose request_id equals the header. */
function assertProblem(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, `expected ${status} ${code}, got ${reply.status} ${JSON.stringify(reply.body)}`);
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/);
  assert.equal(reply.body.code, code);
  assert.equal(reply.body.status, status);
  assert.equal(typeof reply.body.type, 'string');
  assert.equal(typeof reply.body.title, 'string');
  assert.equal(typeof reply.body.detail, 'string');
  assert.equal(typeof reply.headers['x-request-id'], 'string');
  assert.equal(reply.body.request_id, reply.headers['x-request-id']);
  assertNoLeak(reply);
}

function assertBodyError(reply: Reply): void {
  assertProblem(reply, 422, 'validation_failed');
  assert.ok(Array.isArray(reply.body.errors?.body), `errors.body missing in ${JSON.stringify(reply.body)}`);
  assert.ok(reply.body.errors.body.length > 0);
}

async function inject(
  t: TestApp,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS',
  url: string,
  headers: Record<string, string> = {},
  payload?: string,
): Promise<Reply> {
  return toReply(await t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) }));
}

describe('wire format', () => {
  const harness = useHarness();

  test('an unknown route answers 404 not_found as a problem document', async () => {
    const t = await harness.start();
    assertProblem(await t.get(`${api}/nowhere`), 404, 'not_found');
    assertProblem(await t.get('/not-even-the-api'), 404, 'not_found');
    assertProblem(await t.post(`${auth}/nowhere`, {}), 404, 'not_found');
  });

  test('a wrong method on a known path answers 405 method_not_allowed with an Allow header', async () => {
    const t = await harness.start();
    const getLogin = await t.get(`${auth}/login`);
    assertProblem(getLogin, 405, 'method_not_allowed');
    const loginAllow = String(getLogin.headers['allow']).split(/,\s*/);
    assert.ok(loginAllow.includes('POST'));
    assert.ok(!loginAllow.includes('GET'));

    const postPlatform = await t.post(`${api}/platform`, {});
    assertProblem(postPlatform, 405, 'method_not_allowed');
    assert.ok(String(postPlatform.headers['allow']).split(/,\s*/).includes('GET'));

    const deleteLogout = await inject(t, 'DELETE', `${auth}/logout`);
    assertProblem(deleteLogout, 405, 'method_not_allowed');
    assert.ok(String(deleteLogout.headers['allow']).split(/,\s*/).includes('POST'));
  });

  test('a body over 16 KiB answers 413 payload_too_large and one of exactly 16 KiB is read', async () => {
    const t = await harness.start();
    const tooBig = JSON.stringify({ identity: 'ada@example.com', password: 'x'.repeat(17 * 1024) });
    assertProblem(await t.post(`${auth}/login`, tooBig), 413, 'payload_too_large');

    const frame = JSON.stringify({ identity: 'ada@example.com', password: '' }).length;
    const atLimit = JSON.stringify({ identity: 'ada@example.com', password: 'x'.repeat(16 * 1024 - frame) });
    assert.equal(Buffer.byteLength(atLimit), 16 * 1024);
    const reply = await t.post(`${auth}/login`, atLimit);
    assertProblem(reply, 422, 'validation_failed');
    assert.ok(Array.isArray(reply.body.errors.password), 'the body was parsed and the password judged too long');
  });

  test('a JSON body with a charset parameter is read like any JSON body', async () => {
    const t = await harness.start();
    const body = JSON.stringify({ identity: 'ada@example.com', password: 'analytical engine 1843' });
    const reply = await t.post(`${auth}/login`, body, { 'content-type': 'application/json; charset=utf-8' });
    assertProblem(reply, 401, 'unauthenticated');
  });

  test('a text/plain or form body answers 415 unsupported_media_type', async () => {
    const t = await harness.start();
    const json = JSON.stringify({ identity: 'ada@example.com', password: 'secret123' });
    assertProblem(await t.post(`${auth}/login`, json, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    assertProblem(
      await t.post(`${auth}/login`, 'identity=ada%40example.com&password=secret123', {
        'content-type': 'application/x-www-form-urlencoded',
      }),
      415,
      'unsupported_media_type',
    );
    assertProblem(
      await t.post(`${auth}/register`, json, { 'content-type': 'application/xml' }),
      415,
      'unsupported_media_type',
    );
  });

  for (const [label, raw] of [
    ['invalid JSON', '{"identity": "ada@example.com",'],
    ['a JSON array', '[]'],
    ['a JSON string', '"ada@example.com"'],
    ['a JSON number', '42'],
    ['JSON null', 'null'],
    ['an empty body with a JSON content type', ''],
  ] as const) {
    test(`${label} answers 422 validation_failed with errors.body`, async () => {
      const t = await harness.start();
      assertBodyError(await t.post(`${auth}/login`, raw));
      assertBodyError(await t.post(`${auth}/register`, raw));
    });
  }

  test('a __proto__ or constructor.prototype pollution attempt answers 422, not 500, and pollutes nothing', async () => {
    const t = await harness.start();
    const proto = '{"__proto__": {"polluted": true}, "identity": "ada@example.com", "password": "secret123"}';
    assertBodyError(await t.post(`${auth}/login`, proto));
    const ctor =
      '{"constructor": {"prototype": {"polluted": true}}, "identity": "ada@example.com", "password": "secret123"}';
    assertBodyError(await t.post(`${auth}/login`, ctor));
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  test('a valid client X-Request-ID is echoed on success and failure', async () => {
    const t = await harness.start();
    for (const id of ['abc-123_X.y', 'a', 'Z'.repeat(128), '0.0.0-trace']) {
      const ok = await t.get(`${api}/platform`, { 'x-request-id': id });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers['x-request-id'], id);
      const failed = await t.get(`${api}/nowhere`, { 'x-request-id': id });
      assertProblem(failed, 404, 'not_found');
      assert.equal(failed.body.request_id, id);
    }
  });

  test('an invalid client X-Request-ID is replaced by a fresh one', async () => {
    const t = await harness.start();
    const seen = new Set<string>();
    for (const id of ['a'.repeat(129), 'has spaces', 'semi;colon', 'slash/id', '<script>']) {
      const reply = await t.get(`${api}/nowhere`, { 'x-request-id': id });
      assertProblem(reply, 404, 'not_found');
      const given = String(reply.headers['x-request-id']);
      assert.notEqual(given, id);
      assert.match(given, requestIdPattern);
      seen.add(given);
    }
    assert.equal(seen.size, 5, 'each replacement is fresh');
  });

  test('every response carries X-Request-ID, X-Content-Type-Options nosniff and Referrer-Policy no-referrer', async () => {
    const t = await harness.start();
    const replies = [
      await t.get(`${api}/platform`),
      await t.get(`${api}/health/live`),
      await t.get(`${api}/health/ready`),
      await t.get(`${api}/csrf-cookie`),
      await t.get('/sanctum/csrf-cookie'),
      await t.post(`${auth}/register`, registration()),
      await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'wrong password 1' }),
      await t.post(`${auth}/login`, '{'),
      await t.post(`${auth}/logout`),
      await t.post(`${auth}/password/forgot`, { identity: 'ada@example.com' }),
      await t.get(`${api}/nowhere`),
      await t.get(`${auth}/login`),
      await t.post(`${auth}/login`, 'x', { 'content-type': 'text/plain' }),
      await t.post(`${auth}/login`, JSON.stringify({ identity: 'x'.repeat(20_000) })),
      await inject(t, 'OPTIONS', `${auth}/login`, {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
      }),
    ];
    for (const reply of replies) {
      assert.match(String(reply.headers['x-request-id']), requestIdPattern, `status ${reply.status}`);
      assert.equal(reply.headers['x-content-type-options'], 'nosniff', `status ${reply.status}`);
      assert.equal(reply.headers['referrer-policy'], 'no-referrer', `status ${reply.status}`);
    }
  });

  test('auth responses, successful or not, carry Cache-Control no-store', async () => {
    const t = await harness.start();
    const registered = await t.post(`${auth}/register`, registration());
    assert.equal(registered.status, 201);
    const loggedIn = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
    assert.equal(loggedIn.status, 200);
    const session = loggedIn.cookies.find((c) => c.name === 'storefront_session');
    assert.ok(session);
    const replies = [
      registered,
      loggedIn,
      await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'wrong password 1' }),
      await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: '000000' }),
      await t.post(`${auth}/verification/resend`, { identity: 'ada@example.com' }),
      await t.post(`${auth}/password/forgot`, { identity: 'ada@example.com' }),
      await t.post(`${auth}/password/reset`, {}),
      await t.post(`${auth}/logout`, undefined, { cookie: `storefront_session=${session.value}` }),
      await t.post(`${auth}/logout`),
      await t.get(`${api}/csrf-cookie`),
    ];
    assert.deepEqual(
      replies.map((r) => r.status),
      [201, 200, 401, 422, 202, 202, 422, 200, 401, 204],
    );
    for (const reply of replies) {
      assert.match(String(reply.headers['cache-control']), /\bno-store\b/, `status ${reply.status}`);
    }
  });

  test('success bodies are bare JSON objects with Content-Type application/json and no data envelope', async () => {
    const t = await harness.start();
    const platform = await t.get(`${api}/platform`);
    const registered = await t.post(`${auth}/register`, registration());
    const loggedIn = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
    const accepted = await t.post(`${auth}/password/forgot`, { identity: 'ada@example.com' });
    for (const [reply, status] of [
      [platform, 200],
      [registered, 201],
      [loggedIn, 200],
      [accepted, 202],
    ] as const) {
      assert.equal(reply.status, status);
      assert.match(String(reply.headers['content-type']), /^application\/json/);
      assert.equal(typeof reply.body, 'object');
      assert.ok(!('data' in reply.body), 'no data envelope');
    }
    assert.deepEqual(Object.keys(platform.body).sort(), ['api_version', 'name']);
    assert.deepEqual(Object.keys(registered.body).sort(), ['has_password', 'id', 'identity', 'name']);
    assert.deepEqual(Object.keys(loggedIn.body).sort(), ['auth_type', 'customer']);
    assert.deepEqual(accepted.body, { status: 'accepted' });
  });

  test('a bug answers 500 internal_error without its message, SQL, paths or stack, and is logged with its stack', async () => {
    const leaky = new Error('SELECT password_hash FROM customers failed at /work/main/node_modules/x/index.js:12:34');
    const broken: PasswordHasher = {
      hash: async () => {
        throw leaky;
      },
      verify: async () => {
        throw leaky;
      },
      verifyElsewhere: async () => {
        throw leaky;
      },
      verifyDummy: async () => {
        throw leaky;
      },
      needsRehash: () => false,
      lane() {
        return this;
      },
    };
    const t = await harness.start({ overrides: { hasher: broken } });
    const registered = await t.post(`${auth}/register`, registration());
    assertProblem(registered, 500, 'internal_error');
    assert.ok(!JSON.stringify(registered.body).includes('password_hash'));
    const loggedIn = await t.post(`${auth}/login`, { identity: 'nobody@example.com', password: 'whatever 1' });
    assertProblem(loggedIn, 500, 'internal_error');

    const logged = t.logs.filter((line) => {
      const err = line['err'] as { stack?: unknown } | undefined;
      return typeof err?.stack === 'string' && err.stack.includes('SELECT password_hash');
    });
    assert.ok(logged.length >= 2, 'each internal error is logged with its stack');
  });

  test('no 4xx body carries a stack trace, SQL or file path, even for hostile input', async () => {
    const t = await harness.start();
    const hostile = [
      await t.post(`${auth}/login`, { identity: "' OR 1=1; SELECT * FROM customers --", password: 'x' }),
      await t.post(`${auth}/login`, { identity: 42, password: ['x'] }),
      await t.post(`${auth}/register`, {
        name: 'x'.repeat(500),
        email: 'not-an-email',
        password: 'a',
        password_confirmation: 'b',
      }),
      await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: '12345x' }),
      await t.post(`${auth}/password/reset`, {
        identity: 'ada@example.com',
        code: '123456',
        password: 'short',
        password_confirmation: 'other',
      }),
      await t.post(`${auth}/login`, '{"identity": "\\u0000", "password": {"$gt": ""}}'),
      await t.post(`${auth}/login`, '\u0000\u0001'),
      await t.get(`${api}/${'../'.repeat(5)}etc/passwd`),
    ];
    const expected: Array<[number, string]> = [
      [401, 'unauthenticated'],
      [422, 'validation_failed'],
      [422, 'validation_failed'],
      [422, 'validation_failed'],
      [422, 'validation_failed'],
      [422, 'validation_failed'],
      [422, 'validation_failed'],
      [404, 'not_found'],
    ];
    assert.equal(hostile.length, expected.length);
    hostile.forEach((reply, i) => assertProblem(reply, ...expected[i]!));
  });
});
