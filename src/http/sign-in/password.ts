import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { toCustomer } from '../../auth/customers.js';
import { login } from '../../auth/login.js';
import { deleteSession } from '../../auth/sessions.js';
import { accountOf, identityOf, routeKit, type KitSource, type Outcomes } from '../kit.js';
import { ProblemError } from '../problems.js';
import { limits, type LimitHit } from '../rate-limit.js';
import { loginRefusedDetail, loginSchema, logoutSchema, sessionSchema } from './password-schemas.js';

// One text for all three refusals: it must not tell which part was wrong.
const loginOutcomes: Outcomes<'refused'> = {
  refused: {
    problem: 'unauthenticated',
    detail: loginRefusedDetail,
    audit: { event: 'login.failed', details: { method: 'password' } },
    metric: 'failure',
  },
};

/** Signing in with a password, asking who is signed in, and signing out. */
export function passwordSignInRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics, db, clock } = services;
  const { deps, audit, limit, refusal, signInSucceeded, signOut } = routeKit(services);
  const countLogin = (outcome: string) => metrics.logins.inc({ outcome });

  return async (app) => {
    app.post('/login', { schema: loginSchema }, async (request, reply) => {
      const identity = identityOf(request);
      // Counted before the password check so parallel guesses cannot exceed the limit; forgiven on success.
      const hits: LimitHit[] = [
        [limits.loginAttempts, request.clientKey],
        [limits.failedLogins, identity.key],
      ];
      await limit(request, hits, () => countLogin('throttled'));
      const previous = request.cookies[services.config.sessionCookieName];
      const client = { userAgent: request.headers['user-agent'], address: request.ip };
      const result = await login(deps, request.store, identity, request.body.password, previous, client);
      if (!result.ok) throw refusal(request, loginOutcomes, result, { count: countLogin });
      return signInSucceeded(request, reply, result.value, 'password', identity.key);
    });

    // Who am I: for storefront pages, and usable by a reverse proxy as a forward-auth check.
    app.get('/session', { schema: sessionSchema, config: { session: true } }, async (request) => ({
      auth_type: 'session' as const,
      customer: toCustomer(accountOf(request).customer),
    }));

    app.post('/logout', { schema: logoutSchema, config: { session: true } }, async (request, reply) => {
      // Gone since the session was read (a parallel logout): that one signed out, not this one.
      const customerId = await deleteSession(db, clock, accountOf(request).sessionId);
      if (customerId === null) throw new ProblemError('unauthenticated');
      audit(request, 'logout', customerId);
      signOut(reply);
      return { status: 'signed_out' as const };
    });
  };
}
