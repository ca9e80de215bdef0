import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import type { AuthDeps } from '../deps.js';
import type { Result } from '../result.js';
import { revokeCustomerSession, revokeCustomerSessions } from '../tables/sessions.js';

/**
 * Sessions ended on purpose, by the customer from their account or by the platform's staff: each
 * revocation that ended a session writes its `customer.sessions_revoked` in the same transaction.
 * (A password change, reset or identity change ends sessions too; their own events say so.)
 */

type RevocationDeps = Pick<AuthDeps, 'db' | 'clock' | 'eventsRecorded'>;

/** One of the customer's sessions, by its public handle (see revokeCustomerSession). */
export async function revokeOneSession(
  deps: RevocationDeps,
  customerId: string,
  publicId: string,
  currentSessionId: string,
): Promise<Result<{ current: boolean }, 'not_found'>> {
  const result = await deps.db.transaction(async (tx) => {
    const revoked = await revokeCustomerSession(tx, deps.clock, customerId, publicId, currentSessionId);
    if (revoked.ok) {
      const data = { sessions: 'one', by: 'customer' } as const;
      await recordCustomerEvent(tx, deps.clock, { type: 'customer.sessions_revoked', customerId, data });
    }
    return revoked;
  });
  if (result.ok) deps.eventsRecorded();
  return result;
}

/**
 * Every session of the customer but `keepSessionId` (every one without it); returns how many live
 * ones ended. An event only when one did.
 */
export async function revokeSessions(
  deps: RevocationDeps,
  customerId: string,
  { keepSessionId, by }: { keepSessionId?: string; by: 'customer' | 'staff' },
): Promise<number> {
  const count = await deps.db.transaction(async (tx) => {
    const ended = await revokeCustomerSessions(tx, deps.clock, customerId, keepSessionId);
    if (ended > 0) {
      const data = { sessions: keepSessionId === undefined ? 'all' : 'others', by } as const;
      await recordCustomerEvent(tx, deps.clock, { type: 'customer.sessions_revoked', customerId, data });
    }
    return ended;
  });
  if (count > 0) deps.eventsRecorded();
  return count;
}
