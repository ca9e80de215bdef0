import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Edge } from '../core/edge.js';
import { setCsrfCookie, storeCsrfKey } from '../core/csrf.js';
import { hostOf } from '../core/scopes.js';
import { ProblemError } from '../core/problems.js';
import { HealthReady, HealthStatus, PlatformInfo } from '../core/schemas.js';
import { customerProblems, problemResponses } from '../core/problem-responses.js';
import { requestCookies, sessionCookieOf } from '../core/session-cookie.js';

export const apiVersion = 'v1';

/** The public endpoints: never behind the store gate, so a shut shop can still be checked. */
const tags = ['platform'];
/** Health probes: kept out of the customer calls' counters, CORS (app.ts registers it around the other scopes) and the request log. */
const probe = { probe: true } as const;

export function platformRoutes(services: Pick<Edge, 'config' | 'readiness'>): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/platform',
      {
        schema: {
          tags,
          security: [],
          operationId: 'platform',
          summary: 'Platform info',
          response: { 200: PlatformInfo, ...problemResponses('rate_limited', 'internal_error') },
        },
      },
      async () => ({
        name: services.config.platformName,
        api_version: apiVersion,
      }),
    );
  };
}

/** The load balancer's liveness and readiness probes. */
export function probeRoutes(services: Edge): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/health/live',
      {
        config: probe,
        schema: {
          tags,
          security: [],
          operationId: 'live',
          summary: 'Liveness: the process serves',
          response: { 200: HealthStatus, ...problemResponses('rate_limited') },
        },
      },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/health/ready',
      {
        config: probe,
        schema: {
          tags,
          security: [],
          operationId: 'ready',
          summary: 'Readiness: database, cache, search and store context',
          description: 'Checks run in parallel, each bounded to one second; results are reused for up to one second.',
          response: { 200: HealthReady, ...problemResponses('deployment_not_ready', 'rate_limited') },
        },
      },
      async (request) => {
        const { ready, checks, store } = await services.readiness(hostOf(request));
        const details = store === null ? undefined : { store_id: store.id, store_status: store.status };
        if (!ready || app.draining) {
          throw new ProblemError('deployment_not_ready', details === undefined ? { checks } : { checks, details });
        }
        return { status: 'ok', checks, ...(details === undefined ? {} : { details }) };
      },
    );
  };
}

/** GET /api/v1/csrf-cookie and its Sanctum-style alias: a fresh XSRF-TOKEN, no server-side state. */
export function csrfCookieRoute(services: Pick<Edge, 'config' | 'keys'>, url: string): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      url,
      {
        schema: {
          tags: ['auth'],
          security: [],
          operationId: url.startsWith('/sanctum') ? 'sanctumCsrfCookie' : 'csrfCookie',
          summary: 'Get a fresh XSRF-TOKEN cookie',
          response: {
            204: {
              description:
                'The XSRF-TOKEN cookie is set (for COOKIE_DOMAIN when configured), and the same token is in the X-XSRF-TOKEN response header.',
              type: 'null',
              headers: { 'x-xsrf-token': { type: 'string', description: 'The token of the XSRF-TOKEN cookie.' } },
            },
            ...problemResponses(...customerProblems),
          },
        },
      },
      async (request, reply) => {
        const sessionId = sessionCookieOf(request, services.config);
        const cookies = requestCookies(services.config, request);
        setCsrfCookie(reply, storeCsrfKey(services.keys.csrf, request.store.id), sessionId, cookies);
        return reply.code(204).send(null);
      },
    );
  };
}
