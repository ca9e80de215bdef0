import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { StoreContext } from '../../store/store.js';
import { consumeChallengeOf, issueChallenge, voidLiveChallenges } from '../tables/codes.js';
import {
  findCustomerByIdentity,
  lockCustomer,
  switchIdentity,
  toCustomer,
  type Customer,
  type CustomerRow,
} from '../tables/customers.js';
import { channelFor, type AuthDeps, type FieldErrors, type MessagingDeps } from '../deps.js';
import { fail, failFields, ok, type Result } from '../result.js';
import { validateIdentity } from '../rules/fields.js';
import { maskIdentity } from '../rules/identity.js';
import { credentialsChanged, templateName } from '../rules/ownership.js';
import { checkCurrentPassword } from '../rules/reauthentication.js';
import { revokeCustomerSessions } from '../tables/sessions.js';

/** A signed-in customer moving their account to another email address or phone number. */

export interface IdentityChangeInput {
  email?: string | undefined;
  phone?: string | undefined;
  current_password: string;
}

/** The identity field's errors when other fields were refused already (see registrationErrors). */
export function identityChangeErrors(
  store: StoreContext,
  input: Partial<IdentityChangeInput>,
  allowedCallingCodes: readonly string[],
): FieldErrors {
  const errors: FieldErrors = {};
  validateIdentity(store, input, allowedCallingCodes, errors);
  return errors;
}

/** The new identity's normal form, or every failing field (`wrong_password` when the password is one). */
export type CheckIdentityChangeResult = Result<string, 'invalid' | 'wrong_password'>;

/**
 * The part answered to the caller: the current password (always verified, so a guess costs one
 * full verification whatever else is wrong) and the new identity's form. Nothing here looks at
 * whether the new identity is taken; that happens behind the 202 (requestIdentityChange).
 */
export async function checkIdentityChange(
  deps: Pick<AuthDeps, 'hasher' | 'allowedCallingCodes'>,
  store: StoreContext,
  customer: CustomerRow,
  input: IdentityChangeInput,
): Promise<CheckIdentityChangeResult> {
  const errors: FieldErrors = {};
  const matches = await checkCurrentPassword(deps, customer, input.current_password, errors);
  const value = validateIdentity(store, input, deps.allowedCallingCodes, errors);
  if (Object.keys(errors).length > 0) return failFields(matches ? 'invalid' : 'wrong_password', errors);
  return ok(value);
}

/**
 * Behind the 202: a code to the new identity when it is free, or, when an account already uses
 * it, a message telling that identity so, and no code. The caller sees neither.
 */
export async function requestIdentityChange(
  deps: MessagingDeps,
  store: StoreContext,
  customerId: string,
  newIdentityValue: string,
): Promise<void> {
  const queued = await deps.db.transaction(async (tx) => {
    const customer = await lockCustomer(tx, { id: customerId });
    if (customer === null) return false;
    const channel = channelFor(store.identityMode);
    // Voided whether or not the new identity is free: were a taken one to leave the earlier code
    // alive, confirming that code afterwards would tell the caller which identities have accounts.
    await voidLiveChallenges(tx, deps.clock, customer.id, 'identity_change');
    const owner = await findCustomerByIdentity(tx, { mode: store.identityMode, value: newIdentityValue });
    if (owner !== null) {
      await enqueueMessage(tx, deps, {
        channel,
        purpose: 'identity_taken',
        to: newIdentityValue,
        // About the account that holds the address, not the one asking: it goes with the owner's.
        customerId: owner.id,
        storeName: store.name,
        branding: store.mailBranding,
        customerName: templateName(owner),
        language: messageLanguage(store, owner.locale),
      });
      return true;
    }
    const challenge = await issueChallenge(tx, deps, customer.id, 'identity_change', newIdentityValue);
    await enqueueMessage(tx, deps, {
      channel,
      purpose: 'identity_change',
      to: newIdentityValue,
      customerId: customer.id,
      storeName: store.name,
      branding: store.mailBranding,
      language: messageLanguage(store, customer.locale),
      code: { value: challenge.code, expiresAt: challenge.expiresAt },
      challengeId: challenge.challengeId,
    });
    return true;
  });
  if (queued) deps.messagesQueued();
}

export type ConfirmIdentityChangeResult = Result<
  Customer,
  'invalid_challenge' | 'identity_unavailable' | 'unauthenticated'
>;

/**
 * Switches the identity with a live change code, in one transaction with the customer row locked:
 * the code spent, the new identity set and verified now, every other session ended, every other
 * live code voided, and a notice to the old identity naming the new one masked. The unique index
 * on identities decides between two customers confirming the same new identity (or a registration
 * of it): one switch wins, and the other answer is identity_unavailable with its code spent.
 */
export async function confirmIdentityChange(
  deps: MessagingDeps,
  store: StoreContext,
  customerId: string,
  sessionId: string,
  code: string,
): Promise<ConfirmIdentityChangeResult> {
  const result = await deps.db.transaction(async (tx): Promise<ConfirmIdentityChangeResult> => {
    const locked = await lockCustomer(tx, { id: customerId });
    const consumed = await consumeChallengeOf(tx, deps, locked?.id ?? null, 'identity_change', code);
    if (locked === null) return fail('unauthenticated');
    if (consumed === null || consumed.newIdentityValue === null) return fail('invalid_challenge');
    const now = deps.clock.now();
    const switched = await switchIdentity(tx, locked.id, store.identityMode, consumed.newIdentityValue, now);
    if (switched === null) return fail('identity_unavailable');
    await revokeCustomerSessions(tx, deps.clock, locked.id, sessionId);
    // Codes sent to the old identity (a reset, a sign-in code) must not act on the new one.
    await credentialsChanged(tx, deps.clock, locked.id);
    await enqueueMessage(tx, deps, {
      channel: channelFor(locked.identity_type),
      purpose: 'identity_changed',
      to: locked.identity_value,
      customerId: locked.id,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(locked),
      language: messageLanguage(store, locked.locale),
      maskedIdentity: maskIdentity(store.identityMode, consumed.newIdentityValue),
    });
    await recordCustomerEvent(tx, deps.clock, {
      type: 'customer.identity_changed',
      customerId: locked.id,
      data: { previous_identity: { type: locked.identity_type, value: locked.identity_value } },
    });
    return ok(toCustomer(switched));
  });
  if (result.ok) {
    deps.messagesQueued();
    deps.eventsRecorded();
  }
  return result;
}
