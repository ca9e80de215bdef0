import type { Phrase } from '../../i18n/strings.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { loginWithPasskey, startPasskeyLogin, type PasskeyLoginFailure } from '../../auth/flows/passkey-login.js';
import { declareRoute, type Outcome, type Outcomes } from '../core/declare.js';
import { routeKit, type KitSource } from '../core/kit.js';
import { clearPasskeyCookie, passkeyHandle } from './cookie.js';
import { PasskeyLoginBody, PasskeyRequestOptions } from './schemas.js';
import { passkeyRouteSupport, relyingParty } from './support.js';
import { limits } from '../core/rate-limit.js';
import { AuthSession } from '../core/schemas.js';
import { sessionCookieOf } from '../core/session-cookie.js';

export const passkeyLoginRefusedDetail: Phrase = { key: 'problem.details.passkey_login_refused' };

// One answer for every cause: it must not tell a stranger's passkey from a stale challenge. The
// route records the reason in the audit trail, with the passkey's id where there is one.
const refused: Outcome = { problem: 'unauthenticated', detail: passkeyLoginRefusedDetail, metric: 'failure' };
const passkeyLoginOutcomes: Outcomes<PasskeyLoginFailure> = {
  challenge: refused,
  unknown_passkey: refused,
  verification: refused,
  counter_regressed: refused,
  unverified: refused,
  // After the assertion verified: the holder of the passkey learns of the block, no one else.
  blocked: { problem: 'account_blocked', metric: 'blocked' },
};

const passkeyLoginOptionsRoute = declareRoute({
  operationId: 'passkeyLoginOptions',
  summary: 'Start signing in with a passkey',
  description:
    'Options for `navigator.credentials.get` with no credentials listed (discoverable passkeys; also for conditional UI), and an HttpOnly cookie binding their challenge (single use, 5 minutes) to this browser.',
  feature: 'passkeys',
  answer: PasskeyRequestOptions,
});

const loginWithPasskeyRoute = declareRoute({
  operationId: 'loginWithPasskey',
  summary: 'Log in with a passkey',
  description:
    "Verifies the assertion against this browser's challenge (spent whatever the outcome) and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN, as a login does. A passkey proves the authenticator, not the email or phone: it never sets verified_at, and on a store that requires verification an unproven account is refused like any other failure. Counts against the login limit per address. An unknown passkey, a bad signature, a reused, expired or other browser's challenge, a wrong origin or RP ID and a signature counter that went backwards are one identical 401. A verified assertion of a blocked account answers `403 account_blocked` (with `until` when the block has an end).",
  feature: 'passkeys',
  body: PasskeyLoginBody,
  answer: AuthSession,
  problems: [passkeyLoginOutcomes],
  examples: { details: { unauthenticated: passkeyLoginRefusedDetail } },
});

/** Signing in with a passkey: no session needed, and the answer of a login. */
export function passkeyLoginRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics } = services;
  const { depsOf, audit, limit, refusal, signInSucceeded } = routeKit(services);
  const { ceremonyOptions, cookieKeys, secure } = passkeyRouteSupport(services);
  const countLogin = (outcome: string, request: { storeLabel: string }) =>
    metrics.logins.inc({ outcome, store: request.storeLabel });

  return async (app) => {
    app.post('/passkeys/login/options', passkeyLoginOptionsRoute, async (request, reply) => {
      return ceremonyOptions(request, reply, (rp) => startPasskeyLogin(depsOf(request), rp));
    });

    app.post('/passkeys/login', loginWithPasskeyRoute, async (request, reply) => {
      await limit(request, [[limits.loginAttempts, request.clientKey]], () => countLogin('throttled', request));
      const result = await loginWithPasskey(
        depsOf(request),
        relyingParty(services, request),
        {
          store: request.store,
          client: { userAgent: request.headers['user-agent'], address: request.ip },
          previousSessionId: sessionCookieOf(request, services.config),
        },
        {
          handle: passkeyHandle(request, cookieKeys),
          response: request.body.credential as unknown as AuthenticationResponseJSON,
        },
      );
      clearPasskeyCookie(reply, secure);
      if (!result.ok) {
        const details: Record<string, string> = { method: 'passkey', reason: result.error };
        if (result.passkeyId !== undefined) details['passkey'] = result.passkeyId;
        audit(request, 'login.failed', result.customerId, details);
        throw refusal(request, passkeyLoginOutcomes, result, { count: countLogin });
      }
      return signInSucceeded(request, reply, result.value, 'passkey');
    });
  };
}
