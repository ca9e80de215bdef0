import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { loginWithCode, requestSignInCode } from '../../auth/flows/code-login.js';
import { declareRoute, signInBlocked, signInRefused, type Outcomes } from '../core/declare.js';
import { identityOf, messageRequestRoute, routeKit, type KitSource } from '../core/kit.js';
import { limits } from '../core/rate-limit.js';
import { SignInAnswer, VerifyBody } from '../core/schemas.js';
import { sessionCookieOf } from '../core/session-cookie.js';

const codeLoginOutcomes: Outcomes<'refused' | 'blocked'> = {
  refused: signInRefused('code', 'invalid_identity_challenge'),
  blocked: signInBlocked('code'),
};

const loginWithCodeRoute = declareRoute({
  operationId: 'loginWithCode',
  summary: 'Log in with a sign-in code',
  description:
    'Spends the sign-in code and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN, as a login does. Sets verified_at when it was null, and works on a store that requires verification. On an account whose identity was not yet proven it is the first proof of control: every earlier session and passkey ends, and so does the password set at registration (set a new one with forgot/reset). A wrong, expired or used code and an unknown identity are the same 422. 404 not_found while the store does not allow signing in with a code. A customer with a second step on gets `200 two_factor_required` and no session, as a login does.',
  feature: 'signInWithCode',
  body: VerifyBody,
  answer: SignInAnswer,
  problems: [codeLoginOutcomes],
});

/**
 * Signing in with a code sent to the identity, where the store allows it
 * (`auth.sign_in_with_code`). With the setting off both paths answer 404 not_found, before the
 * body is looked at, as if they did not exist.
 */
export function codeLoginRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics } = services;
  const { depsOf, limit, refusal, signInSucceeded } = routeKit(services);
  const countLogin = (outcome: string, request: { storeLabel: string }) =>
    metrics.logins.inc({ outcome, store: request.storeLabel });

  return async (app) => {
    await app.register(
      messageRequestRoute(services, {
        path: '/code/request',
        operation: 'sign-in-code',
        botCheck: 'code_request',
        operationId: 'requestSignInCode',
        summary: 'Send a sign-in code',
        description:
          'Sends a six-digit code that signs the customer in with `POST /code/login`. Answers 202 whether or not an account exists, so identities cannot be probed; 503 service_unavailable with Retry-After, alike for every identity, while this instance has too much work waiting. 404 not_found while the store does not allow signing in with a code.',
        feature: 'signInWithCode',
        work: requestSignInCode,
      }),
    );

    app.post('/code/login', loginWithCodeRoute, async (request, reply) => {
      await limit(request, [[limits.codeAttempts, request.clientKey]], () => countLogin('throttled', request));
      const previous = sessionCookieOf(request, services.config);
      const client = { userAgent: request.headers['user-agent'], address: request.ip };
      const attempt = { store: request.store, client, previousSessionId: previous };
      const result = await loginWithCode(depsOf(request), attempt, identityOf(request), request.body.code);
      if (!result.ok) throw refusal(request, codeLoginOutcomes, result, { count: countLogin });
      return signInSucceeded(request, reply, result.value, 'code');
    });
  };
}
