import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { StoreContext } from '../../store/store.js';
import {
  lockCustomer,
  replacePassword,
  toCustomer,
  updateCustomerProfile,
  type Customer,
  type CustomerRow,
} from '../tables/customers.js';
import { channelFor, type AuthDeps, type FieldErrors, type MessagingDeps } from '../deps.js';
import { fail, failFields, ok, type Result } from '../result.js';
import { validateName, validateNewPassword } from '../rules/fields.js';
import { validateNotBreached } from '../rules/breached.js';
import { validateLocale } from '../rules/locale.js';
import { credentialsChanged, templateName } from '../rules/ownership.js';
import { checkCurrentPassword, currentPasswordRefused } from '../rules/reauthentication.js';
import {
  createSession,
  deleteCustomerSessions,
  deleteSession,
  type NewSession,
  type SessionClient,
} from '../tables/sessions.js';

/** What a signed-in customer can change about their own account. */

export interface ChangePasswordInput {
  current_password: string;
  password: string;
  password_confirmation: string;
}

/**
 * The caller's new session, or why not: `wrong_password` when the current password is not the
 * password (with every other failing field), `unauthenticated` when the session ended (logout,
 * another device's change) while the request ran.
 */
export type ChangePasswordResult = Result<NewSession, 'invalid' | 'wrong_password' | 'unauthenticated'>;

/** Who asks for a change of their account: their row as their session read it, and that session. */
export interface SignedInCaller {
  customer: CustomerRow;
  sessionId: string;
  /** The device asking: a session it is given keeps its user agent and masked address. */
  client?: SessionClient | undefined;
}

/**
 * Changes the password of the session's customer. The current password is checked as a login
 * checks it, always, so a guess costs one full verification whatever else is wrong with the body.
 * Then one transaction, with the customer row locked: the new password and credential version,
 * every session of the customer ended, one new session for the caller, and the notice. Logins
 * that checked the old password wait on the lock and then find the version gone (createSession).
 */
export async function changePassword(
  deps: MessagingDeps & Pick<AuthDeps, 'hasher' | 'breachedPasswords'>,
  store: StoreContext,
  { customer, sessionId, client }: SignedInCaller,
  input: ChangePasswordInput,
): Promise<ChangePasswordResult> {
  const errors: FieldErrors = {};
  const currentMatches = await checkCurrentPassword(deps, customer, input.current_password, errors);
  validateNewPassword(input.password, input.password_confirmation, errors);
  await validateNotBreached(deps.breachedPasswords, input.password, errors);
  if (Object.keys(errors).length > 0) return failFields(currentMatches ? 'invalid' : 'wrong_password', errors);

  const passwordHash = await deps.hasher.hash(input.password);
  const result = await deps.db.transaction(async (tx): Promise<ChangePasswordResult> => {
    const locked = await lockCustomer(tx, { id: customer.id });
    if (locked === null) return fail('unauthenticated');
    // Another change committed after the check: the password checked is no longer the password.
    if (locked.credential_version !== customer.credential_version) return currentPasswordRefused();
    // The caller's own session must still be live; its end (a logout meanwhile) is final.
    if ((await deleteSession(tx, deps.clock, sessionId)) !== customer.id) return fail('unauthenticated');
    const now = deps.clock.now();
    const version = await replacePassword(tx, customer.id, passwordHash, now);
    await deleteCustomerSessions(tx, customer.id);
    // A pending identity change or reset asked for under the old password must not outlive it.
    await credentialsChanged(tx, deps.clock, customer.id);
    // A new session id for the caller: whoever learnt the old cookie value loses it with the password.
    const opened = await createSession(tx, deps.clock, { customerId: customer.id, credentialVersion: version, client });
    if (opened === null) throw new Error('the session of a password change could not be opened');
    await enqueueMessage(tx, deps, {
      channel: channelFor(store.identityMode),
      purpose: 'password_changed',
      to: locked.identity_value,
      customerId: locked.id,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(locked),
      language: messageLanguage(store, locked.locale),
      signedOut: 'other_devices',
    });
    await recordCustomerEvent(tx, deps.clock, {
      type: 'customer.password_changed',
      customerId: locked.id,
      data: { how: 'changed' },
    });
    return ok(opened.session);
  });
  if (result.ok) {
    deps.messagesQueued();
    deps.eventsRecorded();
  }
  return result;
}

/** What the profile changes: each field that is given (a null locale: the store's default). */
export interface ProfileInput {
  name?: string | undefined;
  locale?: string | null | undefined;
}

export type ChangeProfileResult = Result<Customer, 'invalid' | 'unauthenticated'>;

/**
 * Sets the customer's name, by the same rules as at registration, and the language of their
 * messages (one of the store's). A body with neither asks for the name, as it always has.
 */
export async function changeProfile(
  deps: Pick<AuthDeps, 'db' | 'clock'>,
  store: Pick<StoreContext, 'languages'>,
  customerId: string,
  input: ProfileInput,
): Promise<ChangeProfileResult> {
  const errors: FieldErrors = {};
  const name =
    input.name !== undefined || input.locale === undefined ? validateName(input.name ?? '', errors) : undefined;
  const locale = input.locale === undefined ? undefined : validateLocale(store, input.locale, errors);
  if (Object.keys(errors).length > 0) return failFields('invalid', errors);
  const row = await updateCustomerProfile(deps.db, customerId, { name, locale }, deps.clock.now());
  return row === null ? fail('unauthenticated') : ok(toCustomer(row));
}
