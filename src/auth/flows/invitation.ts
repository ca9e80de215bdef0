import type { StoreContext } from '../../store/store.js';
import { isUuid } from '../../storage/database.js';
import type { MessagingDeps } from '../deps.js';
import { fail, ok, type Result } from '../result.js';
import { queueInvitation } from '../rules/queue-code.js';
import { lockCustomer } from '../tables/customers.js';

export type InviteResult = Result<{ customerId: string }, 'not_found' | 'has_password'>;

/**
 * Sends a customer without a password (an import brought none: Shopify exports none) a
 * set-password code, replacing any earlier one: the store asked again, say because the first was
 * lost. A customer who has a password needs none (forgot/reset is theirs to start).
 */
export async function inviteCustomer(
  deps: MessagingDeps,
  store: StoreContext,
  customerId: string,
): Promise<InviteResult> {
  if (!isUuid(customerId)) return fail('not_found');
  const result = await deps.db.transaction(async (tx): Promise<InviteResult> => {
    const customer = await lockCustomer(tx, { id: customerId });
    if (customer === null) return fail('not_found');
    if (customer.password_hash !== null) return fail('has_password');
    await queueInvitation(tx, deps, store, customer, { unlessLive: false });
    return ok({ customerId: customer.id });
  });
  if (result.ok) deps.messagesQueued();
  return result;
}
