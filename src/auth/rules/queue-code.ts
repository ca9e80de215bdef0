import type { MessagePurpose } from '../../delivery/message.js';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { StoreContext } from '../../store/store.js';
import { hasLiveChallenge, invitationLifetimeSeconds, issueChallenge, type ChallengePurpose } from '../tables/codes.js';
import { findCustomerByIdentity, lockCustomer, type CustomerRow } from '../tables/customers.js';
import { blockOn } from './blocking.js';
import type { ParsedIdentity } from './identity.js';
import { channelFor, type AuthDeps, type MessagingDeps } from '../deps.js';

/**
 * Issues a new code of the purpose (voiding earlier ones) and queues its message, both in the
 * caller's transaction: the message exists exactly when its code does.
 */
export async function queueCode(
  tx: Parameters<typeof issueChallenge>[0],
  deps: Pick<AuthDeps, 'clock' | 'keys'>,
  store: StoreContext,
  customer: Pick<CustomerRow, 'id' | 'identity_value' | 'locale'>,
  purpose: ChallengePurpose,
  /** An invitation is a reset code that says so, and lives longer. */
  { message = purpose, lifetimeSeconds }: { message?: MessagePurpose; lifetimeSeconds?: number } = {},
): Promise<void> {
  const challenge = await issueChallenge(tx, deps, customer.id, purpose, null, lifetimeSeconds);
  await enqueueMessage(tx, deps, {
    channel: channelFor(store.identityMode),
    purpose: message,
    to: customer.identity_value,
    customerId: customer.id,
    storeName: store.name,
    branding: store.mailBranding,
    language: messageLanguage(store, customer.locale),
    code: { value: challenge.code, expiresAt: challenge.expiresAt },
    challengeId: challenge.challengeId,
  });
}

/**
 * An invitation: a set-password code (a reset code that lives a week) sent unasked to an account
 * that has no password, in the caller's transaction. Setting the password with it is a proof of
 * control, as any reset is. With `unlessLive`, a customer who still holds a usable reset code gets
 * none (an import run twice invites once). Whether it was queued.
 */
export async function queueInvitation(
  tx: Parameters<typeof issueChallenge>[0],
  deps: Pick<AuthDeps, 'clock' | 'keys'>,
  store: StoreContext,
  customer: Pick<CustomerRow, 'id' | 'identity_value' | 'locale'>,
  { unlessLive }: { unlessLive: boolean },
): Promise<boolean> {
  if (unlessLive && (await hasLiveChallenge(tx, deps.clock, customer.id, 'password_reset'))) return false;
  await queueCode(tx, deps, store, customer, 'password_reset', {
    message: 'invitation',
    lifetimeSeconds: invitationLifetimeSeconds,
  });
  return true;
}

/**
 * Behind the 202 of resend and forgot: queues a code of the purpose when the identity names an
 * account that `wants` one. Most such requests name no account (typos, probing, floods), so one
 * plain read settles them; only a real account pays for the locking transaction, which checks
 * again under the row lock.
 */
export async function queueCodeIfWanted(
  deps: MessagingDeps,
  store: StoreContext,
  identity: ParsedIdentity,
  purpose: ChallengePurpose,
  wants: (customer: CustomerRow) => boolean,
): Promise<void> {
  // A blocked account gets nothing: the answer was the same 202 before anything was looked up.
  const wanted = (customer: CustomerRow | null): customer is CustomerRow =>
    customer !== null && wants(customer) && blockOn(customer, deps.clock.now()) === null;
  if (!wanted(await findCustomerByIdentity(deps.db, identity))) return;
  const sent = await deps.db.transaction(async (tx) => {
    const customer = await lockCustomer(tx, identity);
    if (!wanted(customer)) return false;
    await queueCode(tx, deps, store, customer, purpose);
    return true;
  });
  if (sent) deps.messagesQueued();
}
