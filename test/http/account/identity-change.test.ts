import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore } from '../../../src/store/store.js';
import { auth, useHarness, registeredCustomer, type Reply, type TestApp } from '../../helpers/harness.js';
import { assertProblem } from '../../helpers/assertions.js';
import { sessionCookie, withSession, works } from '../../helpers/customers.js';
import { auditRows } from '../../helpers/audit.js';

async function login(t: TestApp, identity: string, password: string) {
  const reply = await t.post(`${auth}/login`, { identity, password });
  return { status: reply.status, cookie: reply.cookies.find((c) => c.name === sessionCookie)?.value };
}

async function loggedIn(t: TestApp, overrides: Record<string, unknown> = {}) {
  const customer = await registeredCustomer(t, overrides);
  const session = await login(t, customer.identity, customer.password);
  assert.equal(session.status, 200);
  return { ...customer, session: session.cookie! };
}

function requestChange(t: TestApp, session: string | undefined, body: Record<string, unknown>, headers = {}) {
  return t.post(`${auth}/identity/change`, body, {
    ...(session === undefined ? {} : withSession(session)),
    ...headers,
  });
}

function confirm(t: TestApp, session: string | undefined, code: string, headers = {}) {
  return t.post(
    `${auth}/identity/confirm`,
    { code },
    { ...(session === undefined ? {} : withSession(session)), ...headers },
  );
}

/** A wrong code that is surely not `code`. */
function otherCode(code: string): string {
  return code === '000000' ? '000001' : '000000';
}

/** The customers the audit events of one kind name, oldest first. */
async function auditEvents(t: TestApp, event: string): Promise<Array<string | null>> {
  return (await auditRows(t, event)).map((row) => row.customer_id);
}

describe('changing the email address or phone number', () => {
  const harness = useHarness();

  test('a code goes to the new address; confirming switches it, verified, ends other sessions and tells the old one', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const other = await login(t, customer.identity, customer.password);
    await t.deliver();

    const reply = await requestChange(t, customer.session, {
      email: '  Ada.New@Example.ORG ',
      current_password: customer.password,
    });
    assert.equal(reply.status, 202, JSON.stringify(reply.body));
    assert.deepEqual(reply.body, { status: 'accepted' });
    assert.equal(reply.headers['cache-control'], 'no-store');
    const code = await t.codeFor('ada.new@example.org', 'identity_change');
    const message = t.outbox.sent.find((m) => m.purpose === 'identity_change')!;
    assert.equal(message.channel, 'email');
    assert.match(message.content.text, /My Store/);
    assert.doesNotMatch(message.content.text + message.content.html, /https?:\/\//, 'no links');
    assert.equal(
      t.outbox.sent.filter((m) => m.to === customer.identity && m.purpose !== 'verification').length,
      0,
      'nothing to the old one yet',
    );

    t.clock.advance(60);
    const confirmed = await confirm(t, customer.session, code);
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.equal(confirmed.headers['cache-control'], 'no-store');
    assert.deepEqual(confirmed.body, {
      id: customer.id,
      name: 'Ada Lovelace',
      identity: { type: 'email', value: 'ada.new@example.org', verified_at: t.clock.now().toISOString() },
      has_password: true,
    });

    assert.equal(await works(t, customer.session), true, 'the caller keeps their session');
    assert.equal(await works(t, other.cookie!), false, 'every other session is ended');
    assert.equal((await login(t, customer.identity, customer.password)).status, 401, 'the old identity is gone');
    assert.equal((await login(t, 'ada.new@example.org', customer.password)).status, 200, 'the password is unchanged');

    const notice = (await t.deliver()).find((m) => m.purpose === 'identity_changed');
    assert.ok(notice, 'the old address is told');
    assert.equal(notice.to, customer.identity);
    assert.match(notice.content.text, /a•••@example\.org/);
    assert.doesNotMatch(notice.content.text + notice.content.html, /ada\.new|https?:\/\//);

    assertProblem(await confirm(t, customer.session, code), 422, 'invalid_identity_challenge');
    assert.deepEqual(await auditEvents(t, 'identity.change_requested'), [customer.id]);
    assert.deepEqual(await auditEvents(t, 'identity.changed'), [customer.id]);
    const leaked = await t.db.query("SELECT 1 FROM audit_events WHERE details::text LIKE '%example%'");
    assert.equal(leaked.length, 0, 'no identity in the audit trail');
  });

  test('on a phone store the code and the notice go by SMS, the new number masked', async () => {
    const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
    const customer = await loggedIn(t, { email: undefined, phone: '+14155550123' });
    const refused = await requestChange(t, customer.session, {
      email: 'ada@example.com',
      current_password: customer.password,
    });
    assertProblem(refused, 422, 'validation_failed');
    assert.ok(refused.body.errors.email && refused.body.errors.phone, JSON.stringify(refused.body.errors));

    const reply = await requestChange(t, customer.session, {
      phone: '+44 7911 123458',
      current_password: customer.password,
    });
    assert.equal(reply.status, 202, JSON.stringify(reply.body));
    const code = await t.codeFor('+447911123458', 'identity_change');
    const sms = t.outbox.sent.find((m) => m.purpose === 'identity_change')!;
    assert.equal(sms.channel, 'sms');
    assert.doesNotMatch(sms.content.text, /\n|https?:\/\//);

    const confirmed = await confirm(t, customer.session, code);
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.equal(confirmed.body.identity.value, '+447911123458');
    const notice = (await t.deliver()).find((m) => m.purpose === 'identity_changed');
    assert.ok(notice);
    assert.equal(notice.channel, 'sms');
    assert.equal(notice.to, '+14155550123');
    // GSM-7 has no bullet: the SMS masks with `*`, so it stays one 160-character part.
    assert.match(notice.content.text, /\+44\*\*\*\*\*\*\*58/);
  });

  test('a wrong current password is a 422 on current_password, counted as a failed login, and sends nothing', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    await t.deliver();
    const wrong = await requestChange(t, customer.session, { email: 'new@example.com', current_password: 'nope 1' });
    assertProblem(wrong, 422, 'validation_failed');
    assert.deepEqual(wrong.body.errors, { current_password: ['Is not correct.'] });
    const both = await requestChange(t, customer.session, { email: 'not an address', current_password: 'nope 2' });
    assertProblem(both, 422, 'validation_failed');
    assert.deepEqual(Object.keys(both.body.errors).sort(), ['current_password', 'email']);
    assert.equal((await t.deliver()).length, 0, 'no message');
    // The failed-login limit (10 per 15 minutes): the eleventh try is refused, right password or not.
    for (let i = 0; i < 8; i += 1) {
      assertProblem(
        await requestChange(t, customer.session, { email: 'n@example.com', current_password: 'x' }),
        422,
        'validation_failed',
      );
    }
    assertProblem(
      await requestChange(t, customer.session, { email: 'n@example.com', current_password: customer.password }),
      429,
      'rate_limited',
    );
  });

  test('answers 401 without a live session, before looking at the body', async () => {
    const t = await harness.start();
    assertProblem(await requestChange(t, undefined, {}), 401, 'unauthenticated');
    assertProblem(
      await requestChange(t, 'not-a-session', { email: 'a@example.com', current_password: 'x' }),
      401,
      'unauthenticated',
    );
    assertProblem(await confirm(t, undefined, '123456'), 401, 'unauthenticated');
  });

  test('a taken identity answers exactly as a free one, and is told so instead of getting a code', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    await registeredCustomer(t, { name: 'Grace Hopper', email: 'grace@example.com' });
    await t.deliver();
    const shape = (reply: Reply) => ({
      status: reply.status,
      body: reply.body,
      headers: Object.fromEntries(
        Object.entries(reply.headers)
          .filter(([name]) => !['date', 'x-request-id'].includes(name))
          .sort(([a], [b]) => a.localeCompare(b)),
      ),
    });
    const taken = await requestChange(t, customer.session, {
      email: 'grace@example.com',
      current_password: customer.password,
    });
    const free = await requestChange(t, customer.session, {
      email: 'free@example.com',
      current_password: customer.password,
    });
    assert.equal(taken.status, 202);
    assert.deepEqual(shape(taken), shape(free));

    const sent = await t.deliver();
    const toGrace = sent.filter((m) => m.to === 'grace@example.com');
    assert.deepEqual(
      toGrace.map((m) => m.purpose),
      ['identity_taken'],
    );
    assert.doesNotMatch(toGrace[0]!.content.text, /\b\d{6}\b/, 'no code');
    assert.doesNotMatch(
      toGrace[0]!.content.text + toGrace[0]!.content.html,
      /Grace|Hopper/,
      "no name: whoever typed it, it goes to the address's owner",
    );
    assert.deepEqual(
      sent.filter((m) => m.to === 'free@example.com').map((m) => m.purpose),
      ['identity_change'],
    );
    const codes = await t.db.query<{ new_identity_value: string }>(
      "SELECT new_identity_value FROM challenges WHERE purpose = 'identity_change'",
    );
    assert.deepEqual(
      codes.map((c) => c.new_identity_value),
      ['free@example.com'],
    );
  });

  test('a wrong, expired, used or replaced code is invalid_identity_challenge; five tries end a code', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const ask = async (email: string) => {
      t.clock.advance(61);
      assert.equal(
        (await requestChange(t, customer.session, { email, current_password: customer.password })).status,
        202,
      );
      return t.codeFor(email, 'identity_change');
    };
    assertProblem(await confirm(t, customer.session, '123456'), 422, 'invalid_identity_challenge');

    const expired = await ask('one@example.com');
    t.clock.advance(10 * 60 + 1);
    assertProblem(await confirm(t, customer.session, expired), 422, 'invalid_identity_challenge');

    const replaced = await ask('two@example.com');
    const live = await ask('three@example.com');
    if (replaced !== live)
      assertProblem(await confirm(t, customer.session, replaced), 422, 'invalid_identity_challenge');
    for (let i = 0; i < 4; i += 1) {
      assertProblem(await confirm(t, customer.session, otherCode(live)), 422, 'invalid_identity_challenge');
    }
    assertProblem(await confirm(t, customer.session, live), 422, 'invalid_identity_challenge');
    const session = await t.get(`${auth}/session`, withSession(customer.session));
    assert.equal(session.body.customer.identity.value, customer.identity, 'nothing changed');

    const last = await ask('four@example.com');
    assert.equal((await confirm(t, customer.session, last)).status, 200);
    assertProblem(await confirm(t, customer.session, last), 422, 'invalid_identity_challenge');
  });

  test("another customer's code does not work for the caller", async () => {
    const t = await harness.start();
    const ada = await loggedIn(t);
    const grace = await loggedIn(t, { name: 'Grace Hopper', email: 'grace@example.com' });
    assert.equal(
      (await requestChange(t, ada.session, { email: 'ada2@example.com', current_password: ada.password })).status,
      202,
    );
    const code = await t.codeFor('ada2@example.com', 'identity_change');
    assertProblem(await confirm(t, grace.session, code), 422, 'invalid_identity_challenge');
    assert.equal((await confirm(t, ada.session, code)).status, 200);
  });

  test('an identity registered between the request and the confirmation is identity_unavailable', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    assert.equal(
      (await requestChange(t, customer.session, { email: 'late@example.com', current_password: customer.password }))
        .status,
      202,
    );
    const code = await t.codeFor('late@example.com', 'identity_change');
    await registeredCustomer(t, { email: 'late@example.com' });
    assertProblem(await confirm(t, customer.session, code), 422, 'identity_unavailable');
    assertProblem(await confirm(t, customer.session, code), 422, 'invalid_identity_challenge');
    const session = await t.get(`${auth}/session`, withSession(customer.session));
    assert.equal(session.body.customer.identity.value, customer.identity);
  });

  test('the message limits apply per new identity', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    const body = { email: 'new@example.com', current_password: customer.password };
    assert.equal((await requestChange(t, customer.session, body)).status, 202);
    assertProblem(await requestChange(t, customer.session, body), 429, 'rate_limited');
    assert.equal(
      (await requestChange(t, customer.session, { ...body, email: 'other@example.com' })).status,
      202,
      'another identity has its own counter',
    );
  });
});

describe('races in changing the identity', () => {
  const harness = useHarness();

  test('two parallel confirmations with one code: one switch', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    assert.equal(
      (await requestChange(t, customer.session, { email: 'race@example.com', current_password: customer.password }))
        .status,
      202,
    );
    const code = await t.codeFor('race@example.com', 'identity_change');
    const answers = await Promise.all([confirm(t, customer.session, code), confirm(t, customer.session, code)]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 422]);
    assertProblem(
      answers.find((a) => a.status === 422)!,
      422,
      'invalid_identity_challenge',
    );
    assert.equal((await t.deliver()).filter((m) => m.purpose === 'identity_changed').length, 1, 'one notice');
  });

  test('two customers confirming the same new identity: exactly one wins', async () => {
    const t = await harness.start();
    const ada = await loggedIn(t);
    const grace = await loggedIn(t, { name: 'Grace Hopper', email: 'grace@example.com' });
    for (const c of [ada, grace]) {
      t.clock.advance(61);
      const reply = await requestChange(t, c.session, { email: 'shared@example.com', current_password: c.password });
      assert.equal(reply.status, 202);
    }
    await t.deliver();
    const sent = t.outbox.sent.filter((m) => m.to === 'shared@example.com' && m.purpose === 'identity_change');
    assert.equal(sent.length, 2, 'both got a code: neither had switched yet');
    // The work behind the two 202s may run in either order: each code is told by the customer its
    // outbox row is about (the message names nobody).
    const codeOf = async (customerId: string) => {
      const [row] = await t.db.query<{ id: string }>(
        "SELECT id::text AS id FROM outbox WHERE purpose = 'identity_change' AND customer_id = $1",
        [customerId],
      );
      return sent.find((m) => m.id === row?.id)!.content.text.match(/\b\d{6}\b/)![0];
    };
    const codes = { ada: await codeOf(ada.id), grace: await codeOf(grace.id) };
    const answers = await Promise.all([confirm(t, ada.session, codes.ada), confirm(t, grace.session, codes.grace)]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 422]);
    assertProblem(
      answers.find((a) => a.status === 422)!,
      422,
      'identity_unavailable',
    );
    const owners = await t.db.query("SELECT id FROM customers WHERE identity_value = 'shared@example.com'");
    assert.equal(owners.length, 1);
  });
});

describe('the identity routes in the browser and behind the store gate', () => {
  const harness = useHarness();

  test('refuse a cross-site request and one without the CSRF token, changing nothing', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    await t.deliver();
    const token = (await t.get('/api/v1/csrf-cookie', withSession(customer.session))).cookies.find(
      (c) => c.name === 'XSRF-TOKEN',
    )!.value;
    const cookie = `${sessionCookie}=${customer.session}; XSRF-TOKEN=${token}`;
    for (const [path, body] of [
      ['/identity/change', { email: 'new@example.com', current_password: customer.password }],
      ['/identity/confirm', { code: '123456' }],
    ] as const) {
      const crossSite = await t.post(`${auth}${path}`, body, {
        cookie,
        'x-xsrf-token': token,
        'sec-fetch-site': 'cross-site',
        origin: 'https://evil.example',
      });
      assertProblem(crossSite, 403, 'untrusted_origin');
      assertProblem(
        await t.post(`${auth}${path}`, body, { cookie, 'sec-fetch-site': 'same-origin' }),
        419,
        'csrf_token_mismatch',
      );
    }
    assert.equal((await t.deliver()).length, 0, 'no code was sent');
    const allowed = await t.post(
      `${auth}/identity/change`,
      { email: 'new@example.com', current_password: customer.password },
      {
        cookie,
        'x-xsrf-token': token,
        'sec-fetch-site': 'same-origin',
      },
    );
    assert.equal(allowed.status, 202, JSON.stringify(allowed.body));
  });

  test('answer 503 store_unavailable while the store is shut', async () => {
    const t = await harness.start();
    const customer = await loggedIn(t);
    assert.equal((await updateStore(t.db, t.clock, { status: 'paused' })).ok, true);
    t.services.store.invalidate();
    assertProblem(
      await requestChange(t, customer.session, { email: 'new@example.com', current_password: customer.password }),
      503,
      'store_unavailable',
    );
    assertProblem(await confirm(t, customer.session, '123456'), 503, 'store_unavailable');
  });
});
