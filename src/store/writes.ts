import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { isOnRpId, type Config, type IdentityMode } from '../config.js';
import { inStore, type Database, type Queryable, type StoreQueryable } from '../storage/database.js';
import {
  firstStoreId,
  languagesOf,
  mergeLanguages,
  settingsOf,
  type NewStore,
  type StoreChanges,
  type StoreContext,
  type StoreLanguages,
} from './context.js';
import { findStoreNamed, loadStore, onlyStore, type OnlyStore } from './reads.js';

/** A store made, changed and deleted, each change under the store-change lock and on the feed. */

// Any constant works; it only has to be the same for every instance of the service.
const storeChangeLockKey = 727_274_013;

/**
 * Store changes take turns: a transaction-scoped advisory lock, released by the commit. A changed
 * store takes the feed's next version while it is held, so versions commit in the order they are
 * taken and a reader of the feed never skips one committed late.
 */
export async function lockStoreChanges(tx: Queryable): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [storeChangeLockKey]);
}

export async function bumpStoreVersion(tx: Queryable, storeId: string, now: Date): Promise<void> {
  await tx.query(`UPDATE stores SET version = nextval('store_versions'), updated_at = $2 WHERE id = $1`, [
    storeId,
    now,
  ]);
}

/** Starts a change of a store in `tx`: see lockStoreChanges. */
async function beginStoreChange(tx: Queryable, storeId: string, now: Date): Promise<void> {
  await lockStoreChanges(tx);
  await bumpStoreVersion(tx, storeId, now);
}

/** Puts a store written some other way (an import) on the change feed, keeping its updated_at. */
export async function announceStoreChange(tx: Queryable, storeId: string): Promise<void> {
  await lockStoreChanges(tx);
  await tx.query(`UPDATE stores SET version = nextval('store_versions') WHERE id = $1`, [storeId]);
}

/**
 * Creates the store row from configuration on a deployment's first start, and never again. Under
 * the store-change lock: the insert takes the feed's first version (its column's default) before
 * it commits, so an instance starting at the same moment would otherwise find the sequence used,
 * insert nothing, and read no store until the other's commit, answering 404 meanwhile.
 */
export async function ensureStore(db: Database, clock: Clock, initial: Config['initialStore']): Promise<void> {
  await db.transaction(async (tx) => {
    await lockStoreChanges(tx);
    await insertFirstStore(tx, clock, initial);
  });
}

async function insertFirstStore(tx: Queryable, clock: Clock, initial: Config['initialStore']): Promise<void> {
  const now = clock.now();
  // The sequence is untouched only while no store was ever made: a deployment whose stores were
  // all deleted gets none back from a restart.
  await tx.query(
    `INSERT INTO stores (id, slug, name, status, identity_mode, settings, created_at, updated_at)
     SELECT $1, $1, $2, 'active', $3, $4::text::jsonb, $5, $5
      WHERE NOT (SELECT is_called FROM store_versions)
     ON CONFLICT (id) DO NOTHING`,
    [
      firstStoreId,
      initial.name,
      initial.identityMode,
      JSON.stringify({ 'auth.customer_verification_required': initial.verificationRequired }),
      now,
    ],
  );
}

/** Why a store's cookie domain cannot be: it covers none of its hosts, or a host of another store. */
export type CookieDomainRefusal =
  { ok: false; reason: 'cookie_domain_off_hosts' } | { ok: false; reason: 'cookie_domain_shared'; host: string };

export type StoreCreateResult =
  | { ok: true; store: StoreContext }
  | { ok: false; reason: 'slug_taken' }
  | { ok: false; reason: 'host_taken'; host: string }
  | HostUnderCookieDomain
  | CookieDomainRefusal;

/** A host under another store's cookie domain would receive that store's session cookies. */
export type HostUnderCookieDomain = { ok: false; reason: 'host_under_cookie_domain'; host: string };

/** Whether `host` is `domain` or under it: a cookie for the domain reaches it. */
const isUnder = isOnRpId;

/**
 * A store's cookie domain checked against the hosts: it must cover one of the store's own, and no
 * other store's, whose shoppers' browsers would otherwise carry this store's session cookie to a
 * host this store does not control. Run under the store-change lock, so a host added to another
 * store meanwhile is seen (addStoreHost checks the other way round under the same lock).
 */
async function checkCookieDomain(
  tx: Queryable,
  storeId: string,
  domain: string,
  hosts: readonly string[],
): Promise<CookieDomainRefusal | null> {
  if (!hosts.some((host) => isUnder(host, domain))) return { ok: false, reason: 'cookie_domain_off_hosts' };
  const [other] = await tx.query<{ host: string }>(
    `SELECT host FROM store_hosts WHERE store_id <> $1 AND (host = $2 OR right(host, length($2) + 1) = '.' || $2)
      ORDER BY host LIMIT 1`,
    [storeId, domain],
  );
  return other === undefined ? null : { ok: false, reason: 'cookie_domain_shared', host: other.host };
}

/** The first of `hosts` under another store's cookie domain, which would receive that store's cookies. */
export async function hostUnderOtherCookieDomain(
  tx: Queryable,
  storeId: string,
  hosts: readonly string[],
): Promise<string | undefined> {
  if (hosts.length === 0) return undefined;
  const rows = await tx.query<{ cookie_domain: string }>(
    'SELECT cookie_domain FROM stores WHERE id <> $1 AND deleted_at IS NULL AND cookie_domain IS NOT NULL',
    [storeId],
  );
  return hosts.find((host) => rows.some((row) => isUnder(host, row.cookie_domain)));
}

/** Adds hosts to a store in `tx`; those another store holds are left out. The hosts added. */
export async function insertHosts(tx: Queryable, storeId: string, hosts: readonly string[]): Promise<Set<string>> {
  if (hosts.length === 0) return new Set();
  const rows = await tx.query<{ host: string }>(
    'INSERT INTO store_hosts (host, store_id) SELECT unnest($1::text[]), $2 ON CONFLICT (host) DO NOTHING RETURNING host',
    [hosts, storeId],
  );
  return new Set(rows.map((row) => row.host));
}

/**
 * Makes a store with its hosts (already normalized) in `tx`, which may hold other work of the same
 * call (an idempotency key). The unique slug and hosts decide a race (a second insert waits for
 * the first to commit or roll back); a refusal rolls back to a savepoint, so it writes nothing and
 * leaves `tx` usable. The store-change lock is taken after the hosts, for the cookie domains' checks
 * and the feed's version, so creates take turns only for their end.
 */
export async function insertStore(tx: Queryable, clock: Clock, store: NewStore): Promise<StoreCreateResult> {
  const now = clock.now();
  const id = randomUUID();
  const hosts = store.hosts ?? [];
  // The relying party is fixed here (the first host given, unless named) so that adding hosts
  // later never moves it and strands the store's passkeys.
  const rpId = store.webauthnRpId ?? hosts[0] ?? null;
  await tx.query('SAVEPOINT new_store');
  // Version 0 until the feed's next one is taken under the lock: a version taken earlier could
  // commit after a later one, and a reader past it would never see this store.
  const inserted = await tx.query(
    `INSERT INTO stores (id, slug, name, status, identity_mode, settings, allowed_origins, mail_from, sms_sender,
                         webauthn_rp_id, cookie_domain, version, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9, $10, $12, 0, $11, $11)
     ON CONFLICT (slug) WHERE deleted_at IS NULL DO NOTHING RETURNING 1`,
    [
      id,
      store.slug,
      store.name,
      store.status ?? 'active',
      store.identityMode,
      JSON.stringify(settingsOf(store)),
      store.allowedOrigins ?? [],
      store.mailFrom ?? null,
      store.smsSender ?? null,
      rpId,
      now,
      store.cookieDomain ?? null,
    ],
  );
  if (inserted.length === 0) {
    await tx.query('ROLLBACK TO SAVEPOINT new_store');
    return { ok: false, reason: 'slug_taken' };
  }
  const added = await insertHosts(tx, id, hosts);
  const taken = hosts.find((host) => !added.has(host));
  if (taken !== undefined) {
    await tx.query('ROLLBACK TO SAVEPOINT new_store');
    return { ok: false, reason: 'host_taken', host: taken };
  }
  await lockStoreChanges(tx);
  const refusal = await checkHostsAndCookies(tx, id, hosts, store.cookieDomain ?? null);
  if (refusal !== null) {
    await tx.query('ROLLBACK TO SAVEPOINT new_store');
    return refusal;
  }
  await tx.query('RELEASE SAVEPOINT new_store');
  await bumpStoreVersion(tx, id, now);
  return { ok: true, store: (await loadStore(tx, { id }))! };
}

/** A new store's hosts and cookie domain against the other stores' (under the store-change lock). */
async function checkHostsAndCookies(
  tx: Queryable,
  storeId: string,
  hosts: readonly string[],
  cookieDomain: string | null,
): Promise<HostUnderCookieDomain | CookieDomainRefusal | null> {
  const reached = await hostUnderOtherCookieDomain(tx, storeId, hosts);
  if (reached !== undefined) return { ok: false, reason: 'host_under_cookie_domain', host: reached };
  return cookieDomain === null ? null : checkCookieDomain(tx, storeId, cookieDomain, hosts);
}

/** Makes a store with its hosts (already normalized); nothing is made when the slug or a host is taken. */
export async function createStore(db: Database, clock: Clock, store: NewStore): Promise<StoreCreateResult> {
  return db.transaction((tx) => insertStore(tx, clock, store));
}

export type StoreUpdateResult =
  /** `strandedPasskeys`: passkeys made for the relying party ID this change moved away from. */
  | { ok: true; store: StoreContext; strandedPasskeys: number }
  | { ok: false; reason: 'identity_mode_in_use'; customers: number }
  | CookieDomainRefusal
  | { ok: false; reason: 'default_language_not_spoken'; current: StoreLanguages }
  | { ok: false; reason: 'no_store' | 'several_stores' };

export interface StoreUpdateOptions {
  /** The store to change, by slug or id; without it, the deployment's only store. */
  store?: string | undefined;
  /** Switch the identity mode even while customers exist. */
  force?: boolean;
  /**
   * Counts the store's customers inside the update's transaction, after the store row is locked;
   * needed to switch the identity mode without `force`. Handed in (countCustomers of
   * src/auth/tables/customers.ts) because the customers table is the domain's, and the store sits
   * below the domain.
   */
  countCustomers?: (tx: StoreQueryable) => Promise<number>;
  /** Counts the store's passkeys (countStorePasskeys of src/auth/tables/passkeys.ts), handed in likewise. */
  countPasskeys?: (tx: StoreQueryable) => Promise<number>;
}

async function targetStore(db: Queryable, store: string | undefined): Promise<OnlyStore> {
  if (store === undefined) return onlyStore(db);
  const found = await findStoreNamed(db, store);
  return found === null ? { ok: false, reason: 'no_store' } : { ok: true, store: found };
}

/** Applies operator changes. Switching the identity mode under existing customers needs `force`. */
export async function updateStore(
  db: Database,
  clock: Clock,
  changes: StoreChanges,
  { store, force = false, countCustomers, countPasskeys }: StoreUpdateOptions = {},
): Promise<StoreUpdateResult> {
  const target = await targetStore(db, store);
  if (!target.ok) return target;
  const storeId = target.store.id;
  return db.transaction(async (tx) => {
    const current = await tx.query<{ identity_mode: IdentityMode; settings: Record<string, unknown> }>(
      'SELECT identity_mode, settings FROM stores WHERE id = $1 AND deleted_at IS NULL FOR UPDATE',
      [storeId],
    );
    if (current[0] === undefined) return { ok: false, reason: 'no_store' };
    const settings = settingsOf(changes);
    if (changes.languages !== undefined) {
      const languages = languagesOf(current[0].settings);
      const merged = mergeLanguages(languages, changes.languages);
      if (merged === null) return { ok: false, reason: 'default_language_not_spoken', current: languages };
      // Both written, so the pair kept is the one checked.
      settings['i18n.languages'] = merged.languages;
      settings['i18n.default_language'] = merged.defaultLanguage;
    }
    if (changes.identityMode !== undefined && changes.identityMode !== current[0].identity_mode && !force) {
      // A caller that forgot the count must not switch the mode under customers unchecked.
      if (countCustomers === undefined) throw new Error('switching the identity mode needs countCustomers or force');
      const customers = await countCustomers(inStore(tx, storeId));
      if (customers > 0) return { ok: false, reason: 'identity_mode_in_use', customers };
    }
    const now = clock.now();
    await beginStoreChange(tx, storeId, now);
    // Read under the lock, and only for the changes checked against it: the hosts and relying party are current.
    const checked = changes.cookieDomain !== undefined || changes.webauthnRpId !== undefined;
    const before = checked ? (await loadStore(tx, { id: storeId }))! : target.store;
    if (changes.cookieDomain !== undefined && changes.cookieDomain !== null) {
      const refusal = await checkCookieDomain(tx, storeId, changes.cookieDomain, before.hosts);
      if (refusal !== null) return refusal;
    }
    const rpMoved = changes.webauthnRpId !== undefined && changes.webauthnRpId !== before.webauthnRpId;
    const strandedPasskeys = rpMoved && countPasskeys !== undefined ? await countPasskeys(inStore(tx, storeId)) : 0;
    const optional = (value: string | null | undefined) => (value === undefined ? null : [value]);
    await tx.query(
      `UPDATE stores SET name = COALESCE($2, name), status = COALESCE($3, status),
              identity_mode = COALESCE($4, identity_mode), settings = settings || $5::text::jsonb,
              allowed_origins = COALESCE($6, allowed_origins),
              mail_from = CASE WHEN $7::text[] IS NULL THEN mail_from ELSE ($7::text[])[1] END,
              sms_sender = CASE WHEN $8::text[] IS NULL THEN sms_sender ELSE ($8::text[])[1] END,
              webauthn_rp_id = CASE WHEN $9::text[] IS NULL THEN webauthn_rp_id ELSE ($9::text[])[1] END,
              cookie_domain = CASE WHEN $10::text[] IS NULL THEN cookie_domain ELSE ($10::text[])[1] END
        WHERE id = $1`,
      [
        storeId,
        changes.name ?? null,
        changes.status ?? null,
        changes.identityMode ?? null,
        JSON.stringify(settings),
        changes.allowedOrigins ?? null,
        optional(changes.mailFrom),
        optional(changes.smsSender),
        optional(changes.webauthnRpId),
        optional(changes.cookieDomain),
      ],
    );
    return { ok: true, store: (await loadStore(tx, { id: storeId }))!, strandedPasskeys };
  });
}

/**
 * Deletes a store: at once it stops resolving and its hosts and slug are free; what it holds is
 * erased afterwards, in batches (eraseDeletedStores). False when there was no such live store.
 */
export async function markStoreDeleted(db: Database, clock: Clock, storeId: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const now = clock.now();
    await lockStoreChanges(tx);
    const rows = await tx.query(
      `UPDATE stores SET deleted_at = $2, status = 'closed' WHERE id = $1 AND deleted_at IS NULL RETURNING 1`,
      [storeId, now],
    );
    if (rows.length === 0) return false;
    await tx.query('DELETE FROM store_hosts WHERE store_id = $1', [storeId]);
    await bumpStoreVersion(tx, storeId, now);
    return true;
  });
}

/** Stores deleted and not yet erased. */
export async function deletedStores(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ id: string }>('SELECT id FROM stores WHERE deleted_at IS NOT NULL ORDER BY deleted_at');
  return rows.map((row) => row.id);
}

/** Removes a deleted store's own row, once nothing of it is left (the foreign keys say so otherwise). */
export async function dropStoreRow(db: Queryable, storeId: string): Promise<void> {
  await db.query('DELETE FROM stores WHERE id = $1 AND deleted_at IS NOT NULL', [storeId]);
}

/** The identity modes the live stores use: the channels the deployment must be able to send on. */
export async function identityModesInUse(db: Queryable): Promise<IdentityMode[]> {
  const rows = await db.query<{ identity_mode: IdentityMode }>(
    'SELECT DISTINCT identity_mode FROM stores WHERE deleted_at IS NULL ORDER BY identity_mode',
  );
  return rows.map((row) => row.identity_mode);
}
