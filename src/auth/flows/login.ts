import type { AuthDeps, MessagingDeps } from '../deps.js';
import { fail } from '../result.js';
import { blockOn } from '../rules/blocking.js';
import { displayIdentity, type ParsedIdentity } from '../rules/identity.js';
import {
  asksSecondStep,
  completeSignIn,
  deviceKeyOf,
  holdForSecondStep,
  type LoginResult,
  type SignInAttempt,
} from '../rules/sign-in.js';
import { findCustomerByIdentity, upgradePasswordHash } from '../tables/customers.js';
import { importedFacts } from '../tables/imported-customers.js';
import { createSession } from '../tables/sessions.js';

/**
 * Checks the password and opens a session. Unknown identity, wrong password and (on a store that
 * requires it) an unverified account all do one full hash verification and fail alike, so the
 * three cases cannot be told apart by answer or by time.
 */
export async function login(
  deps: MessagingDeps & Pick<AuthDeps, 'hasher' | 'passwordHook' | 'breachedPasswords' | 'legacyPasswordBreached'>,
  attempt: SignInAttempt,
  identity: ParsedIdentity,
  password: string,
): Promise<LoginResult> {
  const customer = await findCustomerByIdentity(deps.db, identity);
  if (customer === null) {
    await deps.hasher.verifyDummy(password);
    return fail('refused', { customerId: null });
  }
  // An account without a password that an import made: the store's old system may know it. Asked,
  // or found not to be asked, beside the same argon2 check an unknown identity makes.
  const passwordMatches =
    customer.password_hash === null
      ? await deps.hasher.verifyElsewhere(async () => {
          const facts = await importedFacts(deps.db, customer.id);
          const ask = facts.imported ? await deps.passwordHook(deps.db) : null;
          if (ask === null) return undefined;
          return ask({
            identity: displayIdentity(customer.identity_type, customer.identity_value),
            password,
            external_id: facts.external_id,
          });
        }, password)
      : await deps.hasher.verify(customer.password_hash, password);
  if (!passwordMatches || (attempt.store.verificationRequired && customer.verified_at === null)) {
    return fail('refused', { customerId: customer.id });
  }
  const block = blockOn(customer, deps.clock.now());
  if (block !== null) return fail('blocked', { customerId: customer.id, until: block.until });

  const passwordHash = customer.password_hash;
  const rehashed = passwordHash === null || deps.hasher.needsRehash(passwordHash);
  if (passwordHash === null) {
    // The old system vouched for it: from now on it is this service's password, the hook's no longer.
    await upgradePasswordHash(deps.db, customer.id, null, await deps.hasher.hash(password));
  } else if (rehashed) {
    // The same password under new parameters: the credential version stays, and so do sessions.
    const upgraded = await deps.hasher.hash(password);
    await upgradePasswordHash(deps.db, customer.id, passwordHash, upgraded);
  }
  // A password re-hashed here (an import's, most often: another system took it, no corpus saw it) is
  // checked once, after it proved right, so a wrong guess is never timed by it. It is the customer's
  // own password and it opened the account: the sign-in goes on, and the deployment is told.
  if (rehashed && (await deps.breachedPasswords.isBreached(password))) deps.legacyPasswordBreached(customer.id);
  if (asksSecondStep(attempt.store, customer)) return holdForSecondStep(deps.db, deps.clock, customer, 'password');
  // One statement opens the session, ends the one the request carried and refreshes a known
  // device; no transaction is needed around it.
  const device = deviceKeyOf(attempt.client);
  const opened = await createSession(deps.db, deps.clock, {
    customerId: customer.id,
    credentialVersion: customer.credential_version,
    client: attempt.client,
    replaces: attempt.previousSessionId,
    knownDevice: device,
    signedIn: 'password',
  });
  // The password was changed while it was being checked: the one given is no longer the password.
  if (opened === null) return fail('refused', { customerId: customer.id });
  // After the session, outside its statement: the notice is a few more queries on the success path
  // only (a wrong password never reaches here, so its timing is untouched), and a failure to queue
  // it must not turn a correct password into a refused login. From a known device it costs none.
  return completeSignIn(deps, attempt.store, { customer, device, ...opened });
}
