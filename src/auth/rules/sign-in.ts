import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { StoreContext } from '../../store/store.js';
import { channelFor, type AuthDeps, type MessagingDeps } from '../deps.js';
import { ok, type Ok, type Result } from '../result.js';
import { customerCreatedAt, toCustomer, type Customer, type CustomerRow } from '../tables/customers.js';
import { knownDeviceDays, recordSignIn, type DeviceKey } from '../tables/known-devices.js';
import { maskAddress } from './network.js';
import { listCustomerSessions, type NewSession, type SessionClient } from '../tables/sessions.js';
import { holdSignIn, type PendingMethod } from '../tables/pending-sign-ins.js';
import type { Clock } from '../../clock.js';
import type { StoreQueryable } from '../../storage/database.js';
import { deviceFamily } from './device-family.js';
import { templateName } from './ownership.js';

/**
 * The end every way of signing in shares once its session is open (the password, a code, a
 * passkey): the attempt's shape, the answer, and the new sign-in notice.
 */

/** One request to sign in, whichever way: the store it is for, where it comes from, what it carried. */
export interface SignInAttempt {
  store: StoreContext;
  /** The device signing in: its session keeps the user agent and masked address. */
  client: SessionClient;
  /** The session the request carried: replaced, never reused (session fixation). */
  previousSessionId: string | undefined;
}

/** A sign-in of any kind that opened its session. */
export interface SignedIn {
  customer: Customer;
  sessionId: string;
  /** What became of the new sign-in notice; a failure is the caller's to log, the login stands. */
  signInNotice: SignInNotice | { failed: unknown };
}

/**
 * A sign-in whose first step was right, of a customer with a second step: no session yet. The
 * handle names the pending sign-in and goes only into the browser's cookie.
 */
export interface SecondStepAsked {
  secondStep: { handle: string };
  customerId: string;
}

/**
 * `customerId` is for the audit trail only; the answer never depends on it. `blocked` comes only
 * after the credential was found right, with the block's end (`until`, null: none set).
 */
export type LoginResult = Result<
  SignedIn | SecondStepAsked,
  'refused' | 'blocked',
  { customerId: string | null; until?: Date | null }
>;

/**
 * Whether this sign-in waits for a second step: the customer set one up and the store offers it.
 * Read off the row every sign-in reads anyway, so a customer without one costs nothing more.
 */
export function asksSecondStep(
  store: Pick<StoreContext, 'twoFactorOffered'>,
  customer: Pick<CustomerRow, 'two_factor'>,
) {
  return store.twoFactorOffered && customer.two_factor;
}

/**
 * Holds a sign-in for its second step, against the credential version its first step was checked
 * under: a password change meanwhile leaves it nothing to finish (see createSession).
 */
export async function holdForSecondStep(
  db: StoreQueryable,
  clock: Clock,
  customer: Pick<CustomerRow, 'id' | 'credential_version'>,
  method: PendingMethod,
): Promise<Ok<SecondStepAsked>> {
  const handle = await holdSignIn(db, clock, {
    customerId: customer.id,
    credentialVersion: customer.credential_version,
    method,
  });
  return ok({ secondStep: { handle }, customerId: customer.id });
}

export type SignInNotice = 'sent' | 'known_device' | 'first_sign_in' | 'off';

/** The device a sign-in comes from, as known devices record it: worked out once per sign-in. */
export function deviceKeyOf(client: SessionClient): DeviceKey {
  return { family: deviceFamily(client.userAgent), maskedAddress: maskAddress(client.address) ?? 'unknown network' };
}

/** A sign-in whose session is open, as its notice is decided. */
export interface OpenedSignIn {
  customer: CustomerRow;
  session: NewSession;
  device: DeviceKey;
  /** The statement that opened the session found the device seen and refreshed it (createSession). */
  knownDeviceRefreshed: boolean;
  /** The same statement wrote a `customer.signed_in` for the store's endpoints. */
  eventRecorded: boolean;
}

/**
 * Called after every successful sign-in (password, and any later way of signing in), once its
 * session exists: remembers the device (family and masked address) and, when the customer has
 * not signed in from it for 90 days, queues a `new_sign_in` message to their identity.
 *
 * A device counts as seen when a known-device row of the last 90 days or another live session
 * (one opened before the device list existed, say) has the same family and masked address. The
 * first sign-in of a new account sends none: it has no device to compare with, and the customer
 * just made it. "New" means younger than the look-back; an older account with nothing on record
 * has been idle for 90 days, and its next sign-in is worth a notice.
 *
 * Devices are recorded whether notices are on or off, so turning them on later does not greet
 * every customer with one.
 *
 * `knownDeviceRefreshed` says the statement that opened the session already found the device
 * seen and refreshed its row: that answer is final and costs nothing more.
 */
async function noteSignIn(deps: MessagingDeps, store: StoreContext, signIn: OpenedSignIn): Promise<SignInNotice> {
  const { customer, device, knownDeviceRefreshed } = signIn;
  if (knownDeviceRefreshed) return 'known_device';
  const { family, maskedAddress } = device;
  const outcome = await deps.db.transaction(async (tx): Promise<SignInNotice> => {
    const history = await recordSignIn(tx, deps.clock, customer.id, device);
    if (history.seen) return 'known_device';
    const sessions = await listCustomerSessions(tx, deps.clock, customer.id, signIn.session.sessionId);
    const others = sessions.filter((s) => !s.current);
    if (others.some((s) => s.client.address === maskedAddress && deviceFamily(s.client.user_agent) === family))
      return 'known_device';
    if (!history.anySeen && others.length === 0 && (await isNewAccount(tx, deps, customer.id))) return 'first_sign_in';
    if (!store.signInNotices) return 'off';
    await enqueueMessage(tx, deps, {
      channel: channelFor(store.identityMode),
      purpose: 'new_sign_in',
      to: customer.identity_value,
      customerId: customer.id,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(customer),
      language: messageLanguage(store, customer.locale),
      signIn: { at: deps.clock.now(), device: family, address: maskedAddress },
    });
    return 'sent';
  });
  if (outcome === 'sent') deps.messagesQueued();
  return outcome;
}

async function isNewAccount(
  db: Parameters<typeof customerCreatedAt>[0],
  deps: Pick<AuthDeps, 'clock'>,
  customerId: string,
): Promise<boolean> {
  const createdAt = await customerCreatedAt(db, customerId);
  if (createdAt === null) return false;
  return deps.clock.now().getTime() - Date.parse(createdAt) < knownDeviceDays * 24 * 60 * 60 * 1000;
}

/**
 * The success of every way of signing in, once its session is open: the new sign-in notice is
 * considered outside the session's statement, and a failure to queue it is handed back for the
 * caller to log, never turning a sign-in into a refusal.
 */
export async function completeSignIn(
  deps: MessagingDeps,
  store: StoreContext,
  signIn: OpenedSignIn,
): Promise<Ok<SignedIn>> {
  if (signIn.eventRecorded) deps.eventsRecorded();
  const signInNotice = await noteSignIn(deps, store, signIn).catch((error: unknown) => ({ failed: error }));
  return ok({ customer: toCustomer(signIn.customer), sessionId: signIn.session.sessionId, signInNotice });
}
