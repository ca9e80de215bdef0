import { enqueueMessage } from '../delivery/outbox.js';
import type { StoreContext } from '../store/store.js';
import { customerCreatedAt, type CustomerRow } from './customers.js';
import { channelFor, type AuthDeps, type MessagingDeps } from './deps.js';
import { deviceFamily } from './device-family.js';
import { knownDeviceDays, recordSignIn, type DeviceKey } from './known-devices.js';
import { listCustomerSessions, maskAddress, type SessionClient } from './sessions.js';

export type SignInNotice = 'sent' | 'known_device' | 'first_sign_in' | 'off';

/** The device a sign-in comes from, as known devices record it. */
export function deviceKeyOf(client: SessionClient): DeviceKey {
  return { family: deviceFamily(client.userAgent), maskedAddress: maskAddress(client.address) ?? 'unknown network' };
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
 * seen and refreshed its row (openSignInSession): that answer is final and costs nothing more.
 */
export async function noteSignIn(
  deps: MessagingDeps,
  store: StoreContext,
  customer: Pick<CustomerRow, 'id' | 'name' | 'identity_value'>,
  sessionId: string,
  client: SessionClient,
  knownDeviceRefreshed = false,
): Promise<SignInNotice> {
  if (knownDeviceRefreshed) return 'known_device';
  const { family, maskedAddress } = deviceKeyOf(client);
  const outcome = await deps.db.transaction(async (tx): Promise<SignInNotice> => {
    const history = await recordSignIn(tx, deps.clock, customer.id, { family, maskedAddress });
    if (history.seen) return 'known_device';
    const others = (await listCustomerSessions(tx, deps.clock, customer.id, sessionId)).filter((s) => !s.current);
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
