import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkCsrf, onCookieDomain, storeCookies, type CsrfOptions } from './csrf.js';
import type { Edge } from './edge.js';
import type { StoreFeature } from './declare.js';
import { resolveAccount, type Account } from './kit.js';
import type { StoreLanguages } from '../../i18n/negotiate.js';
import { ProblemError } from './problems.js';
import { limits } from './rate-limit.js';
import { requestHost, type StoreContext } from '../../store/store.js';

/*
 * Every route lives in one of three scopes, and each scope owns the hooks its routes run (Fastify
 * encapsulation: a scope's hooks reach its own routes and the unknown paths under its prefix,
 * nothing else). The application's own hooks (the client key, common headers, the request log)
 * run first, for everything; CORS, which answers preflights before any scope's hook, wraps the
 * public and customer scopes (app.ts).
 *
 * - probes: counted by the instance's own in-memory limiter only; no CSRF check, and no CORS.
 * - public: platform metadata, the API documents, the sign-in page and every unknown path outside
 *   the customer's prefix: the any-call limit, then the CSRF check, then the unknown path's answer.
 * - customer: the store gate, then the any-call limit, then the CSRF check, then the unknown path's
 *   answer, which is also a route's while the store setting it belongs to (`feature`) is off;
 *   every answer no-store. Only here does a request get a store, and with it the `store` of its
 *   metrics and its log line.
 */

type Routes = FastifyPluginAsyncTypebox;

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The store setting this route belongs to. While it is off, the route answers as a path no
     * route has (404 not_found), before its body is read: see `answerMissingPath`.
     */
    feature?: StoreFeature;
    /**
     * The route needs the signed-in customer: the customer scope resolves the session cookie before
     * the body is validated (`request.account`), and answers 401 unauthenticated without one.
     */
    session?: boolean;
    /**
     * A provider's way back (OpenID Connect callback): the provider's form post is cross-site, so
     * the CSRF check is skipped (the sealed, single-use state cookie stands in for the token), and
     * a store that is not open is the route's to answer (a redirect back with an error), since
     * the shopper arrives by navigation, not from a script that reads a 503.
     */
    providerCallback?: boolean;
  }
  interface FastifyRequest {
    /** The signed-in customer of a `session` route (see accountOf); null on every other route. */
    account: Account | null;
    /**
     * The languages the request's problem answers may be written in: the store's, once the host
     * has named one, negotiated from `Accept-Language` only when a problem is answered, so a call
     * that succeeds parses no header. Null until then, and on the admin listener: such answers are
     * English whatever is asked, so they do not vary by it.
     */
    answerLanguages: StoreLanguages | null;
  }
}

export interface ScopeDeps {
  services: Pick<Edge, 'store' | 'limiter' | 'probeLimiter' | 'db' | 'clock' | 'config' | 'metrics'>;
  csrf: CsrfOptions;
  /** Answers a path no route has; see `unknownPathAnswer`. */
  unknownPath: (request: FastifyRequest) => Promise<never>;
}

/** Whether the request's store has the feature on; a route of no feature is always there. */
function featureOn(request: FastifyRequest, feature: StoreFeature | undefined): boolean {
  // Only the customer scope's routes belong to a feature, and there the store gate has run.
  return feature === undefined || request.store[feature];
}

async function countAndCheckCsrf(deps: ScopeDeps, request: FastifyRequest, store?: StoreContext): Promise<void> {
  await deps.services.limiter.consume(request, [[limits.anyCall, request.clientKey]], store?.id);
  checkCsrf(deps.csrf, request, store);
}

/**
 * The host a request was sent to, as stores are keyed: `Host`, or `X-Forwarded-Host` from a
 * trusted proxy (Fastify's trustProxy decides), without the port, normalized; null when unusable.
 */
export function hostOf(request: FastifyRequest): string | null {
  return requestHost(request.host);
}

/**
 * Answers, once the scope's checks have passed, a path no route has and a route of a feature the
 * store has off, both with `unknownPath`. Here in onRequest, before the body is read: Fastify would
 * otherwise parse it first, so a media type, a size or broken JSON could tell them apart.
 */
async function answerMissingPath(deps: ScopeDeps, request: FastifyRequest): Promise<void> {
  if (request.is404 || !featureOn(request, request.routeOptions.config.feature)) await deps.unknownPath(request);
}

/** The health probes: see the list above. */
export function probeScope(deps: ScopeDeps, routes: Routes): Routes {
  return async (app) => {
    // A load balancer asks every few seconds: its own in-process count is enough, and keeps a
    // probe's answer independent of the shared counters' pace.
    app.addHook('onRequest', async function probeLimit(request) {
      await deps.services.probeLimiter.consume(request, [[limits.anyCall, request.clientKey]]);
    });
    await app.register(routes);
  };
}

/** What is neither a probe nor a customer call; answers the unknown paths outside the customer's prefix. */
export function publicScope(deps: ScopeDeps, routes: Routes): Routes {
  return async (app) => {
    app.addHook('onRequest', async function publicGate(request) {
      // Counted in the host's store, as its customer calls are: the any-call limit is one per
      // address and store. Platform calls never wait on the stores, so a failed read counts it
      // outside every store instead.
      const store = await deps.services.store.resolve(hostOf(request)).catch(() => null);
      if (store !== null) request.answerLanguages = store;
      await countAndCheckCsrf(deps, request, store ?? undefined);
      await answerMissingPath(deps, request);
    });
    // Registered without a prefix, this scope's handler (and hooks) serve every path no other
    // scope's prefix claims. The hook above answers them first; the handler is what makes them ours.
    app.setNotFoundHandler(deps.unknownPath);
    await app.register(routes);
  };
}

/**
 * The customer's calls. Registered at a prefix with `answersUnknownPaths`, the scope also answers
 * every unknown path and wrong method under it, behind the same gate.
 */
export function customerScope(deps: ScopeDeps, routes: Routes, options: { answersUnknownPaths: boolean }): Routes {
  return async (app) => {
    app.addHook('onRequest', async function storeGate(request) {
      // The store gate comes before everything else: a shut shop answers nothing but 503, not
      // even a refusal that would tell the limit or the CSRF check was reached.
      const store = await deps.services.store.resolve(hostOf(request));
      if (store === null) {
        // Counted all the same (in no store's name): a spray of made-up hosts is limited like any call.
        await deps.services.limiter.consume(request, [[limits.anyCall, request.clientKey]]);
        throw new ProblemError('store_not_found');
      }
      request.store = store;
      request.answerLanguages = store;
      // Its label in this request's metrics (and its logins'): one Map read, nothing built.
      request.storeLabel = deps.services.metrics.storeLabels.of(store.id, store.slug);
      const callback = request.routeOptions.config.providerCallback === true;
      if (store.status !== 'active' && !callback) throw new ProblemError('store_unavailable');
      // Cookies for COOKIE_DOMAIN set on another host would be dropped by the browser: say so instead.
      if (!onCookieDomain(storeCookies(deps.services.config, store), request))
        throw new ProblemError('misdirected_request');
      if (callback) await deps.services.limiter.consume(request, [[limits.anyCall, request.clientKey]], store.id);
      else await countAndCheckCsrf(deps, request, store);
      await answerMissingPath(deps, request);
    });
    // After the body is read and before it is validated: without a session the answer is 401,
    // whatever was sent.
    app.addHook('preValidation', async function accountOf(request) {
      if (request.routeOptions.config.session === true) request.account = await resolveAccount(deps.services, request);
    });
    // Answers about a customer, successful or not, are never stored by a browser or a proxy.
    app.addHook('onSend', async function noStore(_request, reply) {
      reply.header('cache-control', 'no-store');
    });
    if (options.answersUnknownPaths) app.setNotFoundHandler(deps.unknownPath);
    await app.register(routes);
  };
}

/**
 * Remembers every route's methods (from the root, so it sees every scope's) and returns the answer
 * to a path no route has: 405 with Allow when the path exists under other methods, 404 otherwise.
 * A method whose route belongs to a feature the store has off does not count: such a path is 404.
 */
export function unknownPathAnswer(app: FastifyInstance): (request: FastifyRequest) => Promise<never> {
  const routesByUrl = new Map<string, Map<string, StoreFeature | undefined>>();
  app.addHook('onRoute', (route) => {
    const methods = routesByUrl.get(route.url) ?? new Map<string, StoreFeature | undefined>();
    for (const method of [route.method].flat()) methods.set(method, route.config?.feature);
    routesByUrl.set(route.url, methods);
  });
  return async (request) => {
    const methods = [...(routesByUrl.get(request.url.split('?')[0]!) ?? [])]
      .filter(([, feature]) => featureOn(request, feature))
      .map(([method]) => method);
    if (methods.length === 0) throw new ProblemError('not_found');
    throw new ProblemError('method_not_allowed', {}, { allow: methods.sort().join(', ') });
  };
}
