import { queueCodeIfWanted } from './queue-code.js';
import type { StoreContext } from '../store/store.js';
import { consumeChallenge } from './codes.js';
import { findCustomerByIdentity, toCustomer, type Customer } from './customers.js';
import type { AuthDeps, MessagingDeps } from './deps.js';
import type { ParsedIdentity } from './identity.js';
import { proveControl } from './ownership.js';
import { fail, ok, type Result } from './result.js';

/**
 * Marks the identity verified when `code` is its live verification code: the first proof of
 * control, which ends the sessions and passkeys from before it and keeps the password (see
 * proveControl). It opens no session. An unknown identity fails as a wrong code does:
 * invalid_challenge.
 */
export async function verifyIdentity(
  deps: Pick<AuthDeps, 'db' | 'clock' | 'keys'>,
  store: StoreContext,
  identity: ParsedIdentity,
  code: string,
): Promise<Result<Customer, 'invalid_challenge'>> {
  const { value } = identity;
  return deps.db.transaction(async (tx) => {
    const customer =
      value === null ? null : await findCustomerByIdentity(tx, store.identityMode, value, { forUpdate: true });
    const accepted = await consumeChallenge(tx, deps, customer?.id ?? null, 'verification', code);
    if (!accepted || customer === null) return fail('invalid_challenge');
    return ok(toCustomer(await proveControl(tx, deps.clock, customer, { retiresPassword: false })));
  });
}

/**
 * Sends a new verification code to an unverified account. Says nothing about whether one exists:
 * the caller answers 202 before this runs.
 */
export async function resendVerification(
  deps: MessagingDeps,
  store: StoreContext,
  identity: ParsedIdentity,
): Promise<void> {
  const { value } = identity;
  if (value === null) return;
  await queueCodeIfWanted(deps, store, value, 'verification', (customer) => customer.verified_at === null);
}
