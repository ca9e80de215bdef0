import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createArgon2Hasher } from '../../../src/auth/rules/password.js';
import { auth, useHarness, registeredCustomer, type Reply, type TestApp } from '../../helpers/harness.js';
import { assertFieldError } from '../../helpers/assertions.js';
import { count } from '../../helpers/customers.js';

const password = 'analytical engine 1843';

function login(t: TestApp, identity: unknown, secret: unknown = password, headers: Record<string, string> = {}) {
  return t.post(`${auth}/login`, { identity, password: secret }, headers);
}

function cookieNamed(reply: Reply, name: string) {
  return reply.cookies.find((cookie) => cookie.name === name);
}

function rawSetCookie(reply: Reply, name: string): string {
  const header = reply.headers['set-cookie'];
  const all = header === undefined ? [] : Array.isArray(header) ? header : [header];
  const line = all.find((value) => value.startsWith(`${name}=`));
  assert.ok(line, `a Set-Cookie for ${name} in ${JSON.stringify(all)}`);
  return line;
}

async function verifiedCustomer(t: TestApp, overrides: Record<string, unknown> = {}) {
  const customer = await registeredCustomer(t, overrides);
  const code = await t.codeFor(customer.identity, 'verification');
  const verified = await t.post(`${auth}/verify`, { identity: customer.identity, code });
  assert.equal(verified.status, 200);
  return customer;
}

async function passwordHashOf(t: TestApp, id: string): Promise<string> {
  const [row] = await t.db.query<{ password_hash: string }>('SELECT password_hash FROM customers WHERE id = $1', [id]);
  assert.ok(row);
  return row.password_hash;
}

function sessionCount(t: TestApp): Promise<number> {
  return count(t, 'sessions');
}

describe('login', () => {
  const harness = useHarness();

  describe('success', () => {
    test('answers 200 with an AuthSession and no token in the body', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const reply = await login(t, customer.identity);
      assert.equal(reply.status, 200);
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.deepEqual(Object.keys(reply.body).sort(), ['auth_type', 'customer']);
      assert.equal(reply.body.auth_type, 'session');
      assert.equal(reply.body.customer.id, customer.id);
      assert.equal(reply.body.customer.name, 'Ada Lovelace');
      assert.equal(reply.body.customer.identity.type, 'email');
      assert.equal(reply.body.customer.identity.value, 'ada@example.com');
      assert.equal(typeof reply.body.customer.identity.verified_at, 'string');
      const session = cookieNamed(reply, 'storefront_session');
      assert.ok(session);
      assert.ok(!JSON.stringify(reply.body).includes(session.value), 'the session id is only in the cookie');
    });

    test('sets an HttpOnly, SameSite=Lax, Path=/ session cookie without Secure by default', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const reply = await login(t, customer.identity);
      const session = cookieNamed(reply, 'storefront_session');
      assert.ok(session, 'the cookie is named storefront_session when not secure');
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Lax');
      assert.equal(session.path, '/');
      assert.notEqual(session.secure, true);
      assert.equal(session.domain, undefined);
      assert.ok(session.value.length >= 43, 'a session id of at least 32 random bytes');
      const raw = rawSetCookie(reply, 'storefront_session');
      assert.match(raw, /;\s*HttpOnly/i);
      assert.match(raw, /;\s*SameSite=Lax/i);
      assert.match(raw, /;\s*Path=\/(;|$)/);
      assert.doesNotMatch(raw, /;\s*Secure/i);
    });

    test('names the cookie __Host-storefront_session and marks it Secure with COOKIE_SECURE=true', async () => {
      const t = await harness.start({ env: { COOKIE_SECURE: 'true' } });
      const customer = await verifiedCustomer(t);
      const reply = await login(t, customer.identity);
      assert.equal(reply.status, 200);
      assert.equal(cookieNamed(reply, 'storefront_session'), undefined);
      const session = cookieNamed(reply, '__Host-storefront_session');
      assert.ok(session);
      assert.equal(session.secure, true);
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Lax');
      assert.equal(session.path, '/');
      assert.equal(session.domain, undefined, 'a __Host- cookie has no Domain');
      assert.match(rawSetCookie(reply, '__Host-storefront_session'), /;\s*Secure/i);
      const logout = await t.post(`${auth}/logout`, undefined, {
        cookie: `__Host-storefront_session=${session.value}`,
      });
      assert.equal(logout.status, 200);
    });

    test('issues a fresh XSRF-TOKEN cookie readable by scripts', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const reply = await login(t, customer.identity);
      const token = cookieNamed(reply, 'XSRF-TOKEN');
      assert.ok(token);
      assert.notEqual(token.httpOnly, true);
      assert.match(token.value, /^[A-Za-z0-9._~-]+$/);
    });

    test('accepts the identity in another case and with surrounding spaces', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const reply = await login(t, ' ADA@Example.COM ');
      assert.equal(reply.status, 200);
      assert.equal(reply.body.customer.id, customer.id);
    });

    test('lets an unverified customer log in when the store does not require verification', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      const reply = await login(t, customer.identity);
      assert.equal(reply.status, 200);
      assert.equal(reply.body.customer.identity.verified_at, null);
      assert.ok(cookieNamed(reply, 'storefront_session'));
    });

    test('lets a customer log in on a verification-required store once verified', async () => {
      const t = await harness.start({ env: { STORE_VERIFICATION_REQUIRED: 'true' } });
      const customer = await registeredCustomer(t);
      assert.equal((await login(t, customer.identity)).status, 401);
      const code = await t.codeFor(customer.identity, 'verification');
      assert.equal((await t.post(`${auth}/verify`, { identity: customer.identity, code })).status, 200);
      assert.equal((await login(t, customer.identity)).status, 200);
    });
  });

  describe('refusals', () => {
    test('unknown identity, wrong password and unverified account give identical 401 answers', async () => {
      const t = await harness.start({ env: { STORE_VERIFICATION_REQUIRED: 'true' } });
      const verified = await verifiedCustomer(t);
      const unverified = await registeredCustomer(t, { email: 'grace@example.com' });
      const replies = [
        await login(t, 'nobody@example.com', password),
        await login(t, verified.identity, 'analytical engine 1844'),
        await login(t, unverified.identity, password),
      ];
      const shapes = replies.map((reply) => {
        const { request_id, ...body } = reply.body;
        assert.equal(request_id, reply.headers['x-request-id']);
        const headers = Object.fromEntries(
          Object.entries(reply.headers).filter(([name]) => name !== 'x-request-id' && name !== 'date'),
        );
        return { status: reply.status, body, headerNames: Object.keys(reply.headers).sort(), headers };
      });
      assert.equal(shapes[0]?.status, 401);
      assert.equal(shapes[0]?.body.code, 'unauthenticated');
      // Says what happened, never which of the two was wrong.
      assert.equal(shapes[0]?.body.detail, 'The identity or password is not correct.');
      assert.deepEqual(shapes[1], shapes[0]);
      assert.deepEqual(shapes[2], shapes[0]);
      for (const reply of replies) assert.equal(reply.headers['set-cookie'], undefined);
      assert.equal(await sessionCount(t), 0);
    });

    test('a malformed identity answers 401 unauthenticated like an unknown one', async () => {
      const t = await harness.start();
      await verifiedCustomer(t);
      for (const identity of ['not an email', '+14155550123', 'ada@']) {
        const reply = await login(t, identity);
        assert.equal(reply.status, 401);
        assert.equal(reply.body.code, 'unauthenticated');
      }
    });

    test('a wrong password answers 401 for a phone customer too', async () => {
      const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
      const customer = await registeredCustomer(t, { email: undefined, phone: '+1 415 555 0123' });
      assert.equal((await login(t, '+1 (415) 555-0123')).status, 200);
      const wrong = await login(t, customer.identity, 'analytical engine 1844');
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.code, 'unauthenticated');
    });

    test('a password over 255 characters answers 422 validation_failed on password', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      assertFieldError(await login(t, customer.identity, 'a1'.repeat(128)), 'password');
      const atLimit = await login(t, customer.identity, `${'a'.repeat(254)}1`);
      assert.equal(atLimit.status, 401, 'exactly 255 is checked, not refused');
    });

    test('an empty or non-string password, or a missing identity, answers 422 validation_failed', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      assertFieldError(await login(t, customer.identity, ''), 'password');
      assertFieldError(await login(t, customer.identity, 18431843), 'password');
      assertFieldError(await t.post(`${auth}/login`, { password }), 'identity');
      assertFieldError(await login(t, ''), 'identity');
      assertFieldError(await login(t, 42), 'identity');
      assertFieldError(await login(t, `${'a'.repeat(243)}@example.com`), 'identity');
    });
  });

  describe('sessions', () => {
    test('replaces the session the request carried: the old cookie no longer works', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const first = cookieNamed(await login(t, customer.identity), 'storefront_session');
      assert.ok(first);
      const second = cookieNamed(
        await login(t, customer.identity, password, { cookie: `storefront_session=${first.value}` }),
        'storefront_session',
      );
      assert.ok(second);
      assert.notEqual(second.value, first.value);
      assert.equal(await sessionCount(t), 1);
      const oldLogout = await t.post(`${auth}/logout`, undefined, { cookie: `storefront_session=${first.value}` });
      assert.equal(oldLogout.status, 401);
      assert.equal(oldLogout.body.code, 'unauthenticated');
      const newLogout = await t.post(`${auth}/logout`, undefined, { cookie: `storefront_session=${second.value}` });
      assert.equal(newLogout.status, 200);
    });

    test('two logins without a cookie open two independent sessions', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const first = cookieNamed(await login(t, customer.identity), 'storefront_session');
      const second = cookieNamed(await login(t, customer.identity), 'storefront_session');
      assert.ok(first && second);
      assert.notEqual(first.value, second.value);
      assert.equal(await sessionCount(t), 2);
      assert.equal(
        (await t.post(`${auth}/logout`, undefined, { cookie: `storefront_session=${first.value}` })).status,
        200,
      );
      assert.equal(
        (await t.post(`${auth}/logout`, undefined, { cookie: `storefront_session=${second.value}` })).status,
        200,
      );
    });
  });

  describe('password hash upgrade', () => {
    const olderHasher = createArgon2Hasher({ memoryCost: 2048, timeCost: 1, parallelism: 1 });

    test('rehashes a hash made with other argon2 parameters at the next successful login', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const oldHash = await olderHasher.hash(password);
      assert.ok(oldHash.includes('m=2048,t=1,p=1'));
      await t.db.query('UPDATE customers SET password_hash = $2 WHERE id = $1', [customer.id, oldHash]);

      assert.equal((await login(t, customer.identity)).status, 200, 'the old hash still verifies');
      const newHash = await passwordHashOf(t, customer.id);
      assert.notEqual(newHash, oldHash);
      assert.match(newHash, /^\$argon2id\$v=19\$/);
      assert.ok(!newHash.includes('m=2048,t=1,p=1'));
      assert.equal(t.services.hasher.needsRehash(newHash), false);

      assert.equal((await login(t, customer.identity)).status, 200, 'the upgraded hash verifies');
      assert.equal(await passwordHashOf(t, customer.id), newHash, 'a current hash is left alone');
      assert.equal((await login(t, customer.identity, 'analytical engine 1844')).status, 401);
    });

    test('leaves an old hash alone when the password is wrong', async () => {
      const t = await harness.start();
      const customer = await verifiedCustomer(t);
      const oldHash = await olderHasher.hash(password);
      await t.db.query('UPDATE customers SET password_hash = $2 WHERE id = $1', [customer.id, oldHash]);
      assert.equal((await login(t, customer.identity, 'analytical engine 1844')).status, 401);
      assert.equal(await passwordHashOf(t, customer.id), oldHash);
    });

    test('logs in a customer inserted with an old-parameter hash and upgrades it', async () => {
      const t = await harness.start();
      const oldHash = await olderHasher.hash('babbage cabbage 42');
      const now = t.clock.now();
      await t.db.query(
        `INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, verified_at, created_at, updated_at)
         VALUES ('default', '00000000-0000-4000-8000-000000000042', 'Charles', 'email', 'charles@example.com', $1, $2, $2, $2)`,
        [oldHash, now],
      );
      const reply = await login(t, 'charles@example.com', 'babbage cabbage 42');
      assert.equal(reply.status, 200);
      assert.equal(reply.body.customer.id, '00000000-0000-4000-8000-000000000042');
      const newHash = await passwordHashOf(t, '00000000-0000-4000-8000-000000000042');
      assert.notEqual(newHash, oldHash);
      assert.equal((await login(t, 'charles@example.com', 'babbage cabbage 42')).status, 200);
    });
  });
});
