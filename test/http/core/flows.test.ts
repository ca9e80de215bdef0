import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness, registration } from '../../helpers/harness.js';
import { resetWithCode } from '../../helpers/customers.js';

describe('the whole journey', () => {
  const harness = useHarness();

  test('register, verify, log in, log out, reset the password and log in with the new one', async () => {
    const t = await harness.start();
    const registered = await t.post(`${auth}/register`, registration({ email: ' Ada@Example.COM ' }));
    assert.equal(registered.status, 201);
    assert.deepEqual(registered.body.identity, { type: 'email', value: 'ada@example.com', verified_at: null });
    assert.equal(registered.headers['set-cookie'], undefined, 'registration never creates a session');

    const code = await t.codeFor('ada@example.com', 'verification');
    const verified = await t.post(`${auth}/verify`, { identity: 'ADA@example.com', code });
    assert.equal(verified.status, 200);
    assert.equal(verified.body.identity.verified_at, t.clock.now().toISOString());

    const loggedIn = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
    assert.equal(loggedIn.status, 200);
    assert.equal(loggedIn.body.auth_type, 'session');
    const session = loggedIn.cookies.find((c) => c.name === 'storefront_session');
    assert.ok(session, 'login sets the session cookie');

    const loggedOut = await t.post(`${auth}/logout`, undefined, { cookie: `storefront_session=${session.value}` });
    assert.equal(loggedOut.status, 200);
    assert.deepEqual(loggedOut.body, { status: 'signed_out' });

    const { reply: reset } = await resetWithCode(t, 'ada@example.com', 'difference engine 1822');
    assert.equal(reset.status, 200);
    assert.deepEqual(reset.body, { status: 'password_reset' });

    const oldPassword = await t.post(`${auth}/login`, {
      identity: 'ada@example.com',
      password: 'analytical engine 1843',
    });
    assert.equal(oldPassword.status, 401);
    const newPassword = await t.post(`${auth}/login`, {
      identity: 'ada@example.com',
      password: 'difference engine 1822',
    });
    assert.equal(newPassword.status, 200);
  });
});
