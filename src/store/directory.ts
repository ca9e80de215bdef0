import { isUuid, type Queryable } from '../storage/database.js';
import {
  deploymentStores,
  firstStoreId,
  latestStoreVersion,
  loadStore,
  storeChangesAfter,
  type DeploymentStores,
  type OnlyStore,
  type StoreContext,
} from './store.js';

/** Stores (and host names) an instance keeps at most; the least recently used beyond go. */
export const storeCacheLimit = 10_000;
/** How often an instance reads the change feed: a change anywhere is seen within this and a read. */
export const storeFeedIntervalMs = 1_000;

/** A Map used as a least-recently-used cache of bounded size. */
class Recent<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly limit: number) {}

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  deleteWhere(matches: (value: V) => boolean): void {
    for (const [key, value] of this.entries) if (matches(value)) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Which store a request is for, by its host. Each instance keeps the stores it has served (bounded)
 * and follows the change feed (`refresh`, every second from the service), so a change made on any
 * instance is seen everywhere within two seconds, and only the changed stores are read again.
 */
export class StoreDirectory {
  private readonly stores: Recent<string, StoreContext>;
  /** Host name → store id. */
  private readonly hosts: Recent<string, string>;
  /** Slug → store id, for the platform's calls that name a store by its slug. */
  private readonly slugs: Recent<string, string>;
  /**
   * Hosts that named no store when last read, so a stray host costs one read; kept apart and
   * smaller, so a spray of made-up hosts cannot push the stores' own hosts out of the cache.
   */
  private readonly unknownHosts: Recent<string, true>;
  private deployment: Promise<DeploymentStores> | undefined;
  /** What `deployment` resolved to, for the readers that must not wait (see soleStoreId). */
  private deploymentRead: DeploymentStores | undefined;
  private cursor: number | undefined;
  /** Raised by every feed read that found changes: a read begun before it caches nothing. */
  private generation = 0;

  constructor(
    private readonly db: Queryable,
    limit = storeCacheLimit,
  ) {
    this.stores = new Recent(limit);
    this.hosts = new Recent(limit);
    this.slugs = new Recent(limit);
    this.unknownHosts = new Recent(Math.max(1, Math.floor(limit / 10)));
  }

  /**
   * The store of a request on `host` (normalized; null when the request had none). A deployment
   * whose only store has no hosts resolves every request to it.
   */
  async resolve(host: string | null): Promise<StoreContext | null> {
    const deployment = await this.deploymentStores();
    if (deployment.live === 1 && !deployment.hosted) return this.byId(deployment.anyId!);
    if (host === null) return null;
    const known = this.hosts.get(host);
    if (known !== undefined) return this.byId(known);
    if (this.unknownHosts.get(host) !== undefined) return null;
    const generation = this.generation;
    const store = await loadStore(this.db, { host });
    if (generation === this.generation) {
      if (store === null) this.unknownHosts.set(host, true);
      else {
        this.hosts.set(host, store.id);
        this.stores.set(store.id, store);
      }
    }
    return store;
  }

  /** A live store by id, from the cache when it is there. */
  async byId(id: string): Promise<StoreContext | null> {
    const cached = this.stores.get(id);
    if (cached !== undefined) return cached;
    const generation = this.generation;
    const store = await loadStore(this.db, { id });
    if (store !== null && generation === this.generation) this.stores.set(id, store);
    return store;
  }

  /**
   * A live store named by an operator or a backend: its id (a UUID, or the first store's), else its
   * slug, as findStoreNamed reads it; from the cache when it is there.
   */
  async named(name: string): Promise<StoreContext | null> {
    if (isUuid(name) || name === firstStoreId) {
      const byId = await this.byId(name);
      if (byId !== null) return byId;
    }
    const known = this.slugs.get(name);
    if (known !== undefined) return this.byId(known);
    const generation = this.generation;
    const store = await loadStore(this.db, { slug: name });
    if (store !== null && generation === this.generation) {
      this.slugs.set(name, store.id);
      this.stores.set(store.id, store);
    }
    return store;
  }

  /** The deployment's only store, or why there is none to name, as onlyStore says it: from the cache. */
  async only(): Promise<OnlyStore> {
    const deployment = await this.deploymentStores();
    if (deployment.live > 1) return { ok: false, reason: 'several_stores' };
    const store = deployment.live === 1 ? await this.byId(deployment.anyId!) : null;
    return store === null ? { ok: false, reason: 'no_store' } : { ok: true, store };
  }

  /** The deployment's only store (a single-store deployment, the tests); throws when there is not exactly one. */
  async get(): Promise<StoreContext> {
    const only = await this.only();
    if (!only.ok) throw new Error(`the deployment has not exactly one store (${only.reason})`);
    return only.store;
  }

  /** Forgets everything cached: the next request reads afresh. */
  invalidate(): void {
    this.generation += 1;
    this.stores.clear();
    this.hosts.clear();
    this.slugs.clear();
    this.unknownHosts.clear();
    this.deployment = undefined;
    this.deploymentRead = undefined;
  }

  /** How many stores are cached (for the tests of the bound). */
  get cachedStores(): number {
    return this.stores.size;
  }

  /** One read of the change feed: every store changed since the last read is dropped from the cache. */
  async refresh(): Promise<number> {
    if (this.cursor === undefined) {
      this.cursor = await latestStoreVersion(this.db);
      // Whatever was cached before the feed's starting point was known may be older than it.
      this.invalidate();
      return 0;
    }
    let changed = 0;
    for (;;) {
      const changes = await storeChangesAfter(this.db, this.cursor);
      for (const change of changes) {
        this.stores.delete(change.id);
        // Hosts it had (whichever are cached) and hosts it has now (a host cached as naming none).
        this.hosts.deleteWhere((id) => id === change.id);
        this.slugs.deleteWhere((id) => id === change.id);
        for (const host of change.store?.hosts ?? []) this.unknownHosts.delete(host);
        this.cursor = change.version;
      }
      changed += changes.length;
      if (changes.length < 1000) break;
    }
    if (changed > 0) {
      this.generation += 1;
      this.deployment = undefined;
      this.deploymentRead = undefined;
    }
    return changed;
  }

  /**
   * The id of the deployment's only store, when the last read found exactly one; nothing is read
   * now. For what happens outside every store (a refused probe) in a one-store deployment.
   */
  soleStoreId(): string | undefined {
    const read = this.deploymentRead;
    return read?.live === 1 ? (read.anyId ?? undefined) : undefined;
  }

  private deploymentStores(): Promise<DeploymentStores> {
    this.deployment ??= deploymentStores(this.db).then(
      (read) => (this.deploymentRead = read),
      (error: unknown) => {
        this.deployment = undefined;
        throw error;
      },
    );
    return this.deployment;
  }
}
