import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkCsrf, type CsrfOptions } from './csrf.js';
import type { Edge } from './edge.js';
import { ProblemError } from './problems.js';
import { limits } from './rate-limit.js';

/*
 * Every route lives in one of three scopes, and each scope owns the hooks its routes run (Fastify
 * encapsulation: a scope's hooks reach its own routes and the unknown paths under its prefix,
 * nothing else). The application's own hooks (CORS, which answers preflights before any scope's
 * hook, the client key, common headers, the request log) run first, for everything.
 *
 * - probes: counted by the instance's own in-memory limiter only; no CSRF check, and no CORS (their
 *   route config turns it off).
 * - public: platform metadata, the API documents, the sign-in page and every unknown path outside
 *   the customer's prefix: the any-call limit, then the CSRF check.
 * - customer: the store gate, then the any-call limit, then the CSRF check; every answer no-store.
 */

type Routes = FastifyPluginAsyncTypebox;

export interface ScopeDeps {
  services: Pick<Edge, 'store' | 'limiter' | 'probeLimiter'>;
  csrf: CsrfOptions;
  /** Answers a path no route has; see `unknownPathAnswer`. */
  unknownPath: (request: FastifyRequest) => Promise<never>;
}

async function countAndCheckCsrf(deps: ScopeDeps, request: FastifyRequest): Promise<void> {
  await deps.services.limiter.consume(request, [[limits.anyCall, request.clientKey]]);
  checkCsrf(deps.csrf, request);
}

/** The health probes: see the list above. */
export function probeScope(deps: ScopeDeps, routes: Routes): Routes {
  return async (app) => {
    // A load balancer asks every few seconds: its own in-process count is enough, and keeps a
    // probe's answer independent of the shared counters' pace.
    app.addHook('onRequest', async (request) => {
      await deps.services.probeLimiter.consume(request, [[limits.anyCall, request.clientKey]]);
    });
    await app.register(routes);
  };
}

/** What is neither a probe nor a customer call; answers the unknown paths outside the customer's prefix. */
export function publicScope(deps: ScopeDeps, routes: Routes): Routes {
  return async (app) => {
    app.addHook('onRequest', (request) => countAndCheckCsrf(deps, request));
    // Registered without a prefix, this scope's handler (and hooks) serve every path no other
    // scope's prefix claims.
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
    app.addHook('onRequest', async (request) => {
      // The store gate comes before everything else: a shut shop answers nothing but 503, not
      // even a refusal that would tell the limit or the CSRF check was reached.
      request.store = await deps.services.store.get();
      if (request.store.status !== 'active') throw new ProblemError('store_unavailable');
      await countAndCheckCsrf(deps, request);
    });
    // Answers about a customer, successful or not, are never stored by a browser or a proxy.
    app.addHook('onSend', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });
    if (options.answersUnknownPaths) app.setNotFoundHandler(deps.unknownPath);
    await app.register(routes);
  };
}

/**
 * Remembers every route's methods (from the root, so it sees every scope's) and returns the answer
 * to a path no route has: 405 with Allow when the path exists under other methods, 404 otherwise.
 */
export function unknownPathAnswer(app: FastifyInstance): (request: FastifyRequest) => Promise<never> {
  const routesByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = routesByUrl.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    routesByUrl.set(route.url, methods);
  });
  return async (request) => {
    const methods = routesByUrl.get(request.url.split('?')[0]!);
    if (methods === undefined) throw new ProblemError('not_found');
    throw new ProblemError('method_not_allowed', {}, { allow: [...methods].sort().join(', ') });
  };
}
