import { writeAuditEntry } from '../audit.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Actor, PlatformDeps } from '../platform/actor.js';
import { forStore, type Database } from '../storage/database.js';

/** What the platform's operations need from the command line. */
export interface OperatorDeps {
  db: Database;
  clock: Clock;
  config: Pick<Config, 'mail' | 'smsWebhook' | 'deliveryLogAllowed' | 'webauthn' | 'webhooks'>;
}

/**
 * The platform's operations as the command line runs them: each change written to the store's
 * trail at once (there is no trail queue to flush), by the operator, with no address or request id.
 * There is no running instance to tell: each follows on its next read of the change feed.
 */
export function operatorPlatform({ db, clock, config }: OperatorDeps): PlatformDeps {
  return { db, clock, config, audit: (entry) => writeAuditEntry(forStore(db, entry.storeId), clock, entry) };
}

export const operator: Actor = { by: 'operator' };
