import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore, type StoreChanges } from '../../src/store/store.js';
import { auth, registeredCustomer, useHarness, type TestApp } from '../helpers/harness.js';
import { count, resetWithCode, sessionCookie, verifiedAt, withSession, works } from '../helpers/customers.js';
import {
  addPasskey,
  cookieOf,
  registrationOptions,
  signedInCustomer,
  signInWithPasskey,
  verifyIdentity,
} from '../helpers/passkeys.js';
import { SoftAuthenticator } from '../helpers/webauthn.js';

/**
 * Who owns an account (pre-account hijacking, Sudhodanan and Paverd 2022). A squatter registers the
 * victim's address before the victim does and sets up what would outlive the victim's arrival; the
 * victim then proves the address. What applies here without sign-in providers: the unexpired
 * session attack, the trojan identifier (a passkey as the second way in), the unexpired identity
 * change, and a passkey sign-in standing in for proof. The classic-federated merge and the
 * non-verifying provider attacks need a provider and are covered with providers.
 */

const victim = 'victim@example.com';
const squatterPassword = 'squatter password 99';

async function settings(t: TestApp, changes: StoreChanges): Promise<void> {
  assert.ok((await updateStore(t.db, t.clock, changes)).ok);
  t.services.store.invalidate();
}

function login(t: TestApp, identity: string, password: string) {
  return t.post(`${auth}/login`, { identity, password });
}

/** The squatter registers the victim's address with their own password and, where the store lets them, signs in. */
async function squat(t: TestApp) {
  const claim = await registeredCustomer(t, {
    email: victim,
    password: squatterPassword,
    password_confirmation: squatterPassword,
  });
  const signedIn = await login(t, victim, squatterPassword);
  return { ...claim, session: signedIn.status === 200 ? cookieOf(signedIn, sessionCookie) : undefined };
}

/** The victim signs in with a code sent to their address: the first proof of control. */
async function victimSignsInWithCode(t: TestApp) {
  assert.equal((await t.post(`${auth}/code/request`, { identity: victim })).status, 202);
  const code = await t.codeFor(victim, 'sign_in');
  const reply = await t.post(`${auth}/code/login`, { identity: victim, code });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return cookieOf(reply, sessionCookie)!;
}

/** A passkey planted while the account was unproven, as could be done before proof of control was required. */
async function plantedPasskey(t: TestApp, customerId: string) {
  await t.db.query('UPDATE customers SET verified_at = now() WHERE id = $1', [customerId]);
  const squatter = await login(t, victim, squatterPassword);
  const authenticator = new SoftAuthenticator();
  const session = cookieOf(squatter, sessionCookie)!;
  assert.equal((await addPasskey(t, { session, password: squatterPassword }, authenticator)).status, 201);
  await t.db.query('UPDATE customers SET verified_at = NULL WHERE id = $1', [customerId]);
  return authenticator;
}

describe('who owns an account', () => {
  const harness = useHarness();

  describe('a sign-in code is the first proof of control', () => {
    test("the squatter's session ends and their password no longer signs in", async () => {
      const t = await harness.start();
      await settings(t, { signInWithCode: true });
      const claim = await squat(t);
      assert.ok(claim.session && (await works(t, claim.session)));

      const session = await victimSignsInWithCode(t);
      assert.equal(await works(t, claim.session), false, "the squatter's session ended");
      assert.equal((await login(t, victim, squatterPassword)).status, 401, "the squatter's password is retired");
      assert.ok(await works(t, session), "the owner's new session stands");
      assert.ok(await verifiedAt(t, claim.id));
    });

    test('on a store that requires verification the retired password stays refused too', async () => {
      const t = await harness.start();
      await settings(t, { signInWithCode: true, verificationRequired: true });
      const claim = await squat(t);
      assert.equal(claim.session, undefined, 'an unproven account does not sign in here');
      await victimSignsInWithCode(t);
      assert.equal((await login(t, victim, squatterPassword)).status, 401);
    });

    test('a retired password is refused as an unknown account is: the same 401', async () => {
      const t = await harness.start();
      await settings(t, { signInWithCode: true });
      await squat(t);
      await victimSignsInWithCode(t);
      const retired = await login(t, victim, squatterPassword);
      const unknown = await login(t, 'nobody@example.com', squatterPassword);
      assert.equal(retired.status, 401);
      assert.deepEqual({ ...retired.body, request_id: null }, { ...unknown.body, request_id: null });
    });

    test('on an account already proven a code sign-in keeps the password and the other sessions', async () => {
      const t = await harness.start();
      await settings(t, { signInWithCode: true });
      const owner = await signedInCustomer(t, { email: victim });
      await victimSignsInWithCode(t);
      assert.ok(await works(t, owner.session));
      assert.equal((await login(t, victim, owner.password)).status, 200);
    });

    test('the password reset and verification codes sent before it die with it', async () => {
      const t = await harness.start();
      await settings(t, { signInWithCode: true });
      await squat(t);
      assert.equal((await t.post(`${auth}/password/forgot`, { identity: victim })).status, 202);
      const reset = await t.codeFor(victim, 'password_reset');
      const verification = await t.codeFor(victim, 'verification');
      await victimSignsInWithCode(t);
      const password = 'the owners own 2024';
      const replay = await t.post(`${auth}/password/reset`, {
        identity: victim,
        code: reset,
        password,
        password_confirmation: password,
      });
      assert.equal(replay.status, 422);
      assert.equal(replay.body.code, 'invalid_identity_challenge');
      assert.equal((await t.post(`${auth}/verify`, { identity: victim, code: verification })).status, 422);
    });
  });

  describe('passkeys', () => {
    test('an unproven account cannot add one: 403 identity_unverified, options and registration alike', async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      const claim = await squat(t);
      assert.ok(claim.session);
      const options = await t.post(`${auth}/passkeys/register/options`, undefined, withSession(claim.session));
      assert.equal(options.status, 403);
      assert.equal(options.body.code, 'identity_unverified');
      assert.equal(await count(t, 'passkey_challenges'), 0);
      assert.equal(await count(t, 'passkeys'), 0);
    });

    test('adding one asks for the current password: missing or wrong is a 422 on current_password', async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      const customer = await signedInCustomer(t);
      for (const password of [undefined, 'not the password 1']) {
        const reply = await addPasskey(t, { session: customer.session, password }, new SoftAuthenticator());
        assert.equal(reply.status, 422, JSON.stringify(reply.body));
        assert.deepEqual(Object.keys(reply.body.errors), ['current_password']);
      }
      assert.equal(await count(t, 'passkeys'), 0);
      assert.equal((await addPasskey(t, customer, new SoftAuthenticator())).status, 201);
    });

    test('a password change between the options and the registration refuses the passkey', async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      const customer = await signedInCustomer(t);
      const { options, challenge } = await registrationOptions(t, customer.session);
      const credential = new SoftAuthenticator().register(options);
      // The same password set again from another request: the credential version moves on.
      const other = await login(t, customer.identity, customer.password);
      const next = 'a brand new secret 7';
      const changed = await t.post(
        `${auth}/password/change`,
        { current_password: customer.password, password: next, password_confirmation: next },
        withSession(cookieOf(other, sessionCookie)!),
      );
      assert.equal(changed.status, 200);
      const reply = await t.post(
        `${auth}/passkeys/register`,
        { credential, current_password: next },
        { cookie: `${sessionCookie}=${customer.session}; storefront_passkey_challenge=${challenge}` },
      );
      assert.equal(reply.status, 401, 'the password change ended the session');
      assert.equal(await count(t, 'passkeys'), 0);
    });

    test("the owner's reset removes a passkey planted while the account was unproven", async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      const claim = await squat(t);
      const authenticator = await plantedPasskey(t, claim.id);
      const { reply } = await resetWithCode(t, victim, 'the owners own 2024');
      assert.equal(reply.status, 200);
      assert.equal(await count(t, 'passkeys'), 0);
      assert.equal((await signInWithPasskey(t, authenticator)).status, 401);
    });

    test('verifying the address ends the sessions and passkeys from before it, and keeps the password', async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      const claim = await squat(t);
      const authenticator = await plantedPasskey(t, claim.id);
      assert.ok(claim.session && (await works(t, claim.session)));
      await verifyIdentity(t, victim);
      assert.equal(await works(t, claim.session), false);
      assert.equal((await signInWithPasskey(t, authenticator)).status, 401);
      assert.equal((await login(t, victim, squatterPassword)).status, 200, 'verify is not a password proof');
    });

    test('a passkey sign-in proves the authenticator, not the identity: verified_at stays null', async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      const claim = await squat(t);
      const authenticator = await plantedPasskey(t, claim.id);
      const reply = await signInWithPasskey(t, authenticator);
      assert.equal(reply.status, 200);
      assert.equal(reply.body.customer.identity.verified_at, null);
      assert.equal(await verifiedAt(t, claim.id), null);
    });

    test('on a store that requires verification an unproven account cannot sign in with a passkey, nor after it with its password', async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      const claim = await squat(t);
      const authenticator = await plantedPasskey(t, claim.id);
      await settings(t, { verificationRequired: true });
      const passkey = await signInWithPasskey(t, authenticator);
      assert.equal(passkey.status, 401);
      assert.equal(passkey.body.code, 'unauthenticated');
      assert.equal((await login(t, victim, squatterPassword)).status, 401);
      assert.equal(await verifiedAt(t, claim.id), null);
    });
  });

  describe('codes end with the credential or identity they were sent for', () => {
    const newAddress = 'ada.new@example.com';

    async function movedAccount(t: TestApp) {
      const customer = await signedInCustomer(t);
      const change = await t.post(
        `${auth}/identity/change`,
        { email: newAddress, current_password: customer.password },
        withSession(customer.session),
      );
      assert.equal(change.status, 202);
      return { ...customer, changeCode: await t.codeFor(newAddress, 'identity_change') };
    }

    async function confirm(t: TestApp, session: string, code: string) {
      return t.post(`${auth}/identity/confirm`, { code }, withSession(session));
    }

    test('a reset code sent to the old address does nothing for the new one', async () => {
      const t = await harness.start();
      const customer = await movedAccount(t);
      assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
      const reset = await t.codeFor(customer.identity, 'password_reset');
      assert.equal((await confirm(t, customer.session, customer.changeCode)).status, 200);
      const password = 'taken over 12345';
      const reply = await t.post(`${auth}/password/reset`, {
        identity: newAddress,
        code: reset,
        password,
        password_confirmation: password,
      });
      assert.equal(reply.status, 422);
      assert.equal(reply.body.code, 'invalid_identity_challenge');
      assert.equal((await login(t, newAddress, password)).status, 401);
    });

    test('a sign-in code sent to the old address does nothing for the new one', async () => {
      const t = await harness.start();
      await settings(t, { signInWithCode: true });
      const customer = await movedAccount(t);
      assert.equal((await t.post(`${auth}/code/request`, { identity: customer.identity })).status, 202);
      const code = await t.codeFor(customer.identity, 'sign_in');
      assert.equal((await confirm(t, customer.session, customer.changeCode)).status, 200);
      const reply = await t.post(`${auth}/code/login`, { identity: newAddress, code });
      assert.equal(reply.status, 422);
      assert.equal(reply.body.code, 'invalid_identity_challenge');
    });

    test('a password change voids a pending identity change, even confirmed from a passkey session', async () => {
      const t = await harness.start();
      await settings(t, { passkeys: true });
      // The attacker knows the password and holds a session: they add a passkey and ask to move the account.
      const customer = await signedInCustomer(t);
      const authenticator = new SoftAuthenticator();
      assert.equal((await addPasskey(t, customer, authenticator)).status, 201);
      const change = await t.post(
        `${auth}/identity/change`,
        { email: 'attacker@example.com', current_password: customer.password },
        withSession(customer.session),
      );
      assert.equal(change.status, 202);
      const code = await t.codeFor('attacker@example.com', 'identity_change');
      // The owner changes the password from their own session.
      const owner = await login(t, customer.identity, customer.password);
      const next = 'owner takes it back 1';
      const changed = await t.post(
        `${auth}/password/change`,
        { current_password: customer.password, password: next, password_confirmation: next },
        withSession(cookieOf(owner, sessionCookie)!),
      );
      assert.equal(changed.status, 200);
      const again = await signInWithPasskey(t, authenticator);
      assert.equal(again.status, 200);
      const reply = await confirm(t, cookieOf(again, sessionCookie)!, code);
      assert.equal(reply.status, 422);
      assert.equal(reply.body.code, 'invalid_identity_challenge');
      const [row] = await t.db.query<{ identity_value: string }>('SELECT identity_value FROM customers');
      assert.equal(row?.identity_value, customer.identity);
    });

    test('a reset voids a pending identity change and a sign-in code', async () => {
      const t = await harness.start();
      await settings(t, { signInWithCode: true });
      const customer = await movedAccount(t);
      assert.equal((await t.post(`${auth}/code/request`, { identity: customer.identity })).status, 202);
      const signInCode = await t.codeFor(customer.identity, 'sign_in');
      const { reply } = await resetWithCode(t, customer.identity, 'owner takes it back 1');
      assert.equal(reply.status, 200);
      const session = cookieOf(await login(t, customer.identity, 'owner takes it back 1'), sessionCookie)!;
      assert.equal((await confirm(t, session, customer.changeCode)).status, 422);
      assert.equal((await t.post(`${auth}/code/login`, { identity: customer.identity, code: signInCode })).status, 422);
    });

    test('asking to move to a taken identity voids the earlier change code as a free one does', async () => {
      const t = await harness.start();
      await registeredCustomer(t, { email: 'taken@example.com' });
      for (const target of ['free@example.com', 'taken@example.com']) {
        const customer = await signedInCustomer(t, { email: `asker.${target}` });
        const first = await t.post(
          `${auth}/identity/change`,
          { email: `first.${target}`, current_password: customer.password },
          withSession(customer.session),
        );
        assert.equal(first.status, 202);
        const code = await t.codeFor(`first.${target}`, 'identity_change');
        const second = await t.post(
          `${auth}/identity/change`,
          { email: target, current_password: customer.password },
          withSession(customer.session),
        );
        assert.equal(second.status, 202);
        await t.deliver();
        const reply = await confirm(t, customer.session, code);
        assert.equal(reply.status, 422, `after asking for ${target}`);
        assert.equal(reply.body.code, 'invalid_identity_challenge');
      }
    });
  });
});
