import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { StoreContext } from '../../store/store.js';
import type { StoreQueryable } from '../../storage/database.js';
import { channelFor, type AuthDeps, type FieldErrors, type MessagingDeps } from '../deps.js';
import { fail, failFields, ok, type Result } from '../result.js';
import { displayIdentity } from '../rules/identity.js';
import { isProven, templateName } from '../rules/ownership.js';
import { checkCurrentPassword, currentPasswordRefused } from '../rules/reauthentication.js';
import {
  newRecoveryCodes,
  newTotpSecret,
  recoveryHashes,
  sealTotpSecret,
  secondStepOf,
  secondStepRefused,
  takeSecondStep,
  totpStep,
  totpUri,
} from '../rules/second-step.js';
import { lockCustomer, setTwoFactor, type CustomerRow } from '../tables/customers.js';
import { endCustomerPendingSignIns } from '../tables/pending-sign-ins.js';
import {
  confirmSecondStep,
  deleteSecondStep,
  findSecondStep,
  putUnconfirmedSecret,
  replaceRecoveryCodes,
} from '../tables/second-steps.js';
import type { MessagePurpose } from '../../delivery/message.js';

/**
 * A signed-in customer's second step (TOTP with recovery codes): set up with the current password,
 * confirmed with a first code, renewed or turned off with the password and a code. Each change runs
 * with the customer row locked, so it cannot race a sign-in taking the second step, or another change.
 */

export interface SecondStepStatus {
  status: 'off' | 'pending' | 'on';
  recoveryCodesLeft: number;
}

export async function secondStepStatus(db: StoreQueryable, customer: CustomerRow): Promise<SecondStepStatus> {
  const row = await findSecondStep(db, customer.id);
  if (row === null) return { status: 'off', recoveryCodesLeft: 0 };
  if (row.confirmed_at === null || !customer.two_factor) return { status: 'pending', recoveryCodesLeft: 0 };
  return { status: 'on', recoveryCodesLeft: row.recovery_hashes.length };
}

/** Why a change of the second step is refused, besides a wrong password or code. */
type Refusal = 'wrong_password' | 'invalid' | 'unauthenticated' | 'identity_unverified' | 'on' | 'off' | 'enforced';

type Deps = Pick<AuthDeps, 'db' | 'clock' | 'hasher' | 'keys'>;

/**
 * Checks the current password (always, when the account has one: a guess costs one verification
 * whatever else is wrong), then runs `change` with the row locked, unless a password change
 * committed meanwhile.
 */
async function reauthenticated<T, E extends Refusal>(
  deps: Deps,
  customer: CustomerRow,
  currentPassword: string | undefined,
  change: (tx: StoreQueryable, locked: CustomerRow) => Promise<Result<T, E | Refusal>>,
): Promise<Result<T, E | Refusal>> {
  if (customer.password_hash !== null) {
    const errors: FieldErrors = {};
    if (!(await checkCurrentPassword(deps, customer, currentPassword ?? '', errors)))
      return failFields('wrong_password', errors);
  }
  return deps.db.transaction(async (tx) => {
    const locked = await lockCustomer(tx, { id: customer.id });
    if (locked === null) return fail('unauthenticated');
    if (locked.credential_version !== customer.credential_version) return currentPasswordRefused();
    return change(tx, locked);
  });
}

/** A new secret, unconfirmed until a code of it comes back; only on a proven account. */
export async function setUpSecondStep(
  deps: Deps,
  store: Pick<StoreContext, 'name'>,
  customer: CustomerRow,
  currentPassword: string | undefined,
): Promise<Result<{ secret: string; uri: string }, Refusal>> {
  // A claim is not an account yet: a second step set on it would lock its owner out (see ownership).
  if (!isProven(customer)) return fail('identity_unverified');
  return reauthenticated(deps, customer, currentPassword, async (tx, locked) => {
    if (locked.two_factor) return fail('on');
    const secret = newTotpSecret();
    await putUnconfirmedSecret(tx, locked.id, sealTotpSecret(deps.keys, secret));
    const label = displayIdentity(locked.identity_type, locked.identity_value);
    return ok({ secret, uri: totpUri(secret, store.name, label) });
  });
}

/** Turns the second step on with a first code of the app; the recovery codes, shown only here. */
export async function confirmSecondStepSetup(
  deps: MessagingDeps,
  store: StoreContext,
  customer: CustomerRow,
  code: string,
): Promise<Result<{ recoveryCodes: string[] }, 'invalid' | 'unauthenticated' | 'on' | 'off'>> {
  const result = await deps.db.transaction(async (tx) => {
    const locked = await lockCustomer(tx, { id: customer.id });
    if (locked === null) return fail('unauthenticated');
    if (locked.two_factor) return fail('on');
    const row = await findSecondStep(tx, locked.id);
    if (row === null) return fail('off');
    const now = deps.clock.now();
    const step = totpStep(deps.keys, row.sealed_secret, code, now);
    if (step === null) return failFields('invalid', secondStepRefused({ code }));
    const recoveryCodes = newRecoveryCodes();
    await confirmSecondStep(tx, locked.id, step, recoveryHashes(deps.keys, recoveryCodes), now);
    await setTwoFactor(tx, locked.id, true, now);
    await notify(tx, deps, store, locked, 'two_factor_on');
    return ok({ recoveryCodes });
  });
  if (result.ok) deps.messagesQueued();
  return result;
}

/**
 * Turns the second step off with the password and a code (the app's or a recovery code): the
 * secret and codes go, and so does every sign-in waiting for them.
 */
export async function turnOffSecondStep(
  deps: MessagingDeps & Pick<AuthDeps, 'hasher'>,
  store: StoreContext,
  customer: CustomerRow,
  currentPassword: string | undefined,
  code: string,
): Promise<Result<null, Refusal>> {
  if (store.twoFactor === 'required') return fail('enforced');
  const result = await reauthenticated(deps, customer, currentPassword, async (tx, locked) => {
    if (!locked.two_factor) return fail('off');
    const given = secondStepOf(code);
    if ((await takeSecondStep(tx, deps, locked.id, given)) === null)
      return failFields('invalid', secondStepRefused(given, 'code'));
    await deleteSecondStep(tx, locked.id);
    await setTwoFactor(tx, locked.id, false, deps.clock.now());
    await endCustomerPendingSignIns(tx, locked.id);
    await notify(tx, deps, store, locked, 'two_factor_off');
    return ok(null);
  });
  if (result.ok) deps.messagesQueued();
  return result;
}

/** New recovery codes with the password and a code; the old ones stop working. */
export async function renewRecoveryCodes(
  deps: Deps,
  customer: CustomerRow,
  currentPassword: string | undefined,
  code: string,
): Promise<Result<{ recoveryCodes: string[] }, Refusal>> {
  return reauthenticated(deps, customer, currentPassword, async (tx, locked) => {
    if (!locked.two_factor) return fail('off');
    const given = secondStepOf(code);
    if ((await takeSecondStep(tx, deps, locked.id, given)) === null)
      return failFields('invalid', secondStepRefused(given, 'code'));
    const recoveryCodes = newRecoveryCodes();
    await replaceRecoveryCodes(tx, locked.id, recoveryHashes(deps.keys, recoveryCodes));
    return ok({ recoveryCodes });
  });
}

async function notify(
  tx: StoreQueryable,
  deps: MessagingDeps,
  store: StoreContext,
  customer: CustomerRow,
  purpose: MessagePurpose,
): Promise<void> {
  await enqueueMessage(tx, deps, {
    channel: channelFor(store.identityMode),
    purpose,
    to: customer.identity_value,
    customerId: customer.id,
    storeName: store.name,
    branding: store.mailBranding,
    customerName: templateName(customer),
    language: messageLanguage(store, customer.locale),
  });
}
