import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { toCustomer } from '../../auth/customers.js';
import { login } from '../../auth/login.js';
import { deleteSession, findSessionCustomer } from '../../auth/sessions.js';
import { setCsrfCookie } from '../csrf.js';
import type { Edge } from '../edge.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { auditor, authDeps, type AuthDepsSource, identityOf } from '../route-support.js';
import { reportSignInNotice, startSessionCookies } from '../session-cookie.js';
import { loginRefusedDetail, loginSchema, logoutSchema, sessionSchema } from './password-schemas.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'metrics' | 'limiter' | 'audit'>;

/** Signing in with a password, asking who is signed in, and signing out. */
export function passwordSignInRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { config: settings, keys, metrics, limiter } = services;
  const deps = authDeps(services);
  const audit = auditor(services);
  const sessionCookie = settings.sessionCookieName;

  return async (app) => {
    app.post(
      '/login',
      {
        schema: loginSchema,
      },
      async (request, reply) => {
        const identity = identityOf(request);
        // Counted before the password check so parallel guesses cannot exceed the limit; forgiven on success.
        await limiter
          .consume(request, [
            [limits.loginAttempts, request.clientKey],
            [limits.failedLogins, identity.key],
          ])
          .catch((error: unknown) => {
            metrics.logins.inc({ outcome: 'throttled' });
            throw error;
          });
        const previous = request.cookies[sessionCookie];
        const client = { userAgent: request.headers['user-agent'], address: request.ip };
        const result = await login(deps, request.store, identity, request.body.password, previous, client);
        metrics.logins.inc({ outcome: result.ok ? 'success' : 'failure' });
        if (!result.ok) {
          audit(request, 'login.failed', result.customerId, { method: 'password' });
          // One text for all three refusals: it must not tell which part was wrong.
          throw new ProblemError('unauthenticated', {}, {}, loginRefusedDetail);
        }
        audit(request, 'login.succeeded', result.value.customer.id, { method: 'password' });
        reportSignInNotice(request.log, metrics, result.value.signInNotice);
        limiter.forget(limits.failedLogins, identity.key, request.log);
        startSessionCookies(reply, settings, keys.csrf, result.value.sessionId);
        return { auth_type: 'session' as const, customer: result.value.customer };
      },
    );

    // Who am I: for storefront pages, and usable by a reverse proxy as a forward-auth check.
    app.get(
      '/session',
      {
        schema: sessionSchema,
      },
      async (request) => {
        const sessionId = request.cookies[sessionCookie];
        const customer =
          sessionId === undefined ? null : await findSessionCustomer(services.db, services.clock, sessionId);
        if (customer === null) throw new ProblemError('unauthenticated');
        return { auth_type: 'session' as const, customer: toCustomer(customer) };
      },
    );

    app.post(
      '/logout',
      {
        schema: logoutSchema,
      },
      async (request, reply) => {
        const sessionId = request.cookies[sessionCookie];
        const customerId = sessionId === undefined ? null : await deleteSession(services.db, services.clock, sessionId);
        if (customerId === null) throw new ProblemError('unauthenticated');
        audit(request, 'logout', customerId);
        reply.clearCookie(sessionCookie, { path: '/', httpOnly: true, sameSite: 'lax', secure: settings.cookieSecure });
        setCsrfCookie(reply, keys.csrf, undefined, settings.cookieSecure);
        return { status: 'signed_out' as const };
      },
    );
  };
}
