import type { AuditEntry, AuditEvent } from '../audit.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../storage/database.js';

/**
 * Who changed the platform: a staff token over the admin API (with the call's address and request
 * id), or an operator at the command line. Both land in the store's trail alike, `by` telling them
 * apart.
 */
export type Actor = { by: 'admin'; token: string; clientAddress: string; requestId: string } | { by: 'operator' };

/** What every platform operation works with; the admin API and the command line each hand theirs in. */
export interface PlatformDeps {
  db: Database;
  clock: Clock;
  config: Pick<Config, 'mail' | 'smsWebhook' | 'deliveryLogAllowed' | 'webauthn' | 'webhooks'>;
  /** Keeps an entry: the admin API's batched trail, or written at once by the command line. */
  audit: (entry: AuditEntry) => unknown;
  /** This instance follows the change at once (others on their next feed read); the command line has none. */
  announce?: () => Promise<void>;
}

/** A change made: recorded in the store's trail under its actor, then announced. */
export async function recordChange(
  deps: PlatformDeps,
  actor: Actor,
  storeId: string,
  details: Record<string, string>,
  event: AuditEvent = 'store.changed',
): Promise<void> {
  const { by, ...who } = actor;
  const client = 'clientAddress' in who ? { clientAddress: who.clientAddress, requestId: who.requestId } : null;
  await deps.audit({
    storeId,
    event,
    customerId: null,
    clientAddress: client?.clientAddress ?? null,
    requestId: client?.requestId ?? null,
    details: { by, ...('token' in who && { token: who.token }), ...details },
  });
  await deps.announce?.();
}
