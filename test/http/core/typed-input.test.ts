import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore } from '../../../src/store/store.js';
import { auth, registration, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { assertFieldError, assertProblem } from '../../helpers/assertions.js';
import { count, sessionCookie, withSession } from '../../helpers/customers.js';

/**
 * Input as people type it: codes and phone numbers in the digits an Arabic keyboard types, and
 * email addresses with an internationalized domain, however it is written.
 */

const password = 'analytical engine 1843';
const phoneStore = { env: { STORE_IDENTITY_MODE: 'phone' } };

/** ASCII digits written in another script whose digits are contiguous from `zero`. */
function digitsIn(zero: number, ascii: string): string {
  return ascii.replace(/[0-9]/g, (digit) => String.fromCodePoint(zero + Number(digit)));
}
const arabicIndic = (ascii: string) => digitsIn(0x0660, ascii);
const extendedArabicIndic = (ascii: string) => digitsIn(0x06f0, ascii);
const fullWidth = (ascii: string) => digitsIn(0xff10, ascii);
const devanagari = (ascii: string) => digitsIn(0x0966, ascii);

function login(t: TestApp, identity: string, secret = password): Promise<Reply> {
  return t.post(`${auth}/login`, { identity, password: secret });
}

async function registered(t: TestApp, body: Record<string, unknown>): Promise<Reply> {
  const reply = await t.post(`${auth}/register`, registration(body));
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply;
}

describe('six-digit codes typed in Arabic-Indic digits', () => {
  const harness = useHarness();

  for (const [script, written] of [
    ['Arabic-Indic', arabicIndic],
    ['Extended Arabic-Indic', extendedArabicIndic],
  ] as const) {
    test(`a verification code typed in ${script} digits verifies`, async () => {
      const t = await harness.start();
      await registered(t, {});
      const code = await t.codeFor('ada@example.com', 'verification');
      const reply = await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: written(code) });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.notEqual(reply.body.identity.verified_at, null);
    });
  }

  for (const [script, written] of [
    ['full-width', fullWidth],
    ['Devanagari', devanagari],
  ] as const) {
    test(`a verification code typed in ${script} digits is a 422 on code, and the code stays live`, async () => {
      const t = await harness.start();
      await registered(t, {});
      const code = await t.codeFor('ada@example.com', 'verification');
      assertFieldError(await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: written(code) }), 'code');
      const [challenge] = await t.db.query<{ attempts: number }>('SELECT attempts FROM challenges');
      assert.equal(challenge?.attempts, 0, 'not counted as a wrong guess');
      assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code })).status, 200);
    });
  }

  test('digits mixed from ASCII and both Arabic sets are one code', async () => {
    const t = await harness.start();
    await registered(t, {});
    const code = await t.codeFor('ada@example.com', 'verification');
    const mixed = [...code].map((digit, i) => [digit, arabicIndic(digit), extendedArabicIndic(digit)][i % 3]).join('');
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: mixed })).status, 200);
  });

  test('a reset code typed in Arabic-Indic digits resets the password, which is kept exactly as typed', async () => {
    const t = await harness.start();
    await registered(t, {});
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: 'ada@example.com' })).status, 202);
    const code = await t.codeFor('ada@example.com', 'password_reset');
    // A password's Arabic-Indic digits are its own characters: never read as ASCII.
    const newPassword = 'difference engine ١٨٢٢';
    const reply = await t.post(`${auth}/password/reset`, {
      identity: 'ada@example.com',
      code: arabicIndic(code),
      password: newPassword,
      password_confirmation: newPassword,
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assertProblem(await login(t, 'ada@example.com', 'difference engine 1822'), 401, 'unauthenticated');
    assert.equal((await login(t, 'ada@example.com', newPassword)).status, 200);
  });

  test('a sign-in code typed in Extended Arabic-Indic digits signs in', async () => {
    const t = await harness.start();
    assert.ok((await updateStore(t.db, t.clock, { signInWithCode: true })).ok);
    t.services.store.invalidate();
    await registered(t, {});
    assert.equal((await t.post(`${auth}/code/request`, { identity: 'ada@example.com' })).status, 202);
    const code = await t.codeFor('ada@example.com', 'sign_in');
    assertFieldError(
      await t.post(`${auth}/code/login`, { identity: 'ada@example.com', code: fullWidth(code) }),
      'code',
    );
    const reply = await t.post(`${auth}/code/login`, { identity: 'ada@example.com', code: extendedArabicIndic(code) });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.ok(reply.cookies.some((cookie) => cookie.name === sessionCookie));
  });

  test('an identity change confirmed with a code typed in Arabic-Indic digits moves the account', async () => {
    const t = await harness.start();
    await registered(t, {});
    const session = (await login(t, 'ada@example.com')).cookies.find((cookie) => cookie.name === sessionCookie)!.value;
    const change = await t.post(
      `${auth}/identity/change`,
      { email: 'ada@bücher.example', current_password: password },
      withSession(session),
    );
    assert.equal(change.status, 202, JSON.stringify(change.body));
    // The message goes to the domain's ASCII form, which every mail system can route.
    const code = await t.codeFor('ada@xn--bcher-kva.example', 'identity_change');
    const confirm = (typed: string) => t.post(`${auth}/identity/confirm`, { code: typed }, withSession(session));
    assertFieldError(await confirm(fullWidth(code)), 'code');
    const reply = await confirm(arabicIndic(code));
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.identity.value, 'ada@bücher.example');
    const notice = (await t.deliver()).find((message) => message.purpose === 'identity_changed');
    assert.ok(notice, 'the old address is told');
    assert.match(notice.content.text, /a•••@bücher\.example/, 'the new address masked, its domain in Unicode');
  });
});

describe('phone numbers typed in Arabic-Indic digits', () => {
  const harness = useHarness();

  test('registering in Arabic-Indic digits and logging in with ASCII ones is one account', async () => {
    const t = await harness.start(phoneStore);
    const reply = await registered(t, { email: undefined, phone: arabicIndic('+1 (415) 555-0123') });
    assert.equal(reply.body.identity.value, '+14155550123');
    assert.equal((await login(t, '+1 415 555 0123')).status, 200);
    assert.equal((await login(t, extendedArabicIndic('+14155550123'))).status, 200);
    const again = await t.post(`${auth}/register`, registration({ email: undefined, phone: '+14155550123' }));
    assertProblem(again, 422, 'identity_unavailable');
    assert.equal(await count(t, 'customers'), 1);
  });

  test('registering in ASCII digits and logging in with Extended Arabic-Indic ones is one account', async () => {
    const t = await harness.start(phoneStore);
    await registered(t, { email: undefined, phone: '+14155550123' });
    assert.equal((await login(t, extendedArabicIndic('+1 415 555 0123'))).status, 200);
    const again = await t.post(
      `${auth}/register`,
      registration({ email: undefined, phone: arabicIndic('+14155550123') }),
    );
    assertProblem(again, 422, 'identity_unavailable');
    const code = await t.codeFor('+14155550123', 'verification');
    const verified = await t.post(`${auth}/verify`, { identity: arabicIndic('+14155550123'), code: arabicIndic(code) });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
  });

  for (const [script, written] of [
    ['full-width', fullWidth],
    ['Devanagari', devanagari],
  ] as const) {
    test(`a number in ${script} digits is refused at registration and names no account at login`, async () => {
      const t = await harness.start(phoneStore);
      assertFieldError(
        await t.post(`${auth}/register`, registration({ email: undefined, phone: written('+14155550123') })),
        'phone',
      );
      assert.equal(await count(t, 'customers'), 0);
      await registered(t, { email: undefined, phone: '+14155550123' });
      assertProblem(await login(t, written('+14155550123')), 401, 'unauthenticated');
    });
  }
});

describe('email addresses with an internationalized domain', () => {
  const harness = useHarness();
  const forms = ['ada@bücher.example', 'Ada@BÜCHER.example', 'ada@xn--bcher-kva.example'];

  for (const [first, ...others] of [forms, [forms[2]!, forms[0]!, forms[1]!]]) {
    test(`registered as ${first}, the address is one identity however it is written`, async () => {
      const t = await harness.start();
      const reply = await registered(t, { email: first });
      assert.equal(reply.body.identity.value, 'ada@bücher.example', 'shown with its domain in Unicode');
      const [row] = await t.db.query<{ identity_value: string }>('SELECT identity_value FROM customers');
      assert.equal(row?.identity_value, 'ada@xn--bcher-kva.example', 'stored in its IDNA ASCII form');
      for (const other of others) {
        assertProblem(await t.post(`${auth}/register`, registration({ email: other })), 422, 'identity_unavailable');
      }
      assert.equal(await count(t, 'customers'), 1);
      for (const form of forms) {
        const signedIn = await login(t, form);
        assert.equal(signedIn.status, 200, `${form}: ${JSON.stringify(signedIn.body)}`);
        assert.equal(signedIn.body.customer.identity.value, 'ada@bücher.example');
      }
      const session = (await login(t, forms[1]!)).cookies.find((cookie) => cookie.name === sessionCookie)!.value;
      const who = await t.get(`${auth}/session`, withSession(session));
      assert.equal(who.body.customer.identity.value, 'ada@bücher.example');
    });
  }

  test('the verification code goes to the ASCII form and verifies with the address in any form', async () => {
    const t = await harness.start();
    await registered(t, { email: 'ada@bücher.example' });
    const code = await t.codeFor('ada@xn--bcher-kva.example', 'verification');
    const reply = await t.post(`${auth}/verify`, { identity: 'ADA@BÜCHER.EXAMPLE', code });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
  });

  test('an ASCII address is stored and shown as it always was', async () => {
    const t = await harness.start();
    const reply = await registered(t, { email: ' Ada@Example.COM ' });
    assert.equal(reply.body.identity.value, 'ada@example.com');
  });

  for (const [label, email] of [
    ['an A-label that does not decode', 'ada@xn--zz.example'],
    ['a right-to-left mark in the domain', 'ada@\u200fbücher.example'],
    ['a zero-width joiner in the domain', 'ada@bü\u200dcher.example'],
    ['a domain that IDNA would read as an IPv4 address', 'ada@１２３'],
  ]) {
    test(`${label} is a 422 on email`, async () => {
      const t = await harness.start();
      assertFieldError(await t.post(`${auth}/register`, registration({ email })), 'email');
      assert.equal(await count(t, 'customers'), 0);
    });
  }
});
