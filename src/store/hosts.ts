import type { Clock } from '../clock.js';
import { isOnRpId } from '../config.js';
import { inStore, type Database, type StoreQueryable } from '../storage/database.js';
import type { StoreContext } from './context.js';
import { loadStore } from './reads.js';
import {
  bumpStoreVersion,
  hostUnderOtherCookieDomain,
  insertHosts,
  lockStoreChanges,
  type HostUnderCookieDomain,
} from './writes.js';

/** A store's hosts added and removed, each refused when it would reach another store's cookies or passkeys. */

export type HostChangeResult =
  | { ok: true; store: StoreContext }
  | { ok: false; reason: 'no_store' | 'host_taken' | 'no_such_host' }
  | HostUnderCookieDomain
  | { ok: false; reason: 'relying_party_in_use'; passkeys: number };

export interface HostChangeOptions {
  /** Counts the store's passkeys (countStorePasskeys of src/auth/tables/passkeys.ts). */
  countPasskeys: (tx: StoreQueryable) => Promise<number>;
  /** The deployment's relying party ID (WEBAUTHN_RP_ID), which a store without one of its own uses. */
  deploymentRpId: string;
  /** Remove the host even when the store's passkeys would stop working. */
  force?: boolean;
}

/**
 * Gives a store one more host (normalized); refused when another store holds it, or when another
 * store's cookie domain covers it. A store without a relying party ID gets one: the host, unless
 * its passkeys were made for the deployment's, which it then keeps.
 */
export async function addStoreHost(
  db: Database,
  clock: Clock,
  storeId: string,
  host: string,
  { countPasskeys, deploymentRpId }: Omit<HostChangeOptions, 'force'>,
): Promise<HostChangeResult> {
  try {
    return await db.transaction(async (tx) => {
      if ((await loadStore(tx, { id: storeId })) === null) return { ok: false, reason: 'no_store' };
      // The host first, the lock after (as a create takes them): in the other order a create
      // holding the host and waiting for the lock, and this holding the lock and waiting for the
      // host, would wait for each other.
      if ((await insertHosts(tx, storeId, [host])).size === 0) {
        const [owner] = await tx.query<{ store_id: string }>('SELECT store_id FROM store_hosts WHERE host = $1', [
          host,
        ]);
        if (owner?.store_id !== storeId) return { ok: false, reason: 'host_taken' };
        // A host the store has already is no change: the feed is not bumped for it.
        return { ok: true, store: (await loadStore(tx, { id: storeId }))! };
      }
      await lockStoreChanges(tx);
      // Read after the lock: a deletion committed meanwhile is seen, and the host goes with the rollback.
      const store = await loadStore(tx, { id: storeId });
      if (store === null) throw new HostRefused({ ok: false, reason: 'no_store' });
      if ((await hostUnderOtherCookieDomain(tx, storeId, [host])) !== undefined)
        throw new HostRefused({ ok: false, reason: 'host_under_cookie_domain', host });
      if (store.webauthnRpId === null) {
        const rpId = (await countPasskeys(inStore(tx, storeId))) > 0 ? deploymentRpId : host;
        await tx.query('UPDATE stores SET webauthn_rp_id = $2 WHERE id = $1', [storeId, rpId]);
      }
      await bumpStoreVersion(tx, storeId, clock.now());
      return { ok: true, store: (await loadStore(tx, { id: storeId }))! };
    });
  } catch (error) {
    if (error instanceof HostRefused) return error.result;
    throw error;
  }
}

/** Rolls back a host added when the checks after the lock refuse it. */
class HostRefused extends Error {
  constructor(readonly result: Extract<HostChangeResult, { ok: false }>) {
    super(result.reason);
  }
}

/**
 * Takes a host from a store. When no host left is on the store's relying party ID, its passkeys
 * could no longer sign in: refused while it has any, unless forced; without passkeys the relying
 * party follows to the first host left (or the deployment's when none is).
 */
export async function removeStoreHost(
  db: Database,
  clock: Clock,
  storeId: string,
  host: string,
  { countPasskeys, force = false }: Omit<HostChangeOptions, 'deploymentRpId'>,
): Promise<HostChangeResult> {
  return db.transaction(async (tx) => {
    await lockStoreChanges(tx);
    const store = await loadStore(tx, { id: storeId });
    if (store === null) return { ok: false, reason: 'no_store' };
    if (!store.hosts.includes(host)) return { ok: false, reason: 'no_such_host' };
    const left = store.hosts.filter((kept) => kept !== host);
    const rpId = store.webauthnRpId;
    if (rpId !== null && !left.some((kept) => isOnRpId(kept, rpId))) {
      const passkeys = await countPasskeys(inStore(tx, storeId));
      if (passkeys > 0 && !force) return { ok: false, reason: 'relying_party_in_use', passkeys };
      if (passkeys === 0)
        await tx.query('UPDATE stores SET webauthn_rp_id = $2 WHERE id = $1', [storeId, left[0] ?? null]);
    }
    await tx.query('DELETE FROM store_hosts WHERE store_id = $1 AND host = $2', [storeId, host]);
    await bumpStoreVersion(tx, storeId, clock.now());
    return { ok: true, store: (await loadStore(tx, { id: storeId }))! };
  });
}
