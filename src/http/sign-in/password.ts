import type { Phrase } from '../../i18n/strings.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { login } from '../../auth/flows/login.js';
import { toCustomer } from '../../auth/tables/customers.js';
import { deleteSession } from '../../auth/tables/sessions.js';
import { declareRoute, signInBlocked, signInRefused, type Outcomes } from '../core/declare.js';
import { accountOf, identityOf, routeKit, storeDbOf, type KitSource } from '../core/kit.js';
import { ProblemError } from '../core/problems.js';
import { limits, type LimitHit } from '../core/rate-limit.js';
import { AuthSession, LoginBody, SignedOutStatus, SignInAnswer } from '../core/schemas.js';
import { sessionCookieOf } from '../core/session-cookie.js';

export const loginRefusedDetail: Phrase = { key: 'problem.details.login_refused' };

// One text for all three refusals: it must not tell which part was wrong.
const loginOutcomes: Outcomes<'refused' | 'blocked'> = {
  refused: signInRefused('password', 'unauthenticated', loginRefusedDetail),
  blocked: signInBlocked('password'),
};

const loginRoute = declareRoute({
  operationId: 'login',
  summary: 'Log in',
  description:
    'Checks the password and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN. Unknown identity, wrong password and an unverified account on a store requiring verification are indistinguishable 401s, each with the detail "The identity or password is not correct." A login from a device the customer has not signed in from for 90 days queues a new_sign_in message (store setting auth.sign_in_notices); the answer does not depend on it. A customer with a second step on (store setting auth.two_factor) gets `200 two_factor_required` and no session: finish with `POST /two-factor/verify`.',
  body: LoginBody,
  answer: SignInAnswer,
  problems: [loginOutcomes],
  examples: { details: { unauthenticated: loginRefusedDetail } },
});

// Who am I and log out need the session, but belong with signing in.
const signedIn = { session: true, tag: 'auth' } as const;

const sessionRoute = declareRoute({
  operationId: 'session',
  summary: 'Who am I',
  description: 'The customer of the session cookie. A reverse proxy asks `GET /forward` (forwardAuth) instead.',
  ...signedIn,
  answer: AuthSession,
});

const logoutRoute = declareRoute({
  operationId: 'logout',
  summary: 'Log out',
  description: 'Deletes the session on the server, expires the cookie and issues a fresh XSRF-TOKEN.',
  ...signedIn,
  answer: SignedOutStatus,
});

/** Signing in with a password, asking who is signed in, and signing out. */
export function passwordSignInRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics, clock } = services;
  const { depsOf, audit, limit, refusal, signInSucceeded, signOut } = routeKit(services);
  const countLogin = (outcome: string, request: { storeLabel: string }) =>
    metrics.logins.inc({ outcome, store: request.storeLabel });

  return async (app) => {
    app.post('/login', loginRoute, async (request, reply) => {
      const identity = identityOf(request);
      // Counted before the password check so parallel guesses cannot exceed the limit; forgiven on success.
      const hits: LimitHit[] = [
        [limits.loginAttempts, request.clientKey],
        [limits.failedLogins, identity.key],
      ];
      await limit(request, hits, () => countLogin('throttled', request));
      const previous = sessionCookieOf(request, services.config);
      const client = { userAgent: request.headers['user-agent'], address: request.ip };
      const attempt = { store: request.store, client, previousSessionId: previous };
      const result = await login(depsOf(request), attempt, identity, request.body.password);
      if (!result.ok) throw refusal(request, loginOutcomes, result, { count: countLogin });
      return signInSucceeded(request, reply, result.value, 'password', identity.key);
    });

    // Who am I: for storefront pages (a reverse proxy asks forward-auth.ts instead).
    app.get('/session', sessionRoute, async (request) => ({
      auth_type: 'session' as const,
      customer: toCustomer(accountOf(request).customer),
    }));

    app.post('/logout', logoutRoute, async (request, reply) => {
      // Gone since the session was read (a parallel logout): that one signed out, not this one.
      const customerId = await deleteSession(storeDbOf(services, request), clock, accountOf(request).sessionId);
      if (customerId === null) throw new ProblemError('unauthenticated');
      audit(request, 'logout', customerId);
      signOut(request, reply);
      return { status: 'signed_out' as const };
    });
  };
}
