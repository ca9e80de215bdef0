import type { Clock } from '../clock.js';
import type { Queryable } from '../storage/database.js';
import { knownDeviceCutoff, type DeviceKey } from './known-devices.js';
import { hashSessionId, insertSessionSql, sessionOpening, type NewSession, type SessionClient } from './sessions.js';

/**
 * One statement, so one round trip: the session of createSession (`$1`…`$7`, with its FOR SHARE
 * check of the credential version), the session the request carried deleted (`$8`, never reused:
 * session fixation), and the known device (`$9`, `$10`) refreshed when it was seen within the
 * look-back (`$11`). The last two act only when the session opened, and all three commit together,
 * so no transaction is needed. The sub-statements share one snapshot: the UPDATE finds the device
 * as it was before this sign-in. A device not seen lately is left to noteSignIn, whose transaction
 * records it together with its notice, so a notice that cannot be queued is tried again next time.
 */
const openSignInSessionSql = `WITH opened AS (
       ${insertSessionSql}
       RETURNING customer_id),
     replaced AS (
       DELETE FROM sessions WHERE id_hash = $8 AND EXISTS (SELECT 1 FROM opened)),
     device AS (
       UPDATE known_devices d SET last_seen_at = $3 FROM opened
        WHERE d.customer_id = opened.customer_id AND d.family = $9 AND d.masked_address = $10
          AND d.last_seen_at > $11
       RETURNING 1)
     SELECT EXISTS (SELECT 1 FROM opened) AS opened, EXISTS (SELECT 1 FROM device) AS device_seen`;

export interface SignInSession {
  session: NewSession;
  /** The device was seen within the look-back, and its row now says it was seen again. */
  knownDeviceRefreshed: boolean;
}

/**
 * Opens the session of a password sign-in as createSession does (null when the password was
 * changed meanwhile), replacing `previousSessionId`, and refreshes the device if it is known.
 */
export async function openSignInSession(
  db: Queryable,
  clock: Clock,
  customerId: string,
  credentialVersion: number,
  client: SessionClient,
  device: DeviceKey,
  previousSessionId: string | undefined,
): Promise<SignInSession | null> {
  const opening = sessionOpening(clock, customerId, credentialVersion, client);
  const [row] = await db.query<{ opened: boolean; device_seen: boolean }>(openSignInSessionSql, [
    ...opening.params,
    previousSessionId === undefined ? null : hashSessionId(previousSessionId),
    device.family,
    device.maskedAddress,
    knownDeviceCutoff(clock.now()),
  ]);
  if (row?.opened !== true) return null;
  return { session: opening.session, knownDeviceRefreshed: row.device_seen };
}
