import { isUuid, type Queryable } from '../storage/database.js';
import { firstStoreId, toStore, type StoreContext, type StoreRow } from './context.js';

/** A store read: by id, slug or host, a page of them, the deployment's, and the change feed. */

/** The columns of a store as toStore reads them, through the alias `s`. */
export const storeColumns = `s.id, s.slug, s.name, s.status, s.identity_mode, s.settings, s.allowed_origins, s.mail_from,
  s.sms_sender, s.webauthn_rp_id, s.cookie_domain, s.version::text AS version, s.updated_at, s.deleted_at,
  ARRAY(SELECT h.host FROM store_hosts h WHERE h.store_id = s.id ORDER BY h.host) AS hosts`;

export type StoreKey = { id: string } | { slug: string } | { host: string };

/** A live store (not deleted) by id, slug or host; null when none is. */
export async function loadStore(db: Queryable, key: StoreKey): Promise<StoreContext | null> {
  const [where, value] =
    'id' in key
      ? ['s.id = $1', key.id]
      : 'slug' in key
        ? ['s.slug = $1', key.slug]
        : ['s.id = (SELECT store_id FROM store_hosts WHERE host = $1)', key.host];
  const rows = await db.query<StoreRow>(
    `SELECT ${storeColumns} FROM stores s WHERE ${where} AND s.deleted_at IS NULL`,
    [value],
  );
  return rows[0] === undefined ? null : toStore(rows[0]);
}

/** A store named by an operator: its id (a UUID, or the first store's), or its slug. */
export async function findStoreNamed(db: Queryable, name: string): Promise<StoreContext | null> {
  // An id first when the name has an id's shape: a slug shaped like one cannot hide that store.
  if (isUuid(name) || name === firstStoreId) {
    const byId = await loadStore(db, { id: name });
    if (byId !== null) return byId;
  }
  return loadStore(db, { slug: name });
}

export type OnlyStore = { ok: true; store: StoreContext } | { ok: false; reason: 'no_store' | 'several_stores' };

/** The deployment's one live store, for a command that names none. */
export async function onlyStore(db: Queryable): Promise<OnlyStore> {
  const rows = await db.query<StoreRow>(`SELECT ${storeColumns} FROM stores s WHERE s.deleted_at IS NULL LIMIT 2`);
  if (rows.length === 0) return { ok: false, reason: 'no_store' };
  if (rows.length > 1) return { ok: false, reason: 'several_stores' };
  return { ok: true, store: toStore(rows[0]!) };
}

/** Live stores in slug order, after `afterSlug` (keyset pagination). */
export async function listStores(db: Queryable, { afterSlug = '', limit = 100 } = {}): Promise<StoreContext[]> {
  const rows = await db.query<StoreRow>(
    `SELECT ${storeColumns} FROM stores s WHERE s.deleted_at IS NULL AND s.slug > $1 ORDER BY s.slug LIMIT $2`,
    [afterSlug, limit],
  );
  return rows.map(toStore);
}

/** What every instance's directory needs to know about the deployment as a whole. */
export interface DeploymentStores {
  /** Live stores. */
  live: number;
  /** Whether any store has a host. */
  hosted: boolean;
  /** A live store's id (the only one when `live` is 1). */
  anyId: string | null;
}

export async function deploymentStores(db: Queryable): Promise<DeploymentStores> {
  const [row] = await db.query<{ live: number; hosted: boolean; any_id: string | null }>(
    `SELECT (SELECT count(*)::int FROM stores WHERE deleted_at IS NULL) AS live,
            EXISTS (SELECT 1 FROM store_hosts) AS hosted,
            (SELECT id FROM stores WHERE deleted_at IS NULL ORDER BY slug LIMIT 1) AS any_id`,
  );
  return { live: row!.live, hosted: row!.hosted, anyId: row!.any_id };
}

/** A change the feed reports: the store as it is now, or deleted. */
export interface StoreChange {
  id: string;
  version: number;
  store: StoreContext | null;
}

/** Stores changed after `version`, oldest change first, at most `limit`. */
export async function storeChangesAfter(db: Queryable, version: number, limit = 1000): Promise<StoreChange[]> {
  const rows = await db.query<StoreRow>(
    `SELECT ${storeColumns} FROM stores s WHERE s.version > $1 ORDER BY s.version LIMIT $2`,
    [version, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    version: Number(row.version),
    store: row.deleted_at === null ? toStore(row) : null,
  }));
}

/** The feed's newest version: where an instance starting now begins to follow it. */
export async function latestStoreVersion(db: Queryable): Promise<number> {
  const [row] = await db.query<{ v: string | null }>('SELECT max(version)::text AS v FROM stores');
  return Number(row?.v ?? 0);
}
