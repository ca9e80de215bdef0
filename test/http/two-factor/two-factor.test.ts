import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore, type TwoFactorMode } from '../../../src/store/store.js';
import { auth, useHarness, registeredCustomer, type Reply, type TestApp } from '../../helpers/harness.js';
import { count, cookieValue, resetWithCode, sessionCookie, withSession, works } from '../../helpers/customers.js';
import { stepOf, totpAt } from '../../helpers/totp.js';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';

const pendingCookie = 'storefront_two_factor';

async function offerTwoFactor(t: TestApp, mode: TwoFactorMode = 'optional'): Promise<void> {
  const result = await updateStore(t.db, t.clock, { twoFactor: mode });
  assert.ok(result.ok);
  t.services.store.invalidate();
}

/** A verified, signed-in customer with the second step on: their secret, recovery codes and session. */
async function withSecondStep(t: TestApp, overrides: Record<string, unknown> = {}) {
  const customer = await registeredCustomer(t, overrides);
  const code = await t.codeFor(customer.identity, 'verification');
  assert.equal((await t.post(`${auth}/verify`, { identity: customer.identity, code })).status, 200);
  const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
  assert.equal(login.status, 200);
  const session = cookieValue(login, sessionCookie);
  const setup = await t.post(
    `${auth}/account/two-factor/setup`,
    { current_password: customer.password },
    withSession(session),
  );
  assert.equal(setup.status, 200, JSON.stringify(setup.body));
  const secret: string = setup.body.secret;
  const confirm = await t.post(
    `${auth}/account/two-factor/confirm`,
    { code: totpAt(secret, stepOf(t.clock.now())) },
    withSession(session),
  );
  assert.equal(confirm.status, 200, JSON.stringify(confirm.body));
  // The next step: the one confirm used is spent.
  t.clock.advance(30);
  return { ...customer, session, secret, setup: setup.body, recoveryCodes: confirm.body.recovery_codes as string[] };
}

/** The first step by password: the answer and the pending sign-in's cookie header. */
async function firstStep(t: TestApp, identity: string, password: string) {
  const reply = await t.post(`${auth}/login`, { identity, password });
  const pending = reply.cookies.find((c) => c.name === pendingCookie);
  const headers: Record<string, string> = pending === undefined ? {} : { cookie: `${pendingCookie}=${pending.value}` };
  return { reply, headers };
}

function verify(t: TestApp, headers: Record<string, string>, body: Record<string, string>): Promise<Reply> {
  return t.post(`${auth}/two-factor/verify`, body, headers);
}

const nowCode = (t: TestApp, secret: string) => totpAt(secret, stepOf(t.clock.now()));

describe('a second step (TOTP)', () => {
  const harness = useHarness();

  test('off by default: its account routes are 404 and a login opens a session at once', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    assert.equal(login.body.auth_type, 'session');
    const session = cookieValue(login, sessionCookie);
    for (const reply of [
      await t.get(`${auth}/account/two-factor`, withSession(session)),
      await t.post(`${auth}/account/two-factor/setup`, { current_password: customer.password }, withSession(session)),
    ])
      assert.equal(reply.status, 404);
  });

  test('set up, confirmed, then a password sign-in waits for a code of the app and opens its session only then', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    assert.match(customer.setup.otpauth_uri, /^otpauth:\/\/totp\/.*secret=/);
    assert.match(customer.setup.qr_svg, /^<svg[^>]*>/);
    assert.doesNotMatch(customer.setup.qr_svg, /<script|style=/i);
    assert.equal(customer.recoveryCodes.length, 10);
    assert.equal(new Set(customer.recoveryCodes).size, 10);
    const status = await t.get(`${auth}/account/two-factor`, withSession(customer.session));
    assert.deepEqual(status.body, { status: 'on', recovery_codes_left: 10, store: 'optional' });
    const notices = (await t.deliver()).filter((m) => m.purpose === 'two_factor_on');
    assert.equal(notices.length, 1);

    const sessionsBefore = await count(t, 'sessions WHERE customer_id = $1', [customer.id]);
    const { reply, headers } = await firstStep(t, customer.identity, customer.password);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { auth_type: 'two_factor_required', methods: ['totp', 'recovery_code'] });
    assert.equal(
      reply.cookies.find((c) => c.name === sessionCookie),
      undefined,
    );
    const pending = reply.cookies.find((c) => c.name === pendingCookie);
    assert.ok(pending);
    assert.equal(pending.httpOnly, true);
    assert.equal(pending.sameSite, 'Strict');
    assert.equal(pending.path, '/api/v1/customer/auth/two-factor');
    assert.equal(pending.maxAge, 300);
    assert.equal(await count(t, 'sessions WHERE customer_id = $1', [customer.id]), sessionsBefore);

    const finished = await verify(t, headers, { code: nowCode(t, customer.secret) });
    assert.equal(finished.status, 200, JSON.stringify(finished.body));
    assert.equal(finished.body.auth_type, 'session');
    assert.equal(finished.body.customer.id, customer.id);
    assert.ok(await works(t, cookieValue(finished, sessionCookie)));
    // The pending sign-in is spent: its cookie finishes nothing twice.
    assert.equal((await verify(t, headers, { code: nowCode(t, customer.secret) })).status, 401);
  });

  test('a step of the app is accepted once; one step either side of now is accepted, two are not', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    // Past the step the confirmation used, and the one after it.
    t.clock.advance(30);
    const step = stepOf(t.clock.now());
    const first = await firstStep(t, customer.identity, customer.password);
    assert.equal((await verify(t, first.headers, { code: totpAt(customer.secret, step - 1) })).status, 200);
    // The same step again, in another sign-in: a replay.
    const second = await firstStep(t, customer.identity, customer.password);
    const replay = await verify(t, second.headers, { code: totpAt(customer.secret, step - 1) });
    assert.equal(replay.status, 422);
    assert.ok(replay.body.errors.code);
    assert.equal((await verify(t, second.headers, { code: totpAt(customer.secret, step + 2) })).status, 422);
    assert.equal((await verify(t, second.headers, { code: totpAt(customer.secret, step + 1) })).status, 200);
    // An earlier step than one used is refused too, though it is in the window.
    const third = await firstStep(t, customer.identity, customer.password);
    assert.equal((await verify(t, third.headers, { code: totpAt(customer.secret, step) })).status, 422);
  });

  test('five wrong codes end the pending sign-in: the fifth answers 401 and a right code after it opens nothing', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    const { headers } = await firstStep(t, customer.identity, customer.password);
    const right = nowCode(t, customer.secret);
    const wrong = right === '000000' ? '000001' : '000000';
    for (let attempt = 1; attempt <= 4; attempt += 1)
      assert.equal((await verify(t, headers, { code: wrong })).status, 422, `try ${attempt}`);
    const fifth = await verify(t, headers, { code: wrong });
    assert.equal(fifth.status, 401);
    assert.equal(fifth.body.code, 'unauthenticated');
    assert.equal((await verify(t, headers, { code: right })).status, 401);
    assert.equal(await count(t, 'pending_sign_ins'), 0);
  });

  test('a recovery code signs in once, sends a notice, and counts down; a spent one is refused', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    await t.deliver();
    const [code] = customer.recoveryCodes;
    const first = await firstStep(t, customer.identity, customer.password);
    // Case, spaces and the hyphen do not matter.
    const typed = ` ${code!.toUpperCase().replace('-', ' ')} `;
    const used = await verify(t, first.headers, { recovery_code: typed });
    assert.equal(used.status, 200, JSON.stringify(used.body));
    const session = cookieValue(used, sessionCookie);
    const notices = (await t.deliver()).filter((m) => m.purpose === 'recovery_code_used');
    assert.equal(notices.length, 1);
    assert.equal(notices[0]!.to, customer.identity);
    const status = await t.get(`${auth}/account/two-factor`, withSession(session));
    assert.equal(status.body.recovery_codes_left, 9);
    const again = await firstStep(t, customer.identity, customer.password);
    const spent = await verify(t, again.headers, { recovery_code: code! });
    assert.equal(spent.status, 422);
    assert.ok(spent.body.errors.recovery_code);
    const both = await verify(t, again.headers, { code: '123456', recovery_code: code! });
    assert.equal(both.status, 422);
  });

  test('without the cookie, with a forged one, or after five minutes there is nothing to finish', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    const { headers } = await firstStep(t, customer.identity, customer.password);
    assert.equal((await verify(t, {}, { code: nowCode(t, customer.secret) })).status, 401);
    const forged = headers.cookie!.replace(/\.[^.]+$/, '.AAAA');
    assert.equal((await verify(t, { cookie: forged }, { code: nowCode(t, customer.secret) })).status, 401);
    t.clock.advance(5 * 60 + 1);
    assert.equal((await verify(t, headers, { code: nowCode(t, customer.secret) })).status, 401);
  });

  test('a password change between the two steps leaves the pending sign-in nothing to finish', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    const { headers } = await firstStep(t, customer.identity, customer.password);
    const changed = await resetWithCode(t, customer.identity, 'An0ther-long-passw0rd');
    assert.equal(changed.reply.status, 200, JSON.stringify(changed.reply.body));
    assert.equal((await verify(t, headers, { code: nowCode(t, customer.secret) })).status, 401);
    // A reset keeps the second step: the new password still asks for it.
    const after = await firstStep(t, customer.identity, 'An0ther-long-passw0rd');
    assert.equal(after.reply.body.auth_type, 'two_factor_required');
  });

  test('a sign-in code waits for the second step too', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const updated = await updateStore(t.db, t.clock, { signInWithCode: true });
    assert.ok(updated.ok);
    t.services.store.invalidate();
    const customer = await withSecondStep(t);
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/code/request`, { identity: customer.identity })).status, 202);
    const code = await t.codeFor(customer.identity, 'sign_in');
    const reply = await t.post(`${auth}/code/login`, { identity: customer.identity, code });
    assert.equal(reply.status, 200);
    assert.equal(reply.body.auth_type, 'two_factor_required');
    const pending = reply.cookies.find((c) => c.name === pendingCookie)!;
    const finished = await verify(
      t,
      { cookie: `${pendingCookie}=${pending.value}` },
      { code: nowCode(t, customer.secret) },
    );
    assert.equal(finished.status, 200);
  });

  test('turning it off takes the password and a code; a store that requires it refuses; the notice goes out', async () => {
    const t = await harness.start();
    await offerTwoFactor(t, 'required');
    const customer = await withSecondStep(t);
    const body = { current_password: customer.password, code: nowCode(t, customer.secret) };
    const refused = await t.post(`${auth}/account/two-factor/disable`, body, withSession(customer.session));
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'two_factor_enforced');
    await offerTwoFactor(t, 'optional');
    const wrongPassword = await t.post(
      `${auth}/account/two-factor/disable`,
      { ...body, current_password: 'not-the-password-1' },
      withSession(customer.session),
    );
    assert.equal(wrongPassword.status, 422);
    assert.ok(wrongPassword.body.errors.current_password);
    const wrongCode = await t.post(
      `${auth}/account/two-factor/disable`,
      { ...body, code: 'aaaaa-aaaaa' },
      withSession(customer.session),
    );
    assert.equal(wrongCode.status, 422);
    assert.ok(wrongCode.body.errors.code);
    // A sign-in waiting for the second step ends with it.
    const { headers } = await firstStep(t, customer.identity, customer.password);
    const off = await t.post(`${auth}/account/two-factor/disable`, body, withSession(customer.session));
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.equal((await t.deliver()).filter((m) => m.purpose === 'two_factor_off').length, 1);
    t.clock.advance(30);
    assert.equal((await verify(t, headers, { code: nowCode(t, customer.secret) })).status, 401);
    const plain = await firstStep(t, customer.identity, customer.password);
    assert.equal(plain.reply.body.auth_type, 'session');
    assert.equal(await count(t, 'second_steps'), 0);
  });

  test('new recovery codes replace the old ones', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    const renewed = await t.post(
      `${auth}/account/two-factor/recovery-codes`,
      { current_password: customer.password, code: nowCode(t, customer.secret) },
      withSession(customer.session),
    );
    assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
    const fresh: string[] = renewed.body.recovery_codes;
    assert.equal(fresh.length, 10);
    const old = await firstStep(t, customer.identity, customer.password);
    assert.equal((await verify(t, old.headers, { recovery_code: customer.recoveryCodes[0]! })).status, 422);
    assert.equal((await verify(t, old.headers, { recovery_code: fresh[0]! })).status, 200);
  });

  test('the secret is sealed and the recovery codes kept as MACs; the export says it is on and no more', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    const [row] = await t.db.query<{ sealed_secret: string; recovery_hashes: Buffer[] }>(
      'SELECT sealed_secret, recovery_hashes FROM second_steps',
    );
    assert.ok(row);
    assert.ok(!row.sealed_secret.includes(customer.secret));
    const stored = JSON.stringify(await t.db.query('SELECT * FROM second_steps'));
    for (const code of customer.recoveryCodes)
      assert.ok(!stored.includes(code) && !stored.includes(code.replace('-', '')));
    assert.equal(row.recovery_hashes.length, 10);
    const exported = await t.get(`${auth}/account/export`, withSession(customer.session));
    assert.equal(exported.status, 200, JSON.stringify(exported.body).slice(0, 300));
    assert.equal(exported.body.customer.two_factor, true);
    assert.ok(!JSON.stringify(exported.body).includes(customer.secret));
  });

  test('an unproven account cannot set one up; setting up again while on is 409', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await registeredCustomer(t);
    const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
    const session = cookieValue(login, sessionCookie);
    const unproven = await t.post(
      `${auth}/account/two-factor/setup`,
      { current_password: customer.password },
      withSession(session),
    );
    assert.equal(unproven.status, 403);
    assert.equal(unproven.body.code, 'identity_unverified');
    const on = await withSecondStep(t, { email: 'second@example.com' });
    const again = await t.post(
      `${auth}/account/two-factor/setup`,
      { current_password: on.password },
      withSession(on.session),
    );
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'two_factor_on');
  });

  test('a store that turns it off asks for no second step, and offering it again brings the customer’s back', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    await offerTwoFactor(t, 'off');
    assert.equal((await firstStep(t, customer.identity, customer.password)).reply.body.auth_type, 'session');
    await offerTwoFactor(t, 'optional');
    assert.equal(
      (await firstStep(t, customer.identity, customer.password)).reply.body.auth_type,
      'two_factor_required',
    );
  });

  test('every try counts against the failed-login limit of the identity', async () => {
    const t = await harness.start();
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    const right = nowCode(t, customer.secret);
    const wrong = right === '000000' ? '000001' : '000000';
    let limited: Reply | undefined;
    // The limit is 10 a quarter hour per identity; each pending sign-in takes four wrong tries.
    for (let round = 0; round < 4 && limited === undefined; round += 1) {
      // The first step counts too, and is forgiven only when the second finishes.
      const { reply: first, headers } = await firstStep(t, customer.identity, customer.password);
      if (first.status === 429) limited = first;
      for (let attempt = 0; attempt < 4 && limited === undefined; attempt += 1) {
        const reply = await verify(t, headers, { code: wrong });
        if (reply.status === 429) {
          limited = reply;
          break;
        }
        assert.equal(reply.status, 422);
      }
    }
    assert.ok(limited, 'the limit stopped the tries');
  });

  test('staff remove the second step of a shopper who lost app and codes; the shopper is told', async () => {
    const adminToken = 'admin-token-TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT';
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    await offerTwoFactor(t);
    const customer = await withSecondStep(t);
    await t.deliver();
    const one = `/admin/v1/stores/default/customers/${customer.id}`;
    assert.equal((await call('GET', one)).body.two_factor, true);
    const { headers } = await firstStep(t, customer.identity, customer.password);
    const removed = await call('POST', `${one}/remove-two-factor`);
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.equal(removed.body.two_factor, false);
    assert.equal((await t.deliver()).filter((m) => m.purpose === 'two_factor_off').length, 1);
    // What waited for the old second step ends; the password alone signs in.
    assert.equal((await verify(t, headers, { code: nowCode(t, customer.secret) })).status, 401);
    assert.equal((await firstStep(t, customer.identity, customer.password)).reply.body.auth_type, 'session');
    const [entry] = await t.db.query<{ event: string }>(
      "SELECT event FROM audit_events WHERE customer_id = $1 AND event = 'customer.two_factor_removed'",
      [customer.id],
    );
    assert.ok(entry);
    // Again: nothing to remove, nothing sent.
    assert.equal((await call('POST', `${one}/remove-two-factor`)).status, 200);
    assert.equal((await t.deliver()).filter((m) => m.purpose === 'two_factor_off').length, 0);
  });
});
