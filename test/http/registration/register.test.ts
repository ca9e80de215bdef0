import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness, registration, type TestApp } from '../../helpers/harness.js';
import { assertFieldError } from '../../helpers/assertions.js';

const phoneStore = { env: { STORE_IDENTITY_MODE: 'phone' } };

function register(t: TestApp, overrides: Record<string, unknown> = {}) {
  return t.post(`${auth}/register`, registration(overrides));
}

function phoneRegistration(overrides: Record<string, unknown> = {}) {
  return registration({ email: undefined, phone: '+1 (415) 555-0123', ...overrides });
}

function passwordPair(password: unknown) {
  return { password, password_confirmation: password };
}

describe('register', () => {
  const harness = useHarness();

  describe('a successful registration', () => {
    test('answers 201 with an unverified Customer and nothing else', async () => {
      const t = await harness.start();
      const reply = await register(t);
      assert.equal(reply.status, 201);
      assert.match(String(reply.headers['content-type']), /^application\/json/);
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.deepEqual(Object.keys(reply.body).sort(), ['has_password', 'id', 'identity', 'name']);
      assert.equal(typeof reply.body.id, 'string');
      assert.ok(reply.body.id.length > 0);
      assert.equal(reply.body.name, 'Ada Lovelace');
      assert.deepEqual(reply.body.identity, { type: 'email', value: 'ada@example.com', verified_at: null });
      assert.equal(reply.body.has_password, true);
      assert.ok(!JSON.stringify(reply.body).includes('analytical engine'), 'the password never comes back');
    });

    test('lowercases and trims the email address', async () => {
      const t = await harness.start();
      const reply = await register(t, { email: '  Ada.Lovelace@Example.COM\t' });
      assert.equal(reply.status, 201);
      assert.equal(reply.body.identity.value, 'ada.lovelace@example.com');
      const rows = await t.db.query<{ identity_value: string }>('SELECT identity_value FROM customers');
      assert.deepEqual(
        rows.map((row) => row.identity_value),
        ['ada.lovelace@example.com'],
      );
    });

    test('creates no session and sets no session cookie', async () => {
      const t = await harness.start();
      const reply = await register(t);
      assert.equal(reply.status, 201);
      assert.equal(
        reply.cookies.find((cookie) => /session/i.test(cookie.name)),
        undefined,
      );
      const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
      assert.equal(sessions?.n, 0);
    });

    test('queues a six-digit verification code by email on an email store', async () => {
      const t = await harness.start();
      assert.equal((await register(t)).status, 201);
      const sent = await t.deliver();
      assert.equal(sent.length, 1);
      assert.equal(sent[0]?.channel, 'email');
      assert.equal(sent[0]?.purpose, 'verification');
      assert.equal(sent[0]?.to, 'ada@example.com');
      assert.match(sent[0]?.content.text ?? '', /\b\d{6}\b/);
    });

    test('queues the verification code by SMS to the E.164 number on a phone store', async () => {
      const t = await harness.start(phoneStore);
      assert.equal((await t.post(`${auth}/register`, phoneRegistration())).status, 201);
      const sent = await t.deliver();
      assert.equal(sent.length, 1);
      assert.equal(sent[0]?.channel, 'sms');
      assert.equal(sent[0]?.purpose, 'verification');
      assert.equal(sent[0]?.to, '+14155550123');
      assert.match(sent[0]?.content.text ?? '', /\b\d{6}\b/);
    });
  });

  describe('identities', () => {
    test('stores a phone typed with spaces, parentheses and dashes in E.164', async () => {
      const t = await harness.start(phoneStore);
      const reply = await t.post(`${auth}/register`, phoneRegistration());
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      assert.deepEqual(reply.body.identity, { type: 'phone', value: '+14155550123', verified_at: null });
    });

    test('refuses an impossible phone number with errors.phone', async () => {
      const t = await harness.start(phoneStore);
      assertFieldError(await t.post(`${auth}/register`, phoneRegistration({ phone: '+1 123 456 7890' })), 'phone');
    });

    test('refuses a phone number without the leading + with errors.phone', async () => {
      const t = await harness.start(phoneStore);
      assertFieldError(await t.post(`${auth}/register`, phoneRegistration({ phone: '415 555 0123' })), 'phone');
      assertFieldError(await t.post(`${auth}/register`, phoneRegistration({ phone: '14155550123' })), 'phone');
    });

    test('refuses an invalid or over-long email address with errors.email', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, { email: 'not-an-email' }), 'email');
      assertFieldError(await register(t, { email: `${'a'.repeat(64)}@${'b'.repeat(186)}.com` }), 'email');
    });

    test('refuses a missing email on an email store with errors.email', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, { email: undefined }), 'email');
    });

    test('refuses phone on an email store with errors.phone, even when email is also sent', async () => {
      const t = await harness.start();
      const reply = await register(t, { phone: '+14155550123' });
      assertFieldError(reply, 'phone');
      assert.equal(reply.body.errors.email, undefined, 'the email itself was fine');
      const [customers] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers');
      assert.equal(customers?.n, 0);
    });

    test('refuses email on a phone store with errors.email, even when phone is also sent', async () => {
      const t = await harness.start(phoneStore);
      const reply = await t.post(`${auth}/register`, phoneRegistration({ email: 'ada@example.com' }));
      assertFieldError(reply, 'email');
      assert.equal(reply.body.errors.phone, undefined, 'the phone itself was fine');
    });

    test('answers 422 identity_unavailable for an email that already has an account', async () => {
      const t = await harness.start();
      assert.equal((await register(t)).status, 201);
      const again = await register(t, { name: 'Someone Else' });
      assert.equal(again.status, 422);
      assert.equal(again.body.code, 'identity_unavailable');
    });

    test('answers 422 identity_unavailable for a case and whitespace variant of a registered email', async () => {
      const t = await harness.start();
      assert.equal((await register(t)).status, 201);
      const again = await register(t, { email: ' ADA@Example.com ' });
      assert.equal(again.status, 422);
      assert.equal(again.body.code, 'identity_unavailable');
    });

    test('answers 422 identity_unavailable for a differently formatted registered phone', async () => {
      const t = await harness.start(phoneStore);
      assert.equal((await t.post(`${auth}/register`, phoneRegistration())).status, 201);
      const again = await t.post(`${auth}/register`, phoneRegistration({ phone: '+1.415.555.0123' }));
      assert.equal(again.status, 422);
      assert.equal(again.body.code, 'identity_unavailable');
    });

    test('lets exactly one of 50 concurrent registrations of one identity succeed', async () => {
      const t = await harness.start();
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          t.app.inject({
            method: 'POST',
            url: `${auth}/register`,
            headers: { 'content-type': 'application/json' },
            payload: JSON.stringify(registration({ email: i % 2 === 0 ? 'ada@example.com' : 'ADA@example.com' })),
            // Distinct addresses, so the per-address registration limit stays out of the way.
            remoteAddress: `10.1.${i}.1`,
          }),
        ),
      );
      const statuses = replies.map((reply) => reply.statusCode);
      assert.equal(statuses.filter((status) => status === 201).length, 1, statuses.join(','));
      for (const reply of replies.filter((r) => r.statusCode !== 201)) {
        assert.equal(reply.statusCode, 422);
        assert.equal(reply.json().code, 'identity_unavailable');
      }
      const [customers] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers');
      assert.equal(customers?.n, 1);
      const sent = await t.deliver();
      assert.equal(sent.filter((m) => m.purpose === 'verification').length, 1);
    });
  });

  describe('name', () => {
    test('is trimmed before it is stored', async () => {
      const t = await harness.start();
      const reply = await register(t, { name: '  Ada Lovelace \t' });
      assert.equal(reply.status, 201);
      assert.equal(reply.body.name, 'Ada Lovelace');
    });

    test('refuses an empty or whitespace-only name with errors.name', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, { name: '' }), 'name');
      assertFieldError(await register(t, { name: '   ' }), 'name');
    });

    test('accepts 120 code points, counting astral characters once', async () => {
      const t = await harness.start();
      const name = '𐐷'.repeat(120);
      const reply = await register(t, { name });
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      assert.equal(reply.body.name, name);
    });

    test('refuses 121 code points with errors.name', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, { name: 'a'.repeat(121) }), 'name');
      assertFieldError(await register(t, { name: '𐐷'.repeat(121) }), 'name');
    });

    test('applies the 120 limit to the trimmed name', async () => {
      const t = await harness.start();
      const reply = await register(t, { name: `  ${'a'.repeat(120)}  ` });
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      assert.equal(reply.body.name, 'a'.repeat(120));
    });

    test('refuses C0 and C1 control characters and direction controls with errors.name', async () => {
      const t = await harness.start();
      for (const name of [
        'Ada\u0000Lovelace',
        'Ada\nLovelace',
        'Ada\u001bLovelace',
        'Ada\u007fLovelace',
        'Ada\u0085Lovelace',
        // Each reorders the text around it: a name shown in a message or a page could reverse it.
        'Ada\u202eLovelace',
        'Ada\u2066Lovelace',
        'Ada\u200fLovelace',
        'Ada\u061cLovelace',
      ]) {
        assertFieldError(await register(t, { name }), 'name');
      }
    });
  });

  describe('password', () => {
    test('accepts eight characters with a letter and a digit', async () => {
      const t = await harness.start();
      assert.equal((await register(t, passwordPair('qzvkxw7r'))).status, 201);
    });

    test('refuses seven characters with errors.password', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, passwordPair('qzvkx7r')), 'password');
    });

    test('counts code points, not UTF-16 units', async () => {
      const t = await harness.start();
      // 7 code points but 11 UTF-16 units.
      assertFieldError(await register(t, passwordPair('𐐷𐐸𐐹𐐺123')), 'password');
      // 8 code points.
      assert.equal((await register(t, passwordPair('𐐷𐐸𐐹𐐺𐐻123'))).status, 201);
    });

    test('accepts 255 characters and refuses 256 with errors.password', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, passwordPair(`7${'q'.repeat(255)}`)), 'password');
      assert.equal((await register(t, passwordPair(`7${'q'.repeat(254)}`))).status, 201);
    });

    test('measures the length after NFKC normalization', async () => {
      const t = await harness.start();
      // Seven code points that NFKC turns into ten ("ffffff1234").
      const expands = await register(t, { email: 'short@example.com', ...passwordPair('ﬀﬀﬀ1234') });
      assert.equal(expands.status, 201, JSON.stringify(expands.body));
      // U+FDFA becomes 18 characters: 15 of them are 270 after NFKC.
      assertFieldError(
        await register(t, { email: 'long@example.com', ...passwordPair(`${'\uFDFA'.repeat(15)}1`) }),
        'password',
      );
    });

    test('hashes the NFKC form, so a full-width password logs in with its ASCII equivalent', async () => {
      const t = await harness.start();
      assert.equal((await register(t, passwordPair('ｑｚｖｋｘｗ７ｒ'))).status, 201);
      const login = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'qzvkxw7r' });
      assert.equal(login.status, 200);
    });

    test('requires a letter and a digit', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, passwordPair('qzvkxwrtpl')), 'password');
      assertFieldError(await register(t, passwordPair('8305719264')), 'password');
      assertFieldError(await register(t, passwordPair('!!??--++__')), 'password');
    });

    test('accepts letters of non-Latin scripts', async () => {
      const t = await harness.start();
      assert.equal((await register(t, { email: 'greek@example.com', ...passwordPair('λόγοςκβ9') })).status, 201);
      assert.equal((await register(t, { email: 'cjk@example.com', ...passwordPair('安全的密码很长9') })).status, 201);
      assert.equal((await register(t, { email: 'cyr@example.com', ...passwordPair('щавелькот5') })).status, 201);
    });

    test('refuses a common password with errors.password', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, passwordPair('password1')), 'password');
      assertFieldError(await register(t, passwordPair('qwerty123')), 'password');
    });

    test('puts a confirmation mismatch on errors.password_confirmation', async () => {
      const t = await harness.start();
      const reply = await register(t, {
        password: 'analytical engine 1843',
        password_confirmation: 'analytical engine 1844',
      });
      assertFieldError(reply, 'password_confirmation');
      assert.equal(reply.body.errors.password, undefined, 'the password itself was fine');
    });
  });

  describe('types', () => {
    test('refuses a number where a string belongs, naming the field', async () => {
      const t = await harness.start();
      assertFieldError(await register(t, { name: 1843 }), 'name');
      assertFieldError(await register(t, { email: 42 }), 'email');
      assertFieldError(await register(t, passwordPair(18431843)), 'password');
      assertFieldError(await register(t, { password_confirmation: 1843 }), 'password_confirmation');
    });

    test('reports every missing required field', async () => {
      const t = await harness.start();
      const reply = await t.post(`${auth}/register`, {});
      for (const field of ['name', 'password', 'password_confirmation']) assertFieldError(reply, field);
    });

    test('refuses a body that is not a JSON object with errors.body', async () => {
      const t = await harness.start();
      assertFieldError(await t.post(`${auth}/register`, '[1,2]'), 'body');
      assertFieldError(await t.post(`${auth}/register`, '{"name":'), 'body');
    });
  });
});
