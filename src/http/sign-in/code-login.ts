import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import { loginWithCode, requestSignInCode } from '../../auth/code-login.js';
import type { Edge } from '../edge.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { AcceptedStatus, AuthSession, bodyProblemResponses, IdentityBody, VerifyBody } from '../schemas.js';
import { reportSignInNotice, startSessionCookies } from '../session-cookie.js';
import { acceptMessageRequest, authDeps, type AuthDepsSource, describe, identityOf } from '../route-support.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'metrics' | 'limiter' | 'audit' | 'background'>;

/**
 * Signing in with a code sent to the identity, where the store allows it
 * (`auth.sign_in_with_code`). With the setting off both paths answer 404 not_found, before the
 * body is looked at, as if they did not exist.
 */
export function codeLoginRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { config: settings, keys, metrics, limiter } = services;
  const deps = authDeps(services);

  function audit(request: FastifyRequest, event: AuditEvent, customerId: string | null) {
    services.audit({
      event,
      customerId,
      clientAddress: request.ip,
      requestId: request.id,
      details: { method: 'code' },
    });
  }

  // The customer scope answers 404 while the setting is off, before the body is read (http/scopes.ts).
  const config = { feature: 'signInWithCode' } as const;

  return async (app) => {
    app.post(
      '/code/request',
      {
        config,
        schema: {
          ...describe(
            'requestSignInCode',
            'Send a sign-in code',
            'Sends a six-digit code that signs the customer in with `POST /code/login`. Answers 202 whether or not an account exists, so identities cannot be probed; 503 service_unavailable with Retry-After, alike for every identity, while this instance has too much work waiting. 404 not_found while the store does not allow signing in with a code.',
          ),
          body: IdentityBody,
          response: { 202: AcceptedStatus, ...bodyProblemResponses(IdentityBody, ['not_found']) },
        },
      },
      async (request, reply) => {
        const identity = identityOf(request);
        services.background.assertRoom('sign-in-code');
        const subject = `sign-in-code:${identity.key}`;
        await limiter.consume(request, [
          [limits.messagesPerIdentityMinute, subject],
          [limits.messagesPerIdentityHour, subject],
          [limits.messagesPerAddress, request.clientKey],
        ]);
        const store = request.store;
        return acceptMessageRequest(services, reply, 'sign-in-code', () => requestSignInCode(deps, store, identity));
      },
    );

    app.post(
      '/code/login',
      {
        config,
        schema: {
          ...describe(
            'loginWithCode',
            'Log in with a sign-in code',
            'Spends the sign-in code and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN, as a login does. Sets verified_at when it was null, and works on a store that requires verification. On an account whose identity was not yet proven it is the first proof of control: every earlier session and passkey ends, and so does the password set at registration (set a new one with forgot/reset). A wrong, expired or used code and an unknown identity are the same 422. 404 not_found while the store does not allow signing in with a code.',
          ),
          body: VerifyBody,
          response: {
            200: AuthSession,
            ...bodyProblemResponses(VerifyBody, ['invalid_identity_challenge', 'not_found']),
          },
        },
      },
      async (request, reply) => {
        await limiter.consume(request, [[limits.codeAttempts, request.clientKey]]).catch((error: unknown) => {
          metrics.logins.inc({ outcome: 'throttled' });
          throw error;
        });
        const previous = request.cookies[settings.sessionCookieName];
        const result = await loginWithCode(deps, request.store, identityOf(request), request.body.code, previous, {
          userAgent: request.headers['user-agent'],
          address: request.ip,
        });
        metrics.logins.inc({ outcome: result.ok ? 'success' : 'failure' });
        if (!result.ok) {
          audit(request, 'login.failed', result.customerId);
          throw new ProblemError('invalid_identity_challenge');
        }
        audit(request, 'login.succeeded', result.value.customer.id);
        reportSignInNotice(request.log, metrics, result.value.signInNotice);
        startSessionCookies(reply, settings, keys.csrf, result.value.sessionId);
        return { auth_type: 'session' as const, customer: result.value.customer };
      },
    );
  };
}
