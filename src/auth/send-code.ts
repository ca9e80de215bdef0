import { enqueueMessage } from '../delivery/outbox.js';
import type { StoreContext } from '../store/store.js';
import { issueChallenge, type ChallengePurpose } from './codes.js';
import type { CustomerRow } from './customers.js';
import { channelFor, type AuthDeps } from './deps.js';

/**
 * Issues a new code of the purpose (voiding earlier ones) and queues its message, both in the
 * caller's transaction: the message exists exactly when its code does.
 */
export async function sendCode(
  tx: Parameters<typeof issueChallenge>[0],
  deps: Pick<AuthDeps, 'clock' | 'keys'>,
  store: StoreContext,
  customer: Pick<CustomerRow, 'id' | 'name' | 'identity_value'>,
  purpose: ChallengePurpose,
): Promise<void> {
  const challenge = await issueChallenge(tx, deps, customer.id, purpose);
  await enqueueMessage(tx, deps, {
    channel: channelFor(store.identityMode),
    purpose,
    to: customer.identity_value,
    storeName: store.name,
    customerName: customer.name,
    code: challenge.code,
    challengeId: challenge.challengeId,
  });
}
