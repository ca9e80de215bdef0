import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore } from '../../../src/store/store.js';
import { api, auth, useHarness, registeredCustomer, type TestApp } from '../../helpers/harness.js';
import { assertProblem } from '../../helpers/assertions.js';
import { loginFrom, sessionCookie, withSession, works } from '../../helpers/customers.js';
import { auditRows as auditEvents } from '../../helpers/audit.js';

const newPassword = 'difference engine 1822';

async function loggedIn(t: TestApp, overrides: Record<string, unknown> = {}, address = '10.90.0.1') {
  const customer = await registeredCustomer(t, overrides);
  const session = await login(t, customer.identity, customer.password, address);
  assert.equal(session.status, 200);
  return { ...customer, session: session.cookie!, xsrf: session.xsrf! };
}

function login(t: TestApp, identity: string, password: string, address = '10.90.0.2') {
  return loginFrom(t, address, identity, password);
}

function change(t: TestApp, session: string | undefined, body: Record<string, unknown>, headers = {}) {
  return t.post(`${auth}/password/change`, body, {
    ...(session === undefined ? {} : withSession(session)),
    ...headers,
  });
}

function changeBody(current: string, password = newPassword, confirmation = password) {
  return { current_password: current, password, password_confirmation: confirmation };
}

describe('changing the password', () => {
  const harness = useHarness();

  test('answers 200, rotates the session and its CSRF token, ends every other session and sends a notice', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const other = await login(t, customer.identity, customer.password, '10.90.1.1');
    const bystander = await loggedIn(t, { email: 'grace@example.com' }, '10.90.1.2');
    await t.deliver();
    const before = t.outbox.sent.length;

    const reply = await change(t, customer.session, changeBody(customer.password));
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.deepEqual(reply.body, { status: 'password_changed' });
    assert.equal(reply.headers['cache-control'], 'no-store');
    const rotated = reply.cookies.find((c) => c.name === sessionCookie);
    const token = reply.cookies.find((c) => c.name === 'XSRF-TOKEN');
    assert.ok(rotated && token, 'a new session cookie and a new CSRF token are set');
    assert.notEqual(rotated.value, customer.session);
    assert.notEqual(token.value, customer.xsrf);
    assert.equal(rotated.httpOnly, true);

    assert.equal(await works(t, rotated.value), true, 'the new session works');
    assert.equal(await works(t, customer.session), false, 'the old cookie value is dead');
    assert.equal(await works(t, other.cookie!), false, 'the other device is signed out');
    assert.equal(await works(t, bystander.session), true, 'another customer keeps their session');

    assert.equal((await login(t, customer.identity, customer.password, '10.90.2.1')).status, 401);
    assert.equal((await login(t, customer.identity, newPassword, '10.90.2.2')).status, 200);

    const sent = (await t.deliver()).concat(t.outbox.sent.slice(before));
    const notice = sent.find((m) => m.to === customer.identity && m.purpose === 'password_changed');
    assert.ok(notice, 'the password_changed notice is sent');
    assert.match(notice.content.text, /every other device was signed out/);
    assert.doesNotMatch(notice.content.text + notice.content.html, /https?:\/\//, 'no links');
    assert.deepEqual(
      (await auditEvents(t, 'password.changed')).map((e) => e.customer_id),
      [customer.id],
    );
  });

  test('on a phone store the notice goes out by SMS, in one line without links', async () => {
    const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
    const customer = await loggedIn(t, { email: undefined, phone: '+14155550123' });
    assert.equal((await change(t, customer.session, changeBody(customer.password))).status, 200);
    const notice = (await t.deliver()).find((m) => m.purpose === 'password_changed');
    assert.ok(notice, 'the notice is sent');
    assert.equal(notice.channel, 'sms');
    assert.equal(notice.to, '+14155550123');
    assert.match(
      notice.content.text,
      /^My Store: The password of your My Store account was just changed\. If this was not you, reset your password right away\.$/,
    );
    assert.doesNotMatch(notice.content.text, /https?:\/\/|\n/);
  });

  test('the new CSRF token is bound to the new session', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const browser = (session: string, token: string) => ({
      cookie: `${sessionCookie}=${session}; XSRF-TOKEN=${token}`,
      'x-xsrf-token': token,
      'sec-fetch-site': 'same-origin',
    });
    const reply = await change(t, undefined, changeBody(customer.password), browser(customer.session, customer.xsrf));
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const session = reply.cookies.find((c) => c.name === sessionCookie)!.value;
    const token = reply.cookies.find((c) => c.name === 'XSRF-TOKEN')!.value;
    // The token of the old session does not pass with the new one; the new token does.
    assertProblem(
      await t.post(`${auth}/logout`, undefined, browser(session, customer.xsrf)),
      419,
      'csrf_token_mismatch',
    );
    assert.equal((await t.post(`${auth}/logout`, undefined, browser(session, token))).status, 200);
  });

  test('a wrong current password is 422 on current_password, counts as a failed login and changes nothing', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const reply = await change(t, customer.session, changeBody('not the password 1'));
    assertProblem(reply, 422, 'validation_failed');
    assert.deepEqual(reply.body.errors, { current_password: ['Is not correct.'] });
    assert.equal(await works(t, customer.session), true, 'the session stays');
    assert.equal((await login(t, customer.identity, customer.password, '10.90.3.1')).status, 200);
    assert.deepEqual(await auditEvents(t, 'password.changed'), []);
  });

  test('wrong guesses at the current password meet the failed-login limit of the identity', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    // Ten failures per identity in 15 minutes, shared with the login form.
    for (let i = 0; i < 10; i += 1) {
      assertProblem(await change(t, customer.session, changeBody(`wrong guess ${i}`)), 422, 'validation_failed');
    }
    const limited = await change(t, customer.session, changeBody(customer.password));
    assertProblem(limited, 429, 'rate_limited');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assert.equal((await login(t, customer.identity, customer.password, '10.90.3.2')).status, 429);
  });

  test('the new password follows the registration rules, named on every failing field at once', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const weak = await change(t, customer.session, changeBody('not the password 1', 'short', 'other'));
    assertProblem(weak, 422, 'validation_failed');
    assert.deepEqual(Object.keys(weak.body.errors).sort(), ['current_password', 'password', 'password_confirmation']);
    const common = await change(t, customer.session, changeBody(customer.password, 'password1'));
    assertProblem(common, 422, 'validation_failed');
    assert.match(common.body.errors.password.join(' '), /too common/);
    const missing = await change(t, customer.session, { current_password: customer.password, password: 'short' });
    assertProblem(missing, 422, 'validation_failed');
    assert.ok(missing.body.errors.password_confirmation, 'a missing confirmation is named');
    assert.ok(missing.body.errors.password, 'the weak password is named with it');
    assert.equal(await works(t, customer.session), true, 'nothing changed');
    assert.equal((await login(t, customer.identity, customer.password, '10.90.4.1')).status, 200);
  });

  test('without a live session answers 401 unauthenticated', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    assertProblem(await change(t, undefined, changeBody(customer.password)), 401, 'unauthenticated');
    assertProblem(await change(t, 'no-such-session', changeBody(customer.password)), 401, 'unauthenticated');
    assert.equal((await t.post(`${auth}/logout`, undefined, withSession(customer.session))).status, 200);
    assertProblem(await change(t, customer.session, changeBody(customer.password)), 401, 'unauthenticated');
    assert.equal((await login(t, customer.identity, customer.password, '10.90.5.1')).status, 200, 'unchanged');
  });

  test('of two parallel changes from two sessions, exactly one succeeds', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const other = await login(t, customer.identity, customer.password, '10.90.6.1');
    const replies = await Promise.all([
      change(t, customer.session, changeBody(customer.password, 'first new password 1')),
      change(t, other.cookie!, changeBody(customer.password, 'second new password 2')),
    ]);
    const statuses = replies.map((r) => r.status).sort();
    assert.ok(
      statuses[0] === 200 && (statuses[1] === 401 || statuses[1] === 422),
      `one change wins: ${JSON.stringify(replies.map((r) => r.body))}`,
    );
    const winner = replies.find((r) => r.status === 200)!;
    const password = winner === replies[0] ? 'first new password 1' : 'second new password 2';
    assert.equal((await login(t, customer.identity, password, '10.90.6.2')).status, 200);
    const [sessions] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
    assert.equal(sessions?.n, 2, "the winner's rotated session and the login just made");
  });
});

describe('changing the name', () => {
  const harness = useHarness();

  test('answers 200 with the Customer, trimmed, and audits profile.changed', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const reply = await t.post(`${auth}/profile`, { name: '  Augusta Ada King  ' }, withSession(customer.session));
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.headers['cache-control'], 'no-store');
    assert.deepEqual(reply.body, {
      id: customer.id,
      name: 'Augusta Ada King',
      identity: { type: 'email', value: customer.identity, verified_at: null },
      has_password: true,
    });
    const session = await t.get(`${auth}/session`, withSession(customer.session));
    assert.equal(session.body.customer.name, 'Augusta Ada King');
    assert.deepEqual(
      (await auditEvents(t, 'profile.changed')).map((e) => e.customer_id),
      [customer.id],
    );
  });

  test('refuses a name the registration refuses, with the same words', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const cases: Array<[unknown, string]> = [
      ['   ', 'Is required.'],
      ['x'.repeat(121), 'Must be at most 120 characters.'],
      ['Ada\u0007', 'Must not contain control characters.'],
    ];
    for (const [name, message] of cases) {
      const reply = await t.post(`${auth}/profile`, { name }, withSession(customer.session));
      assertProblem(reply, 422, 'validation_failed');
      assert.deepEqual(reply.body.errors, { name: [message] }, String(name));
      const registering = await t.post(`${auth}/register`, {
        name,
        email: 'grace@example.com',
        password: newPassword,
        password_confirmation: newPassword,
      });
      assert.deepEqual(registering.body.errors, { name: [message] }, `register: ${String(name)}`);
    }
    const missing = await t.post(`${auth}/profile`, {}, withSession(customer.session));
    assertProblem(missing, 422, 'validation_failed');
    assert.ok(missing.body.errors.name);
    const session = await t.get(`${auth}/session`, withSession(customer.session));
    assert.equal(session.body.customer.name, 'Ada Lovelace', 'unchanged');
  });

  test('without a live session answers 401 unauthenticated', async () => {
    const t = await harness.start();
    await loggedIn(t);
    assertProblem(await t.post(`${auth}/profile`, { name: 'Mallory' }), 401, 'unauthenticated');
    assertProblem(await t.post(`${auth}/profile`, { name: 'Mallory' }, withSession('forged')), 401, 'unauthenticated');
    const [row] = await t.db.query<{ name: string }>('SELECT name FROM customers');
    assert.equal(row?.name, 'Ada Lovelace');
  });

  test('is limited to 20 changes an hour per customer', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    for (let i = 0; i < 20; i += 1) {
      assert.equal((await t.post(`${auth}/profile`, { name: `Ada ${i}` }, withSession(customer.session))).status, 200);
    }
    assertProblem(
      await t.post(`${auth}/profile`, { name: 'Ada 21' }, withSession(customer.session)),
      429,
      'rate_limited',
    );
    t.clock.advance(60 * 60);
    assert.equal((await t.post(`${auth}/profile`, { name: 'Ada 22' }, withSession(customer.session))).status, 200);
  });
});

describe('the account routes in the browser and behind the store gate', () => {
  const harness = useHarness();

  test('refuse a cross-site request and one without the CSRF token, changing nothing', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const cookie = `${sessionCookie}=${customer.session}; XSRF-TOKEN=${customer.xsrf}`;
    for (const [path, body] of [
      ['/password/change', changeBody(customer.password)],
      ['/profile', { name: 'Mallory' }],
    ] as const) {
      const crossSite = await t.post(`${auth}${path}`, body, {
        cookie,
        'x-xsrf-token': customer.xsrf,
        'sec-fetch-site': 'cross-site',
        origin: 'https://evil.example',
      });
      assertProblem(crossSite, 403, 'untrusted_origin');
      const noToken = await t.post(`${auth}${path}`, body, { cookie, 'sec-fetch-site': 'same-origin' });
      assertProblem(noToken, 419, 'csrf_token_mismatch');
    }
    assert.equal(await works(t, customer.session), true);
    const session = await t.get(`${auth}/session`, withSession(customer.session));
    assert.equal(session.body.customer.name, 'Ada Lovelace');
    assert.equal((await login(t, customer.identity, customer.password, '10.90.7.1')).status, 200);
  });

  test('answer 503 store_unavailable while the store is shut, and work again once it is open', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    for (const status of ['paused', 'closed', 'active'] as const) {
      assert.equal((await updateStore(t.db, t.clock, { status })).ok, true);
      t.services.store.invalidate();
      const profile = await t.post(`${auth}/profile`, { name: `Ada ${status}` }, withSession(customer.session));
      if (status === 'active') {
        assert.equal(profile.status, 200);
      } else {
        assertProblem(profile, 503, 'store_unavailable');
        assertProblem(await change(t, customer.session, changeBody(customer.password)), 503, 'store_unavailable');
      }
      assert.equal(profile.headers['cache-control'], 'no-store');
    }
  });

  test('are in the OpenAPI document with their problem codes', async () => {
    const t = await harness.start();
    const document = (await t.get(`${api}/openapi.json`)).body;
    const changeOp = document.paths['/api/v1/customer/auth/password/change'].post;
    assert.equal(changeOp.operationId, 'changePassword');
    assert.deepEqual(changeOp.security, [{ session: [] }]);
    for (const status of ['200', '401', '403', '419', '422', '429', '503'])
      assert.ok(changeOp.responses[status], status);
    const profileOp = document.paths['/api/v1/customer/auth/profile'].post;
    assert.equal(profileOp.operationId, 'changeProfile');
    assert.ok(profileOp.responses['401'] && profileOp.responses['422']);
  });
});
