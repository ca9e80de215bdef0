import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { listCustomerSessions, revokeCustomerSession, revokeCustomerSessions } from '../../auth/sessions.js';
import { accountOf, describe, routeKit, type KitSource } from '../kit.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { customerProblems, problemResponses, RevokedCountStatus, RevokedStatus, SessionList } from '../schemas.js';

const session = { session: true };

/** The account area: the signed-in customer's own sessions. */
export function sessionRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics, db, clock } = services;
  const { audit, limit, signOut } = routeKit(services);

  return async (app) => {
    app.get(
      '/sessions',
      {
        config: session,
        schema: {
          ...describe(
            'listSessions',
            'List my sessions',
            "The signed-in customer's live sessions, newest first. `id` is a public handle for revoking one; `last_seen_at` may lag by up to 5 minutes.",
            session,
          ),
          response: { 200: SessionList, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request) => {
        const { sessionId, customer } = accountOf(request);
        return { sessions: await listCustomerSessions(db, clock, customer.id, sessionId) };
      },
    );

    app.post(
      '/sessions/:id/revoke',
      {
        config: session,
        schema: {
          ...describe(
            'revokeSession',
            'Revoke one of my sessions',
            "Ends the session with this id. An id that is not one of the caller's live sessions answers 404 whether it exists or not. Revoking the current session is a logout: the cookie is expired and a fresh XSRF-TOKEN issued.",
            session,
          ),
          params: Type.Object({ id: Type.String({ description: 'The `id` of a session from the list.' }) }),
          response: {
            200: RevokedStatus,
            ...problemResponses(...customerProblems, 'unauthenticated', 'not_found'),
          },
        },
      },
      async (request, reply) => {
        const { sessionId, customer } = accountOf(request);
        await limit(request, [[limits.sessionRevocations, customer.id]]);
        const revoked = await revokeCustomerSession(db, clock, customer.id, request.params.id, sessionId);
        if (!revoked.ok) throw new ProblemError('not_found');
        const { current } = revoked.value;
        metrics.sessionsRevoked.inc({ scope: 'one' });
        audit(request, 'session.revoked', customer.id, { count: '1', current: String(current), by: 'customer' });
        // Revoking the session of the request is a logout.
        if (current) signOut(reply);
        return { status: 'revoked' as const };
      },
    );

    app.post(
      '/sessions/revoke-others',
      {
        config: session,
        schema: {
          ...describe(
            'revokeOtherSessions',
            'Sign out my other devices',
            'Ends every session of the customer except the current one; `count` is how many live sessions ended.',
            session,
          ),
          response: { 200: RevokedCountStatus, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request) => {
        const { sessionId, customer } = accountOf(request);
        await limit(request, [[limits.sessionRevocations, customer.id]]);
        const count = await revokeCustomerSessions(db, clock, customer.id, sessionId);
        metrics.sessionsRevoked.inc({ scope: 'others' }, count);
        audit(request, 'session.revoked', customer.id, { count: String(count), current: 'false', by: 'customer' });
        return { status: 'revoked' as const, count };
      },
    );
  };
}
