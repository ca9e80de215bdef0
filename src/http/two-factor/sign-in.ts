import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { finishSecondStep } from '../../auth/flows/second-step-login.js';
import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import type { SecondStepAnswer } from '../../auth/rules/second-step.js';
import { findPendingSignIn } from '../../auth/tables/pending-sign-ins.js';
import { acceptedKeys } from '../../keys.js';
import { declareRoute, type Outcome, type Outcomes } from '../core/declare.js';
import { routeKit, storeDbOf, type KitSource } from '../core/kit.js';
import { ProblemError } from '../core/problems.js';
import { limits } from '../core/rate-limit.js';
import { AuthSession } from '../core/schemas.js';
import { secondStepCookie } from './cookie.js';
import { sessionCookieOf } from '../core/session-cookie.js';
import { SecondStepBody } from './schemas.js';

const exactlyOne = fieldPhrase('one_of_code_or_recovery_code');

const secondStepEnded: Outcome = {
  problem: 'unauthenticated',
  audit: { event: 'login.failed', details: { method: 'second_step', reason: 'ended' } },
  metric: 'failure',
};

const outcomes: Outcomes<'ended' | 'invalid' | 'blocked'> = {
  ended: secondStepEnded,
  invalid: {
    problem: 'validation_failed',
    audit: { event: 'login.failed', details: { method: 'second_step' } },
    metric: 'failure',
  },
  // After a right code, of an account blocked since its first step.
  blocked: {
    problem: 'account_blocked',
    audit: { event: 'login.failed', details: { method: 'second_step', reason: 'blocked' } },
    metric: 'blocked',
  },
};

const verifyRoute = declareRoute({
  operationId: 'verifySecondStep',
  summary: 'Finish signing in with a second step',
  description:
    "Finishes a sign-in that answered `two_factor_required`, in the browser that got it (its HttpOnly cookie names the pending sign-in, 5 minutes): a code of the authenticator app (one step either side of now is accepted, and each step only once) or a recovery code (spent; the customer gets a notice). Answers as a login does, with the session cookie and a fresh XSRF-TOKEN. A wrong code is a 422 on `code` or `recovery_code`; the fifth ends the pending sign-in, and so do a password change or turning the second step off meanwhile: then, and without the cookie, 401 unauthenticated (sign in again). Every try counts against the failed-login limit of the customer's identity.",
  tag: 'auth',
  body: SecondStepBody,
  answer: AuthSession,
  problems: [outcomes],
  examples: { fieldErrors: { code: [fieldPhrase('second_step_code')] } },
});

/** The second step of a sign-in: the code of the app, or a recovery code. */
export function secondStepSignInRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics, clock, config, keys } = services;
  const { depsOf, limit, refusal, signInSucceeded } = routeKit(services);
  const cookieKeys = acceptedKeys(keys, 'csrf');
  const countLogin = (outcome: string, request: { storeLabel: string }) =>
    metrics.logins.inc({ outcome, store: request.storeLabel });

  return async (app) => {
    app.post('/two-factor/verify', verifyRoute, async (request, reply) => {
      const handle = secondStepCookie.handleOf(request, cookieKeys);
      const pending =
        handle === undefined ? null : await findPendingSignIn(storeDbOf(services, request), clock, handle);
      if (handle === undefined || pending === null) {
        secondStepCookie.clear(reply, config.cookieSecure);
        throw new ProblemError('unauthenticated');
      }
      // Each try is a guess at the account, as a password is: counted before the check, forgiven on success.
      await limit(
        request,
        [
          [limits.loginAttempts, request.clientKey],
          [limits.failedLogins, pending.identityValue],
        ],
        () => countLogin('throttled', request),
      );
      const { code, recovery_code: recoveryCode } = request.body;
      if ((code === undefined) === (recoveryCode === undefined))
        throw new ProblemError('validation_failed', { errors: { code: [exactlyOne], recovery_code: [exactlyOne] } });
      const given: SecondStepAnswer = code !== undefined ? { code } : { recoveryCode: recoveryCode! };
      const attempt = {
        store: request.store,
        client: { userAgent: request.headers['user-agent'], address: request.ip },
        previousSessionId: sessionCookieOf(request, config),
      };
      const result = await finishSecondStep(depsOf(request), attempt, handle, given);
      if (!result.ok) {
        if (result.error !== 'invalid') secondStepCookie.clear(reply, config.cookieSecure);
        throw refusal(request, outcomes, result, { count: countLogin });
      }
      secondStepCookie.clear(reply, config.cookieSecure);
      return signInSucceeded(request, reply, result.value, pending.method, pending.identityValue, {
        second_step: code !== undefined ? 'totp' : 'recovery_code',
      });
    });
  };
}
