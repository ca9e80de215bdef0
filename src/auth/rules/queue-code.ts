import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { StoreContext } from '../../store/store.js';
import { issueChallenge, type ChallengePurpose } from '../tables/codes.js';
import { findCustomerByIdentity, lockCustomer, type CustomerRow } from '../tables/customers.js';
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
): Promise<void> {
  const challenge = await issueChallenge(tx, deps, customer.id, purpose);
  await enqueueMessage(tx, deps, {
    channel: channelFor(store.identityMode),
    purpose,
    to: customer.identity_value,
    customerId: customer.id,
    storeName: store.name,
    language: messageLanguage(store, customer.locale),
    code: { value: challenge.code, expiresAt: challenge.expiresAt },
    challengeId: challenge.challengeId,
  });
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
  const found = await findCustomerByIdentity(deps.db, identity);
  if (found === null || !wants(found)) return;
  const sent = await deps.db.transaction(async (tx) => {
    const customer = await lockCustomer(tx, identity);
    if (customer === null || !wants(customer)) return false;
    await queueCode(tx, deps, store, customer, purpose);
    return true;
  });
  if (sent) deps.messagesQueued();
}
