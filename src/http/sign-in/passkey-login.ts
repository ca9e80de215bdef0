import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { loginWithPasskey, startPasskeyLogin } from '../../auth/passkey-login.js';
import type { Edge } from '../edge.js';
import { clearPasskeyCookie, passkeyHandle } from '../passkey-cookie.js';
import { PasskeyLoginBody, PasskeyRequestOptions } from '../passkey-schemas.js';
import { describePasskeyRoute, passkeyRouteSupport, relyingParty } from '../passkey-support.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { authDeps, type AuthDepsSource } from '../route-support.js';
import { AuthSession, bodyProblemResponses, customerProblems, problemResponses } from '../schemas.js';
import { reportSignInNotice, startSessionCookies } from '../session-cookie.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'metrics' | 'limiter' | 'audit'>;

export const passkeyLoginRefusedDetail = 'The passkey could not sign you in.';

/** Signing in with a passkey: no session needed, and the answer of a login. */
export function passkeyLoginRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { config: settings, keys, metrics, limiter } = services;
  const deps = authDeps(services);
  const { gate, audit, ceremonyOptions, cookieKeys, secure } = passkeyRouteSupport(services);

  return async (app) => {
    app.post(
      '/passkeys/login/options',
      {
        ...gate,
        schema: {
          ...describePasskeyRoute(
            'passkeyLoginOptions',
            'Start signing in with a passkey',
            'Options for `navigator.credentials.get` with no credentials listed (discoverable passkeys; also for conditional UI), and an HttpOnly cookie binding their challenge (single use, 5 minutes) to this browser.',
            false,
          ),
          response: { 200: PasskeyRequestOptions, ...problemResponses(...customerProblems, 'not_found') },
        },
      },
      async (request, reply) => {
        return ceremonyOptions(request, reply, (rp) => startPasskeyLogin(deps, rp));
      },
    );

    app.post(
      '/passkeys/login',
      {
        ...gate,
        schema: {
          ...describePasskeyRoute(
            'loginWithPasskey',
            'Log in with a passkey',
            "Verifies the assertion against this browser's challenge (spent whatever the outcome) and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN, as a login does. A passkey proves the authenticator, not the email or phone: it never sets verified_at, and on a store that requires verification an unproven account is refused like any other failure. Counts against the login limit per address. An unknown passkey, a bad signature, a reused, expired or other browser's challenge, a wrong origin or RP ID and a signature counter that went backwards are one identical 401.",
            false,
          ),
          body: PasskeyLoginBody,
          response: {
            200: AuthSession,
            ...bodyProblemResponses(PasskeyLoginBody, ['unauthenticated', 'not_found'], {
              details: { unauthenticated: passkeyLoginRefusedDetail },
            }),
          },
        },
      },
      async (request, reply) => {
        await limiter.consume(request, [[limits.loginAttempts, request.clientKey]]).catch((error: unknown) => {
          metrics.logins.inc({ outcome: 'throttled' });
          throw error;
        });
        const result = await loginWithPasskey(
          deps,
          request.store,
          relyingParty(services, request),
          passkeyHandle(request, cookieKeys),
          request.body.credential as unknown as AuthenticationResponseJSON,
          request.cookies[settings.sessionCookieName],
          { userAgent: request.headers['user-agent'], address: request.ip },
        );
        clearPasskeyCookie(reply, secure);
        metrics.logins.inc({ outcome: result.ok ? 'success' : 'failure' });
        if (!result.ok) {
          const details: Record<string, string> = { method: 'passkey', reason: result.error };
          if (result.passkeyId !== undefined) details['passkey'] = result.passkeyId;
          audit(request, 'login.failed', result.customerId, details);
          // One answer for every cause: it must not tell a stranger's passkey from a stale challenge.
          throw new ProblemError('unauthenticated', {}, {}, passkeyLoginRefusedDetail);
        }
        audit(request, 'login.succeeded', result.value.customer.id, { method: 'passkey' });
        reportSignInNotice(request.log, metrics, result.value.signInNotice);
        startSessionCookies(reply, settings, keys.csrf, result.value.sessionId);
        return { auth_type: 'session' as const, customer: result.value.customer };
      },
    );
  };
}
