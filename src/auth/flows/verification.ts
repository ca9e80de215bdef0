import { queueCodeIfWanted } from '../rules/queue-code.js';
import type { StoreContext } from '../../store/store.js';
import { consumeChallenge } from '../tables/codes.js';
import { lockCustomer, toCustomer, type Customer } from '../tables/customers.js';
import type { AuthDeps, MessagingDeps } from '../deps.js';
import type { ParsedIdentity } from '../rules/identity.js';
import { isFirstProof, proveControl } from '../rules/ownership.js';
import { fail, ok, type Result } from '../result.js';

/**
 * Marks the identity verified when `code` is its live verification code: the first proof of
 * control, which ends the sessions and passkeys from before it and keeps the password (see
 * proveControl). It opens no session. An unknown identity fails as a wrong code does:
 * invalid_challenge.
 */
export async function verifyIdentity(
  deps: Pick<AuthDeps, 'db' | 'clock' | 'keys' | 'eventsRecorded'>,
  identity: ParsedIdentity,
  code: string,
): Promise<Result<Customer, 'invalid_challenge'>> {
  let firstProof = false;
  const result = await deps.db.transaction(async (tx) => {
    const customer = await lockCustomer(tx, identity);
    const accepted = await consumeChallenge(tx, deps, customer?.id ?? null, 'verification', code);
    if (!accepted || customer === null) return fail('invalid_challenge');
    firstProof = isFirstProof(customer);
    return ok(toCustomer(await proveControl(tx, deps.clock, customer, { retiresPassword: false })));
  });
  if (result.ok && firstProof) deps.eventsRecorded();
  return result;
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
  await queueCodeIfWanted(deps, store, identity, 'verification', (customer) => customer.verified_at === null);
}
