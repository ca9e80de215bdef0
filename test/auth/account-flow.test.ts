import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { changePassword, changeProfile } from '../../src/auth/flows/account.js';
import { deleteAccountWithPassword, eraseAccount, exportAccount } from '../../src/auth/flows/erasure.js';
import { checkIdentityChange, confirmIdentityChange } from '../../src/auth/flows/identity-change.js';
import { login } from '../../src/auth/flows/login.js';
import { register } from '../../src/auth/flows/registration.js';
import { wrongCurrentPassword } from '../../src/auth/rules/reauthentication.js';
import { findCustomerById, type CustomerRow } from '../../src/auth/tables/customers.js';
import { revokeCustomerSession } from '../../src/auth/tables/sessions.js';
import { count } from '../helpers/customers.js';
import { domainOf, type Domain, email } from '../helpers/domain.js';
import { registration, useHarness, type TestApp } from '../helpers/harness.js';

/** The signed-in customer's flows as domain calls: each failure is a kind, with its fields when it names any. */

const password = registration().password;
const newPassword = 'difference engine 1822';

async function signedIn(t: TestApp, domain: Domain): Promise<{ customer: CustomerRow; sessionId: string }> {
  const registered = await register(domain.deps, await domain.store(), registration());
  assert.ok(registered.ok, JSON.stringify(registered));
  const opened = await login(domain.deps, await domain.attempt(), email('ada@example.com'), password);
  assert.ok(opened.ok && 'sessionId' in opened.value, JSON.stringify(opened));
  const customer = await findCustomerById(domain.deps.db, registered.value.id);
  assert.ok(customer !== null);
  return { customer, sessionId: opened.value.sessionId };
}

describe('the account flows', () => {
  const harness = useHarness();

  test('a password change with a wrong current password is wrong_password and names every failing field', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { customer, sessionId } = await signedIn(t, domain);
    const input = { current_password: 'not the password 1', password: 'short', password_confirmation: 'short' };
    const refused = await changePassword(domain.deps, await domain.store(), { customer, sessionId }, input);
    assert.ok(!refused.ok && refused.error === 'wrong_password', JSON.stringify(refused));
    assert.deepEqual(Object.keys(refused.fields).sort(), ['current_password', 'password']);
    assert.deepEqual(refused.fields['current_password'], [wrongCurrentPassword]);
  });

  test('a password change with the right current password and a weak new one is invalid, naming the new one only', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { customer, sessionId } = await signedIn(t, domain);
    const input = { current_password: password, password: 'short', password_confirmation: 'short' };
    const refused = await changePassword(domain.deps, await domain.store(), { customer, sessionId }, input);
    assert.ok(!refused.ok && refused.error === 'invalid', JSON.stringify(refused));
    assert.deepEqual(Object.keys(refused.fields), ['password']);
  });

  test('a password change opens a new session for the caller, and one whose session ended is unauthenticated', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { customer, sessionId } = await signedIn(t, domain);
    const input = { current_password: password, password: newPassword, password_confirmation: newPassword };
    const changed = await changePassword(domain.deps, await domain.store(), { customer, sessionId }, input);
    assert.ok(changed.ok, JSON.stringify(changed));
    assert.notEqual(changed.value.sessionId, sessionId);
    const current = await findCustomerById(domain.deps.db, customer.id);
    assert.ok(current !== null);
    const again = {
      current_password: newPassword,
      password: 'babbage engine 1871',
      password_confirmation: 'babbage engine 1871',
    };
    assert.deepEqual(await changePassword(domain.deps, await domain.store(), { customer: current, sessionId }, again), {
      ok: false,
      error: 'unauthenticated',
    });
  });

  test('a name change is invalid for a blank name and gives the customer for a good one', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { customer } = await signedIn(t, domain);
    const blank = await changeProfile(domain.deps, await domain.store(), customer.id, { name: '   ' });
    assert.ok(!blank.ok && blank.error === 'invalid', JSON.stringify(blank));
    assert.deepEqual(Object.keys(blank.fields), ['name']);
    const renamed = await changeProfile(domain.deps, await domain.store(), customer.id, { name: ' Augusta Ada King ' });
    assert.ok(renamed.ok, JSON.stringify(renamed));
    assert.equal(renamed.value.name, 'Augusta Ada King');
  });

  test('an identity change is wrong_password with a wrong password, invalid with a bad identity, and a wrong code is invalid_challenge', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { customer, sessionId } = await signedIn(t, domain);
    const store = await domain.store();
    const wrong = await checkIdentityChange(domain.deps, store, customer, {
      email: 'ada.new@example.org',
      current_password: 'not the password 1',
    });
    assert.ok(!wrong.ok && wrong.error === 'wrong_password', JSON.stringify(wrong));
    assert.deepEqual(Object.keys(wrong.fields), ['current_password']);
    const malformed = await checkIdentityChange(domain.deps, store, customer, {
      email: 'not an email',
      current_password: password,
    });
    assert.ok(!malformed.ok && malformed.error === 'invalid', JSON.stringify(malformed));
    assert.deepEqual(Object.keys(malformed.fields), ['email']);
    const checked = await checkIdentityChange(domain.deps, store, customer, {
      email: ' Ada.New@Example.org ',
      current_password: password,
    });
    assert.deepEqual(checked, { ok: true, value: 'ada.new@example.org' });
    assert.deepEqual(await confirmIdentityChange(domain.deps, store, customer.id, sessionId, '000000'), {
      ok: false,
      error: 'invalid_challenge',
    });
  });

  test('deleting with a wrong password is wrong_password on current_password and erases nothing; the account then goes once', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { customer, sessionId } = await signedIn(t, domain);
    const store = await domain.store();
    const exported = await exportAccount(domain.deps, customer.id, sessionId);
    assert.ok(exported.ok, JSON.stringify(exported));
    assert.equal(exported.value.customer.id, customer.id);

    assert.deepEqual(await deleteAccountWithPassword(domain.deps, store, customer, 'not the password 1'), {
      ok: false,
      error: 'wrong_password',
      fields: { current_password: [wrongCurrentPassword] },
    });
    assert.equal(await count(t, 'customers'), 1);
    assert.deepEqual(await deleteAccountWithPassword(domain.deps, store, customer, password), {
      ok: true,
      value: undefined,
    });
    assert.equal(await count(t, 'customers'), 0);
    assert.deepEqual(await eraseAccount(domain.deps, store, customer.id), { ok: false, error: 'gone' });
    assert.deepEqual(await exportAccount(domain.deps, customer.id, sessionId), { ok: false, error: 'gone' });
  });

  test('revoking a session that is not one of the customer’s live ones is not_found', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const { customer, sessionId } = await signedIn(t, domain);
    for (const handle of ['not a handle', '00000000-0000-4000-8000-000000000000']) {
      assert.deepEqual(await revokeCustomerSession(domain.deps.db, t.clock, customer.id, handle, sessionId), {
        ok: false,
        error: 'not_found',
      });
    }
    const [row] = await t.db.query<{ public_id: string }>(
      'SELECT public_id::text AS public_id FROM sessions WHERE customer_id = $1',
      [customer.id],
    );
    assert.ok(row !== undefined);
    assert.deepEqual(await revokeCustomerSession(domain.deps.db, t.clock, customer.id, row.public_id, sessionId), {
      ok: true,
      value: { current: true },
    });
  });
});
