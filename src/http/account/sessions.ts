import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { revokeOneSession, revokeSessions } from '../../auth/flows/session-revocation.js';
import { listCustomerSessions } from '../../auth/tables/sessions.js';
import { declareRoute } from '../core/declare.js';
import { accountOf, authDeps, routeKit, storeDbOf, type KitSource } from '../core/kit.js';
import { ProblemError } from '../core/problems.js';
import { limits } from '../core/rate-limit.js';
import { RevokedCountStatus, RevokedStatus, SessionList } from '../core/schemas.js';

const listSessionsRoute = declareRoute({
  operationId: 'listSessions',
  summary: 'List my sessions',
  description:
    "The signed-in customer's live sessions, newest first. `id` is a public handle for revoking one; `last_seen_at` may lag by up to 5 minutes.",
  session: true,
  answer: SessionList,
});

const revokeSessionRoute = declareRoute({
  operationId: 'revokeSession',
  summary: 'Revoke one of my sessions',
  description:
    "Ends the session with this id. An id that is not one of the caller's live sessions answers 404 whether it exists or not. Revoking the current session is a logout: the cookie is expired and a fresh XSRF-TOKEN issued.",
  session: true,
  params: Type.Object({ id: Type.String({ description: 'The `id` of a session from the list.' }) }),
  answer: RevokedStatus,
  problems: ['not_found'],
});

const revokeOtherSessionsRoute = declareRoute({
  operationId: 'revokeOtherSessions',
  summary: 'Sign out my other devices',
  description: 'Ends every session of the customer except the current one; `count` is how many live sessions ended.',
  session: true,
  answer: RevokedCountStatus,
});

/** The account area: the signed-in customer's own sessions. */
export function sessionRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics, clock } = services;
  const { audit, limit, signOut } = routeKit(services);

  return async (app) => {
    app.get('/sessions', listSessionsRoute, async (request) => {
      const { sessionId, customer } = accountOf(request);
      return { sessions: await listCustomerSessions(storeDbOf(services, request), clock, customer.id, sessionId) };
    });

    app.post('/sessions/:id/revoke', revokeSessionRoute, async (request, reply) => {
      const { sessionId, customer } = accountOf(request);
      await limit(request, [[limits.sessionRevocations, customer.id]]);
      const revoked = await revokeOneSession(
        authDeps(services, request.store),
        customer.id,
        request.params.id,
        sessionId,
      );
      if (!revoked.ok) throw new ProblemError('not_found');
      const { current } = revoked.value;
      metrics.sessionsRevoked.inc({ scope: 'one' });
      audit(request, 'session.revoked', customer.id, { count: '1', current: String(current), by: 'customer' });
      // Revoking the session of the request is a logout.
      if (current) signOut(request, reply);
      return { status: 'revoked' as const };
    });

    app.post('/sessions/revoke-others', revokeOtherSessionsRoute, async (request) => {
      const { sessionId, customer } = accountOf(request);
      await limit(request, [[limits.sessionRevocations, customer.id]]);
      const count = await revokeSessions(authDeps(services, request.store), customer.id, {
        keepSessionId: sessionId,
        by: 'customer',
      });
      metrics.sessionsRevoked.inc({ scope: 'others' }, count);
      audit(request, 'session.revoked', customer.id, { count: String(count), current: 'false', by: 'customer' });
      return { status: 'revoked' as const, count };
    });
  };
}
