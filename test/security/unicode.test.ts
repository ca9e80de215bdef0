import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness, registeredCustomer, registration, type TestApp } from '../helpers/harness.js';

/**
 * Text that is not well-formed Unicode (a lone surrogate) or bytes that are not UTF-8 would be
 * turned into U+FFFD on the way to the hash, the database or Redis, so different inputs would act
 * as one: a password ending in \ud800 would also accept \udbff, \udc00 and \ufffd. Every string
 * field of every body refuses them with 422 on that field; bytes that are not UTF-8 are a 422 on
 * the body.
 */

const password = 'analytical engine 1843';
const loneSurrogates = ['\ud800', '\udbff', '\udc00', '\udfff', '\udc00\ud800'];

interface Endpoint {
  path: string;
  body: Record<string, string>;
  env?: Record<string, string>;
}

const endpoints: Endpoint[] = [
  { path: '/register', body: registration() },
  {
    path: '/register',
    body: registration({ email: undefined, phone: '+14155550123' }) as Record<string, string>,
    env: { STORE_IDENTITY_MODE: 'phone' },
  },
  { path: '/verify', body: { identity: 'ada@example.com', code: '123456' } },
  { path: '/verification/resend', body: { identity: 'ada@example.com' } },
  { path: '/password/forgot', body: { identity: 'ada@example.com' } },
  { path: '/login', body: { identity: 'ada@example.com', password } },
  {
    path: '/password/reset',
    body: { identity: 'ada@example.com', code: '123456', password, password_confirmation: password },
  },
];

async function postRaw(t: TestApp, path: string, payload: string | Buffer) {
  const response = await t.app.inject({
    method: 'POST',
    url: `${auth}${path}`,
    headers: { 'content-type': 'application/json' },
    payload,
  });
  return { status: response.statusCode, body: response.json() };
}

describe('text that is not well-formed Unicode', () => {
  const harness = useHarness();

  for (const endpoint of endpoints) {
    for (const field of Object.keys(endpoint.body).filter((name) => endpoint.body[name] !== undefined)) {
      test(`${endpoint.path} answers 422 validation_failed on ${field} when it holds a lone surrogate`, async () => {
        const t = await harness.start({ env: endpoint.env ?? {} });
        if (endpoint.path === '/login') await registeredCustomer(t);
        for (const surrogate of loneSurrogates) {
          const body = { ...endpoint.body, [field]: `${endpoint.body[field]}${surrogate}` };
          const reply = await postRaw(t, endpoint.path, JSON.stringify(body));
          assert.equal(reply.status, 422, JSON.stringify(reply.body));
          assert.equal(reply.body.code, 'validation_failed');
          assert.deepEqual(Object.keys(reply.body.errors), [field], JSON.stringify(reply.body));
          assert.ok(reply.body.errors[field].length > 0);
        }
        const [row] = await t.db.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM sessions) + (SELECT count(*) FROM outbox)
                + (SELECT count(*) FROM customers) ::int AS n`,
        );
        assert.equal(Number(row?.n), endpoint.path === '/login' ? 2 : 0, 'a refused request wrote nothing');
      });
    }
  }

  test('a lone surrogate inside a nested value or an ignored field is refused on that field too', async () => {
    const t = await harness.start();
    const reply = await postRaw(
      t,
      '/login',
      JSON.stringify({ identity: 'ada@example.com', password, extra: { deep: ['ok', 'x\ud800'] } }),
    );
    assert.equal(reply.status, 422);
    assert.deepEqual(Object.keys(reply.body.errors), ['extra']);
  });

  test('a password ending in U+FFFD is not opened by lone surrogates, only by itself', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t, {
      password: `${password}\ufffd`,
      password_confirmation: `${password}\ufffd`,
    });
    for (const surrogate of loneSurrogates) {
      const reply = await postRaw(
        t,
        '/login',
        JSON.stringify({ identity: customer.identity, password: `${password}${surrogate}` }),
      );
      assert.equal(reply.status, 422, `${JSON.stringify(surrogate)} answered ${reply.status}`);
      assert.deepEqual(Object.keys(reply.body.errors), ['password']);
    }
    const right = await postRaw(
      t,
      '/login',
      JSON.stringify({ identity: customer.identity, password: `${password}\ufffd` }),
    );
    assert.equal(right.status, 200);
  });

  test('a body whose bytes are not UTF-8 answers 422 on body instead of reading as U+FFFD', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t, {
      password: `${password}\ufffd`,
      password_confirmation: `${password}\ufffd`,
    });
    const prefix = Buffer.from(JSON.stringify({ identity: customer.identity, password }).slice(0, -2));
    // A stray byte, a truncated sequence, and a surrogate encoded as UTF-8 bytes (CESU-8).
    for (const bytes of [[0xff], [0xe2, 0x82], [0xed, 0xa0, 0x80]]) {
      const reply = await postRaw(t, '/login', Buffer.concat([prefix, Buffer.from(bytes), Buffer.from('"}')]));
      assert.equal(reply.status, 422, `${bytes} answered ${reply.status}`);
      assert.equal(reply.body.code, 'validation_failed');
      assert.deepEqual(Object.keys(reply.body.errors), ['body']);
    }
  });

  test('well-formed text beyond the Basic Multilingual Plane is accepted', async () => {
    const t = await harness.start();
    const emoji = 'gear \u{1F527} engine 1843';
    const reply = await postRaw(
      t,
      '/register',
      JSON.stringify(registration({ name: 'Ada \u{1F4BB}', password: emoji, password_confirmation: emoji })),
    );
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    assert.equal(reply.body.name, 'Ada \u{1F4BB}');
    const login = await postRaw(t, '/login', JSON.stringify({ identity: 'ada@example.com', password: emoji }));
    assert.equal(login.status, 200);
  });
});
