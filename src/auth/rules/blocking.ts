import type { CustomerRow } from '../tables/customers.js';

/**
 * A block by the platform's staff. While it holds, no session opens for the account whatever the
 * credential (createSession checks it in the statement that opens one, so a sign-in racing the
 * block loses), and no code is sent to it. A sign-in answers the block only after its credential
 * was checked: a wrong one answers as any wrong one, so the block tells nothing to someone who
 * does not hold the credential.
 */
export type Blocked = { blocked: true; until: Date | null };

/** The block on the account at `now`, or null: none was set, or its end has passed. */
export function blockOn(customer: Pick<CustomerRow, 'blocked_at' | 'blocked_until'>, now: Date): Blocked | null {
  if (customer.blocked_at === null) return null;
  const until = customer.blocked_until === null ? null : new Date(customer.blocked_until);
  if (until !== null && until.getTime() <= now.getTime()) return null;
  return { blocked: true, until };
}
