import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import { queueCodeIfWanted } from '../rules/queue-code.js';
import type { StoreContext } from '../../store/store.js';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import { consumeChallenge } from '../tables/codes.js';
import { lockCustomer, replacePassword } from '../tables/customers.js';
import { channelFor, type AuthDeps, type FieldErrors, type MessagingDeps } from '../deps.js';
import type { ParsedIdentity } from '../rules/identity.js';
import { validateNewPassword } from '../rules/fields.js';
import { validateNotBreached } from '../rules/breached.js';
import { fail, failFields, ok, type Result } from '../result.js';
import { deleteCustomerSessions } from '../tables/sessions.js';
import { credentialsChanged, proveControl, templateName } from '../rules/ownership.js';

/** Sends a reset code when the account exists. The caller answers 202 before this runs. */
export async function requestPasswordReset(
  deps: MessagingDeps,
  store: StoreContext,
  identity: ParsedIdentity,
): Promise<void> {
  await queueCodeIfWanted(deps, store, identity, 'password_reset', () => true);
}

export interface ResetPasswordInput {
  identity: ParsedIdentity;
  code: string;
  password: string;
  password_confirmation: string;
}

export type ResetPasswordResult = Result<{ customerId: string }, 'invalid' | 'invalid_challenge'>;

/**
 * Sets a new password with a reset code. The password is checked (and hashed) before the code is
 * spent; then code, password, sign-out of every session, verification and the notice are one
 * transaction. It never signs anyone in.
 */
export async function resetPassword(
  deps: MessagingDeps & Pick<AuthDeps, 'hasher' | 'breachedPasswords'>,
  store: StoreContext,
  input: ResetPasswordInput,
): Promise<ResetPasswordResult> {
  const errors: FieldErrors = {};
  validateNewPassword(input.password, input.password_confirmation, errors);
  await validateNotBreached(deps.breachedPasswords, input.password, errors);
  if (Object.keys(errors).length > 0) return failFields('invalid', errors);

  const passwordHash = await deps.hasher.hash(input.password);
  const result = await deps.db.transaction(async (tx): Promise<ResetPasswordResult> => {
    const customer = await lockCustomer(tx, input.identity);
    const accepted = await consumeChallenge(tx, deps, customer?.id ?? null, 'password_reset', input.code);
    if (!accepted || customer === null) return fail('invalid_challenge');
    const now = deps.clock.now();
    // The code proves control of the identity: on an unproven account that is the first proof,
    // and the passkeys set up before it end with it. The new credential version stops logins that
    // checked the old password from opening a session (see createSession); the row lock taken
    // above makes them wait for this commit. No code sent before the change acts after it.
    await proveControl(tx, deps.clock, customer, { retiresPassword: false });
    await replacePassword(tx, customer.id, passwordHash, now);
    await deleteCustomerSessions(tx, customer.id);
    await credentialsChanged(tx, deps.clock, customer.id);
    await enqueueMessage(tx, deps, {
      channel: channelFor(store.identityMode),
      purpose: 'password_changed',
      to: customer.identity_value,
      customerId: customer.id,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(customer),
      language: messageLanguage(store, customer.locale),
    });
    await recordCustomerEvent(tx, deps.clock, {
      type: 'customer.password_changed',
      customerId: customer.id,
      data: { how: 'reset' },
    });
    return ok({ customerId: customer.id });
  });
  if (result.ok) {
    deps.messagesQueued();
    deps.eventsRecorded();
  }
  return result;
}
