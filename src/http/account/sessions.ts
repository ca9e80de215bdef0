import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { listCustomerSessions, revokeCustomerSession, revokeCustomerSessions } from '../../auth/sessions.js';
import type { Edge } from '../edge.js';
import { setCsrfCookie } from '../csrf.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { customerProblems, problemResponses, RevokedCountStatus, RevokedStatus, SessionList } from '../schemas.js';
import { signedIn } from '../route-support.js';

/** The parts of the edge these routes use. */
type Deps = Pick<Edge, 'db' | 'clock' | 'keys' | 'config' | 'metrics' | 'limiter' | 'audit'>;

function describe(operationId: string, summary: string, description: string) {
  return { tags: ['auth'], operationId, summary, description, security: [{ session: [] }] };
}

/** The account area: the signed-in customer's own sessions. */
export function sessionRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { config: settings, keys, limiter, metrics, db, clock } = services;
  const sessionCookie = settings.sessionCookieName;

  function audit(request: FastifyRequest, customerId: string, details: Record<string, string>) {
    services.audit({
      event: 'session.revoked',
      customerId,
      clientAddress: request.ip,
      requestId: request.id,
      details,
    });
  }

  /** Revoking the session of the request is a logout: the cookie goes, and the CSRF token is renewed. */
  function signOut(reply: FastifyReply) {
    reply.clearCookie(sessionCookie, { path: '/', httpOnly: true, sameSite: 'lax', secure: settings.cookieSecure });
    setCsrfCookie(reply, keys.csrf, undefined, settings.cookieSecure);
  }

  return async (app) => {
    app.get(
      '/sessions',
      {
        schema: {
          ...describe(
            'listSessions',
            'List my sessions',
            "The signed-in customer's live sessions, newest first. `id` is a public handle for revoking one; `last_seen_at` may lag by up to 5 minutes.",
          ),
          response: { 200: SessionList, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request) => {
        const { sessionId, customer } = await signedIn(services, request);
        const customerId = customer.id;
        return { sessions: await listCustomerSessions(db, clock, customerId, sessionId) };
      },
    );

    app.post(
      '/sessions/:id/revoke',
      {
        schema: {
          ...describe(
            'revokeSession',
            'Revoke one of my sessions',
            "Ends the session with this id. An id that is not one of the caller's live sessions answers 404 whether it exists or not. Revoking the current session is a logout: the cookie is expired and a fresh XSRF-TOKEN issued.",
          ),
          params: Type.Object({ id: Type.String({ description: 'The `id` of a session from the list.' }) }),
          response: {
            200: RevokedStatus,
            ...problemResponses(...customerProblems, 'unauthenticated', 'not_found'),
          },
        },
      },
      async (request, reply) => {
        const { sessionId, customer } = await signedIn(services, request);
        const customerId = customer.id;
        await limiter.consume(request, [[limits.sessionRevocations, customerId]]);
        const revoked = await revokeCustomerSession(db, clock, customerId, request.params.id, sessionId);
        if (!revoked.ok) throw new ProblemError('not_found');
        const { current } = revoked.value;
        metrics.sessionsRevoked.inc({ scope: 'one' });
        audit(request, customerId, { count: '1', current: String(current), by: 'customer' });
        if (current) signOut(reply);
        return { status: 'revoked' as const };
      },
    );

    app.post(
      '/sessions/revoke-others',
      {
        schema: {
          ...describe(
            'revokeOtherSessions',
            'Sign out my other devices',
            'Ends every session of the customer except the current one; `count` is how many live sessions ended.',
          ),
          response: { 200: RevokedCountStatus, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request) => {
        const { sessionId, customer } = await signedIn(services, request);
        const customerId = customer.id;
        await limiter.consume(request, [[limits.sessionRevocations, customerId]]);
        const count = await revokeCustomerSessions(db, clock, customerId, sessionId);
        metrics.sessionsRevoked.inc({ scope: 'others' }, count);
        audit(request, customerId, { count: String(count), current: 'false', by: 'customer' });
        return { status: 'revoked' as const, count };
      },
    );
  };
}
