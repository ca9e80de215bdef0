import type { Clock } from '../../clock.js';
import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import type { StoreQueryable } from '../../storage/database.js';
import { voidLiveChallenges } from '../tables/codes.js';
import { markProven, type CustomerRow } from '../tables/customers.js';
import { deleteCustomerPasskeys } from '../tables/passkeys.js';
import { deleteCustomerProviderLinks } from '../tables/provider-links.js';
import { deleteSecondStep } from '../tables/second-steps.js';
import { deleteCustomerSessions } from '../tables/sessions.js';

/**
 * Who owns an account. Until its identity is proven (verified_at null) an account is only a claim:
 * anyone can register someone else's address and wait for its owner (pre-account hijacking). So
 * nothing lasting hangs on an unproven account, and the first proof of control of the identity,
 * whichever way it comes, evicts whatever the claimant set up before it. Every way in that proves
 * the identity goes through proveControl, and every change of a credential or of the identity
 * through credentialsChanged, in the transaction that makes the change with the customer row locked.
 */

/**
 * How the identity was proven. `retiresPassword`: a proof that sets no password of its own (a
 * sign-in code) also ends the password set before it; a verification code keeps it, since the
 * usual registrant verifies and then signs in with the password they chose, and a reset replaces it.
 */
export interface Proof {
  retiresPassword: boolean;
  /** An import announces its customers once, in its `customer.imported`, not one `customer.verified` each. */
  silent?: boolean;
}

/**
 * Records a proof of control. On an account already proven it changes nothing. On the first: every
 * session, passkey, provider link and second step from before it ends, every other live code is voided, verified_at is set
 * and, for a proof that sets no password, the password is retired (a new credential version),
 * and a `customer.verified` is written for the store's endpoints (the caller nudges their
 * dispatcher once it commits, see `isFirstProof`). The caller holds the customer row locked and
 * opens any new session after this, against the version it returns.
 */
export async function proveControl(
  tx: StoreQueryable,
  clock: Clock,
  customer: CustomerRow,
  proof: Proof,
): Promise<CustomerRow> {
  if (customer.verified_at !== null) return customer;
  await deleteCustomerSessions(tx, customer.id);
  await deleteCustomerPasskeys(tx, customer.id);
  await deleteCustomerProviderLinks(tx, customer.id);
  await deleteSecondStep(tx, customer.id);
  await credentialsChanged(tx, clock, customer.id);
  const proven = await markProven(tx, customer.id, clock.now(), { retirePassword: proof.retiresPassword });
  if (proof.silent !== true)
    await recordCustomerEvent(tx, clock, { type: 'customer.verified', customerId: customer.id, data: {} });
  return proven;
}

/** Whether proveControl will take this account's first proof (and write its event). */
export function isFirstProof(customer: Pick<CustomerRow, 'verified_at'>): boolean {
  return customer.verified_at === null;
}

/**
 * A credential or the identity changed (reset, password change, identity change confirmed, first
 * proof of control): no code sent before the change may act after it, whatever its purpose or
 * the address it went to.
 */
export async function credentialsChanged(tx: StoreQueryable, clock: Clock, customerId: string): Promise<void> {
  await voidLiveChallenges(tx, clock, customerId);
}

/** Whether the account may take a lasting way in (a passkey, a provider link): only once proven. */
export function isProven(customer: Pick<CustomerRow, 'verified_at'>): boolean {
  return customer.verified_at !== null;
}

/**
 * The name a store's template may show in a notice: the customer's once their identity was proven
 * before it, else none (a claimant's chosen text must not reach the address's owner).
 */
export function templateName(customer: Pick<CustomerRow, 'name' | 'verified_at'>): string | null {
  return isProven(customer) ? customer.name : null;
}
