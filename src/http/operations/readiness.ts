import type { CounterStore } from '../../storage/counters.js';
import type { Queryable } from '../../storage/database.js';
import type { StoreDirectory } from '../../store/directory.js';
import type { StoreContext } from '../../store/store.js';

export interface Readiness {
  ready: boolean;
  checks: { database: boolean; cache: boolean; search: boolean; store: boolean };
  store: StoreContext | null;
}

export interface ReadinessDeps {
  db: Queryable;
  counters: CounterStore;
  searchUrl: string | undefined;
  stores: Pick<StoreDirectory, 'resolve'>;
  /** Told every fresh result (for metrics). */
  checked?: (checks: Readiness['checks']) => void;
}

const checkTimeoutMs = 1_000;
// Probes may come from several load balancers every second; one round of checks serves them all.
const resultReuseMs = 1_000;

function within<T>(work: () => Promise<T>, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), checkTimeoutMs);
  });
  return Promise.race([work().catch(() => fallback), timeout]).finally(() => clearTimeout(timer));
}

async function searchIsHealthy(searchUrl: string): Promise<boolean> {
  const response = await fetch(new URL('health', searchUrl.endsWith('/') ? searchUrl : `${searchUrl}/`), {
    signal: AbortSignal.timeout(checkTimeoutMs),
    // A redirect means the health endpoint itself was not reached (a proxy's sign-in page, a
    // moved host): whatever answers at the other end says nothing about the search engine.
    redirect: 'manual',
  });
  await response.body?.cancel();
  return response.ok;
}

/**
 * The four dependency checks in parallel, each bounded to one second. The store is the one the
 * probe's host names: on a host that names none (a load balancer probing by address) the check is
 * that the stores can be read, and no store is reported.
 */
export function createReadinessProbe(deps: ReadinessDeps): (host: string | null) => Promise<Readiness> {
  let last: { atMs: number; result: Promise<Omit<Readiness['checks'], 'store'>> } | undefined;
  const probe = async () => {
    const searchUrl = deps.searchUrl;
    const [database, cache, search] = await Promise.all([
      within(async () => (await deps.db.query('SELECT 1 AS ok')).length === 1, false),
      within(() => deps.counters.ping(), false),
      searchUrl === undefined ? true : within(() => searchIsHealthy(searchUrl), false),
    ]);
    return { database, cache, search };
  };
  return async (host) => {
    const nowMs = performance.now();
    if (last === undefined || nowMs - last.atMs >= resultReuseMs) last = { atMs: nowMs, result: probe() };
    const [dependencies, store] = await Promise.all([
      last.result,
      within<StoreContext | null | undefined>(() => deps.stores.resolve(host), undefined),
    ]);
    const checks = { ...dependencies, store: store !== undefined };
    deps.checked?.(checks);
    return { ready: Object.values(checks).every(Boolean), checks, store: store ?? null };
  };
}
