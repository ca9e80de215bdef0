import type { Services } from '../../services.js';
import { MemoryCounterStore } from '../../storage/counters.js';
import { RateLimiter, type Refusal } from './rate-limit.js';
import { createReadinessProbe, type Readiness } from '../operations/readiness.js';

/** Addresses the probe counters keep at most; probes come from a few load balancers, not the public. */
const probeCounterEntries = 10_000;

/**
 * What the routes work with: the services plus the parts only the edge needs (rate limits, the
 * readiness probe). The edge builds these itself, so the composition root knows nothing of HTTP.
 * Each route plugin takes only the parts it uses (its file's `type Deps = Pick<Edge, …>`); the app
 * hands every plugin the whole edge.
 */
export interface Edge extends Services {
  /** Readiness as a probe on `host` sees it (null: the request named none). */
  readiness: (host: string | null) => Promise<Readiness>;
  limiter: RateLimiter;
  /**
   * Counts the health probes, in this instance's memory only: a load balancer's probes need no
   * shared counter, and a Redis round trip on each would make liveness depend on Redis's pace.
   */
  probeLimiter: RateLimiter;
}

export function edgeOf(services: Services): Edge {
  const { config, db, counters, clock, metrics, keys } = services;
  // Every refusal, by either limiter, is counted and recorded where it happens: once per request.
  const refused = ({ rule, storeId, requestId, clientAddress }: Refusal) => {
    metrics.rateLimited.inc({ limit: rule.name });
    // The trail is each store's: a refusal outside every store (a platform call, a probe) goes to
    // the only store's trail, and with several stores is only counted.
    const trail = storeId ?? services.store.soleStoreId();
    if (trail === undefined) return;
    services.audit({ storeId: trail, event: 'rate_limited', clientAddress, requestId, details: { limit: rule.name } });
  };
  // Built over the services, not copied from them: a part swapped later (a test's store cache) is
  // the one the routes see.
  const parts: Omit<Edge, keyof Services> = {
    readiness: createReadinessProbe({
      db,
      counters,
      searchUrl: config.searchUrl,
      stores: services.store,
      checked: (checks) => {
        for (const [dependency, up] of Object.entries(checks)) metrics.dependencyUp.set({ dependency }, up ? 1 : 0);
      },
    }),
    limiter: new RateLimiter(counters, clock, keys.counters, refused),
    probeLimiter: new RateLimiter(
      new MemoryCounterStore(probeCounterEntries),
      clock,
      keys.counters,
      refused,
      probeCounterEntries,
    ),
  };
  return Object.assign(Object.create(services) as Services, parts);
}
