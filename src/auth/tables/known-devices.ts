import { secondsBefore, type Clock } from '../../clock.js';
import { deleteInBatch, type Queryable, type StatementParams, type StoreQueryable } from '../../storage/database.js';

/** How far back a sign-in counts as having seen a device; older rows are pruned. */
export const knownDeviceDays = 90;
const knownDeviceSeconds = knownDeviceDays * 24 * 60 * 60;

/** Devices last seen after this count as seen. */
export function knownDeviceCutoff(now: Date): Date {
  return secondsBefore(now, knownDeviceSeconds);
}

export interface DeviceKey {
  family: string;
  maskedAddress: string;
}

export interface DeviceHistory {
  /** The customer signed in from this device (family and masked address) in the last 90 days. */
  seen: boolean;
  /** The customer signed in from any device in the last 90 days. */
  anySeen: boolean;
}

/**
 * Records a sign-in from `device` and says what was known before it, in one statement (one round
 * trip): its read and its upsert share one snapshot, so the read sees the history as it was
 * before this sign-in. Two sign-ins racing from the same new device may both find it unseen: at
 * worst two notices, never none.
 */
export async function recordSignIn(
  db: StoreQueryable,
  clock: Clock,
  customerId: string,
  device: DeviceKey,
): Promise<DeviceHistory> {
  const now = clock.now();
  const cutoff = knownDeviceCutoff(now);
  const [history] = await db.query<{ seen: boolean; any_seen: boolean }>(
    `WITH recorded AS (
       INSERT INTO known_devices (store_id, customer_id, family, masked_address, last_seen_at)
       VALUES ($6, $1, $2, $3, $5)
       ON CONFLICT (store_id, customer_id, family, masked_address) DO UPDATE SET last_seen_at = excluded.last_seen_at)
     SELECT coalesce(bool_or(family = $2 AND masked_address = $3), false) AS seen, count(*) > 0 AS any_seen
       FROM known_devices WHERE store_id = $6 AND customer_id = $1 AND last_seen_at > $4`,
    [customerId, device.family, device.maskedAddress, cutoff, now, db.storeId],
  );
  return { seen: history?.seen ?? false, anySeen: history?.any_seen ?? false };
}

/**
 * The part of a sign-in's statement (createSession) that refreshes its device when it was seen
 * within the look-back, for the customer of `opened`, a sub-statement returning `customer_id`.
 */
export function refreshSeenDevice(
  params: StatementParams,
  storeId: string,
  opened: string,
  device: DeviceKey,
  now: Date,
): string {
  return `UPDATE known_devices d SET last_seen_at = ${params.add(now)} FROM ${opened}
        WHERE d.store_id = ${params.add(storeId)} AND d.customer_id = ${opened}.customer_id AND d.family = ${params.add(device.family)}
          AND d.masked_address = ${params.add(device.maskedAddress)} AND d.last_seen_at > ${params.add(knownDeviceCutoff(now))}
       RETURNING 1`;
}

/** Deletes up to `limit` devices not seen for `retentionSeconds`; returns how many. */
export async function deleteOldKnownDevices(
  db: Queryable,
  clock: Clock,
  retentionSeconds: number,
  limit: number,
): Promise<number> {
  return deleteInBatch(
    db,
    {
      table: 'known_devices',
      key: ['store_id', 'customer_id', 'family', 'masked_address'],
      where: 'last_seen_at <= $1',
    },
    [secondsBefore(clock.now(), retentionSeconds)],
    limit,
  );
}

/** Every device kept for the customer, the most recently seen first. */
export async function listKnownDevices(
  db: StoreQueryable,
  customerId: string,
): Promise<Array<{ family: string; masked_address: string; last_seen_at: string }>> {
  const rows = await db.query<{ family: string; masked_address: string; last_seen_at: Date }>(
    `SELECT family, masked_address, last_seen_at FROM known_devices
      WHERE store_id = $2 AND customer_id = $1 ORDER BY last_seen_at DESC`,
    [customerId, db.storeId],
  );
  return rows.map((row) => ({ ...row, last_seen_at: new Date(row.last_seen_at).toISOString() }));
}
