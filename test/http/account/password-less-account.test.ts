import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth } from '../../helpers/harness.js';
import {
  addTestProvider,
  login,
  shopHost,
  signedInWith,
  useProviderSuite,
  withSession,
} from '../../helpers/providers.js';

/**
 * An account a provider made has no password: the Customer says so, the calls that ask for the
 * current password refuse every guess, and a reset code to its own identity sets one.
 */

const newPassword = 'difference engine 1822';

describe('an account without a password', () => {
  const suite = useProviderSuite(async (t, op) => {
    await addTestProvider(t, op);
  });

  test('who-am-I says has_password false, and identity change and deletion refuse any current_password', async () => {
    const { t } = await suite.begin();
    const walk = await signedInWith(t, 'google', 'ada');
    const session = await t.get(`${auth}/session`, withSession(walk.session));
    assert.equal(session.status, 200);
    assert.equal(session.body.customer.has_password, false);

    const change = await t.post(
      `${auth}/identity/change`,
      { email: 'ada.new@example.org', current_password: 'analytical engine 1843' },
      withSession(walk.session),
    );
    assert.equal(change.status, 422, JSON.stringify(change.body));
    assert.deepEqual(Object.keys(change.body.errors), ['current_password']);
    const deletion = await t.post(
      `${auth}/account/delete`,
      { current_password: 'analytical engine 1843' },
      withSession(walk.session),
    );
    assert.equal(deletion.status, 422, JSON.stringify(deletion.body));
    assert.deepEqual(Object.keys(deletion.body.errors), ['current_password']);
    await t.close();
  });

  test('a reset code to its identity sets a password: every session ends, and the password signs in with has_password true', async () => {
    const { t } = await suite.begin();
    const walk = await signedInWith(t, 'google', 'ada');
    const forgot = await t.post(`${auth}/password/forgot`, { identity: 'ada@example.com' }, { host: shopHost });
    assert.equal(forgot.status, 202);
    const code = await t.codeFor('ada@example.com', 'password_reset');

    const reset = await t.post(
      `${auth}/password/reset`,
      { identity: 'ada@example.com', code, password: newPassword, password_confirmation: newPassword },
      { host: shopHost },
    );
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.equal((await t.get(`${auth}/session`, withSession(walk.session))).status, 401, 'the session ended');

    const signedIn = await login(t, 'ada@example.com', newPassword);
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
    assert.equal(signedIn.body.customer.id, walk.customer.id);
    assert.equal(signedIn.body.customer.has_password, true);
    await t.close();
  });
});
