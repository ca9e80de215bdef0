import { countCustomers } from '../auth/tables/customers.js';
import { countStorePasskeys } from '../auth/tables/passkeys.js';
import { fail, ok, type Result } from '../auth/result.js';
import { deliveryProblem } from '../config.js';
import { runOnce, type KeptAnswer } from '../store/idempotency.js';
import { storeChangeDetails } from '../store/fields.js';
import {
  addStoreHost,
  createStore as createStoreRow,
  insertStore,
  loadStore,
  markStoreDeleted,
  onlyStore,
  removeStoreHost,
  updateStore,
  type NewStore,
  type StoreChanges,
  type StoreContext,
  type StoreLanguages,
} from '../store/store.js';
import { recordChange, type Actor, type PlatformDeps } from './actor.js';

/**
 * A store made, changed, deleted, and its hosts added and removed: once, for the admin API and the
 * command line alike. Each operation checks what the deployment can do, changes the store, records
 * the change in its trail under its actor and announces it; the callers only read their input and
 * translate the result.
 */

/** The deployment has no transport for the identity mode: `variable` is what to set. */
type NoTransport = { variable: string; reason: string };
type HostTaken = { host: string; owner: string | null };

export type StoreRefusal =
  | 'no_transport'
  | 'slug_taken'
  | 'host_taken'
  | 'host_under_cookie_domain'
  | 'cookie_domain_off_hosts'
  | 'cookie_domain_shared'
  | 'identity_mode_in_use'
  | 'default_language_not_spoken'
  | 'no_such_host'
  | 'relying_party_in_use'
  | 'idempotency_key_reused'
  | 'no_store';

/** What a refusal tells the caller; only the kinds that carry facts fill theirs. */
export interface RefusalFacts {
  transport?: NoTransport;
  taken?: HostTaken;
  /** The host or, for a cookie domain, the other store's host it would cover. */
  host?: string;
  customers?: number;
  passkeys?: number;
  languages?: StoreLanguages;
}

export type StoreResult<T> = Result<T, StoreRefusal, RefusalFacts>;

const refused = (error: StoreRefusal, facts: RefusalFacts = {}) => fail<StoreRefusal, RefusalFacts>(error, facts);

function transportFor(deps: PlatformDeps, mode: NewStore['identityMode'] | undefined) {
  const problem = mode === undefined ? undefined : deliveryProblem(deps.config, mode);
  return problem === undefined ? null : refused('no_transport', { transport: problem });
}

async function hostTaken(deps: PlatformDeps, host: string) {
  const owner = await loadStore(deps.db, { host });
  return refused('host_taken', { taken: { host, owner: owner?.slug ?? null } });
}

/**
 * `unhosted`: the slug of the store that was the only one and had no host, which answered on every
 * host and now answers on none. With `once` (an idempotency key), a retry within 24 hours gets the
 * first call's kept answer (`replayed`) and makes nothing.
 */
export type StoreCreated =
  { replayed: false; store: StoreContext; unhosted: string | undefined } | { replayed: true; kept: KeptAnswer };

export interface Once {
  key: string;
  hash: string;
  /** The answer kept for a retry, in the caller's own terms. */
  answer: (created: { store: StoreContext; unhosted: string | undefined }) => KeptAnswer;
}

/** A refusal inside the idempotent transaction, thrown so the key rolls back with the work. */
class Refused extends Error {
  constructor(readonly refusal: ReturnType<typeof refused>) {
    super(refusal.error);
  }
}

export async function createStore(
  deps: PlatformDeps,
  actor: Actor,
  store: NewStore,
  once?: Once,
): Promise<StoreResult<StoreCreated>> {
  const noTransport = transportFor(deps, store.identityMode);
  if (noTransport !== null) return noTransport;
  const { db, clock } = deps;
  const before = await onlyStore(db);
  const unhosted = before.ok && before.store.hosts.length === 0 ? before.store.slug : undefined;
  let made: StoreContext;
  if (once === undefined) {
    const result = await createStoreRow(db, clock, store);
    if (!result.ok) return createRefusal(deps, result);
    made = result.store;
  } else {
    let madeHere: StoreContext | undefined;
    try {
      const kept = await runOnce(db, clock, once.key, once.hash, async (tx) => {
        const result = await insertStore(tx, clock, store);
        if (!result.ok) throw new Refused(await createRefusal(deps, result));
        madeHere = result.store;
        return once.answer({ store: result.store, unhosted });
      });
      if ('mismatch' in kept) return refused('idempotency_key_reused');
      if (kept.replayed) return ok({ replayed: true, kept });
    } catch (error) {
      if (error instanceof Refused) return error.refusal;
      throw error;
    }
    made = madeHere!;
  }
  await recordChange(deps, actor, made.id, { slug: store.slug }, 'store.created');
  return ok({ replayed: false, store: made, unhosted });
}

async function createRefusal(
  deps: PlatformDeps,
  result: Exclude<Awaited<ReturnType<typeof createStoreRow>>, { ok: true }>,
) {
  switch (result.reason) {
    case 'slug_taken':
    case 'cookie_domain_off_hosts':
      return refused(result.reason);
    case 'host_taken':
      return hostTaken(deps, result.host);
    case 'host_under_cookie_domain':
    case 'cookie_domain_shared':
      return refused(result.reason, { host: result.host });
  }
}

/** `strandedPasskeys`: passkeys made for the relying party ID this change moved away from. */
export type StoreChanged = { store: StoreContext; strandedPasskeys: number };

/** A merge of `changes` into the store; switching the identity mode under customers needs `force`. */
export async function changeStore(
  deps: PlatformDeps,
  actor: Actor,
  store: StoreContext,
  changes: StoreChanges,
  force = false,
): Promise<StoreResult<StoreChanged>> {
  const noTransport = transportFor(deps, changes.identityMode);
  if (noTransport !== null) return noTransport;
  const options = { store: store.id, force, countCustomers, countPasskeys: countStorePasskeys };
  const result = await updateStore(deps.db, deps.clock, changes, options);
  if (!result.ok) {
    switch (result.reason) {
      case 'identity_mode_in_use':
        return refused(result.reason, { customers: result.customers });
      case 'cookie_domain_shared':
        return refused(result.reason, { host: result.host });
      case 'cookie_domain_off_hosts':
        return refused(result.reason);
      case 'default_language_not_spoken':
        return refused(result.reason, { languages: result.current });
      case 'no_store':
      case 'several_stores':
        return refused('no_store');
    }
  }
  await recordChange(deps, actor, store.id, storeChangeDetails(changes));
  return ok({ store: result.store, strandedPasskeys: result.strandedPasskeys });
}

/**
 * At once the store stops answering and its slug and hosts are free; the janitor erases what it
 * held, its trail included, so the deletion is the caller's to log.
 */
export async function deleteStore(deps: PlatformDeps, store: StoreContext): Promise<StoreResult<StoreContext>> {
  if (!(await markStoreDeleted(deps.db, deps.clock, store.id))) return refused('no_store');
  await deps.announce?.();
  return ok(store);
}

/** One more host (normalized), or one fewer; `force` removes the last host of its passkeys' relying party. */
export async function changeHost(
  deps: PlatformDeps,
  actor: Actor,
  store: StoreContext,
  change: { add: string } | { remove: string; force: boolean },
): Promise<StoreResult<StoreContext>> {
  const options = { countPasskeys: countStorePasskeys, deploymentRpId: deps.config.webauthn.rpId };
  const host = 'add' in change ? change.add : change.remove;
  const result =
    'add' in change
      ? await addStoreHost(deps.db, deps.clock, store.id, host, options)
      : await removeStoreHost(deps.db, deps.clock, store.id, host, { ...options, force: change.force });
  if (!result.ok) {
    switch (result.reason) {
      case 'host_taken':
        return hostTaken(deps, host);
      case 'relying_party_in_use':
        return refused(result.reason, { passkeys: result.passkeys, host });
      case 'host_under_cookie_domain':
      case 'no_such_host':
      case 'no_store':
        return refused(result.reason, { host });
    }
  }
  await recordChange(deps, actor, store.id, { ['add' in change ? 'host_added' : 'host_removed']: host });
  return ok(result.store);
}
