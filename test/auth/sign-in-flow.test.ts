import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loginWithCode, requestSignInCode } from '../../src/auth/flows/code-login.js';
import { login } from '../../src/auth/flows/login.js';
import { requestPasswordReset, resetPassword } from '../../src/auth/flows/password-reset.js';
import { register } from '../../src/auth/flows/registration.js';
import { updateStore } from '../../src/store/store.js';
import { otherThan } from '../helpers/assertions.js';
import { count, verifiedAt } from '../helpers/customers.js';
import { domainOf, type Domain, email } from '../helpers/domain.js';
import { registration, useHarness } from '../helpers/harness.js';

/** Login, password reset and code login as domain calls on a real database, without the HTTP edge. */

const password = registration().password;
const newPassword = 'difference engine 1822';

async function registered(domain: Domain): Promise<string> {
  const result = await register(domain.deps, await domain.store(), registration());
  assert.ok(result.ok, JSON.stringify(result));
  return result.value.id;
}

describe('the sign-in flows', () => {
  const harness = useHarness();

  test('login with the password opens a session row; a wrong password and an unknown identity open none', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { deps, attempt } = domain;
    const id = await registered(domain);

    const wrong = await login(deps, await attempt(), email('ada@example.com'), 'not the password');
    assert.deepEqual(wrong, { ok: false, error: 'refused', customerId: id });
    const unknown = await login(deps, await attempt(), email('nobody@example.com'), password);
    assert.deepEqual(unknown, { ok: false, error: 'refused', customerId: null });
    assert.equal(await count(t, 'sessions'), 0);

    const result = await login(deps, await attempt(), email('ADA@example.com'), password);
    assert.ok(result.ok && 'customer' in result.value);
    assert.equal(result.value.customer.id, id);
    assert.equal(await count(t, 'sessions WHERE customer_id = $1 AND expires_at > $2', [id, t.clock.now()]), 1);
  });

  test('a password reset with the live code replaces the password, ends every session and verifies the customer', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { deps, store, attempt } = domain;
    const id = await registered(domain);
    assert.ok((await login(deps, await attempt(), email('ada@example.com'), password)).ok);

    await requestPasswordReset(deps, await store(), email('ada@example.com'));
    const code = await t.codeFor('ada@example.com', 'password_reset');
    const input = { identity: email('ada@example.com'), password: newPassword, password_confirmation: newPassword };
    assert.deepEqual(await resetPassword(deps, await store(), { ...input, code: otherThan(code) }), {
      ok: false,
      error: 'invalid_challenge',
    });
    assert.deepEqual(await resetPassword(deps, await store(), { ...input, code }), {
      ok: true,
      value: { customerId: id },
    });

    assert.equal(await count(t, 'sessions'), 0);
    assert.equal((await verifiedAt(t, id))?.toISOString(), t.clock.now().toISOString());
    assert.equal((await login(deps, await attempt(), email('ada@example.com'), password)).ok, false);
    assert.equal((await login(deps, await attempt(), email('ada@example.com'), newPassword)).ok, true);
  });

  test('a reset refuses a weak new password before it spends the code', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { deps, store } = domain;
    await registered(domain);
    await requestPasswordReset(deps, await store(), email('ada@example.com'));
    const code = await t.codeFor('ada@example.com', 'password_reset');
    const weak = { identity: email('ada@example.com'), code, password: 'short', password_confirmation: 'short' };
    const refused = await resetPassword(deps, await store(), weak);
    assert.ok(!refused.ok && refused.error === 'invalid', JSON.stringify(refused));
    assert.deepEqual(Object.keys(refused.fields), ['password']);
    const strong = { ...weak, password: newPassword, password_confirmation: newPassword };
    assert.equal((await resetPassword(deps, await store(), strong)).ok, true, 'the code is still live');
  });

  test('a sign-in code opens a session and verifies the customer, once', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { deps, store, attempt } = domain;
    assert.ok((await updateStore(t.db, t.clock, { signInWithCode: true })).ok);
    const id = await registered(domain);

    await requestSignInCode(deps, await store(), email('ada@example.com'));
    const code = await t.codeFor('ada@example.com', 'sign_in');
    const wrong = await loginWithCode(deps, await attempt(), email('ada@example.com'), otherThan(code));
    assert.deepEqual(wrong, { ok: false, error: 'refused', customerId: id });

    const result = await loginWithCode(deps, await attempt(), email('ada@example.com'), code);
    assert.ok(result.ok && 'customer' in result.value);
    assert.equal(result.value.customer.id, id);
    assert.equal((await verifiedAt(t, id))?.toISOString(), t.clock.now().toISOString());
    assert.equal(await count(t, 'sessions WHERE customer_id = $1', [id]), 1);
    const again = await loginWithCode(deps, await attempt(), email('ada@example.com'), code);
    assert.equal(again.ok, false, 'a code is spent once');
  });
});
