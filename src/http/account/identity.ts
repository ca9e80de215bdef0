import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  checkIdentityChange,
  confirmIdentityChange,
  identityChangeErrors,
  requestIdentityChange,
} from '../../auth/identity-change.js';
import { accountOf, refuseInvalidBody, routeKit, type KitSource, type Outcomes } from '../kit.js';
import { limits, type LimitHit } from '../rate-limit.js';
import { identityChangeSchema, identityConfirmSchema } from './identity-schemas.js';

const changeOutcomes: Outcomes<'invalid' | 'wrong_password'> = {
  invalid: { problem: 'validation_failed', metric: 'invalid' },
  // A guess at the password from a signed-in session, recorded as a failed login is.
  wrong_password: {
    problem: 'validation_failed',
    metric: 'wrong_password',
    audit: { event: 'reauthentication.failed', details: { operation: 'identity.change' } },
  },
};

const confirmOutcomes: Outcomes<'invalid_challenge' | 'identity_unavailable' | 'unauthenticated'> = {
  invalid_challenge: { problem: 'invalid_identity_challenge', metric: 'invalid_challenge' },
  identity_unavailable: { problem: 'identity_unavailable', metric: 'identity_unavailable' },
  unauthenticated: { problem: 'unauthenticated', metric: 'unauthenticated' },
};

/** The signed-in customer moving their account to another email address or phone number. */
export function identityRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics } = services;
  const { deps, audit, limit, refusal, reauthenticated, accept } = routeKit(services);
  const countStep = (step: string) => (outcome: string) => metrics.identityChanges.inc({ step, outcome });
  const countRequest = countStep('request');
  const countConfirm = countStep('confirm');

  return async (app) => {
    app.post(
      '/identity/change',
      { attachValidation: true, config: { session: true }, schema: identityChangeSchema },
      async (request, reply) => {
        const { customer } = accountOf(request);
        const store = request.store;
        refuseInvalidBody(request, (fields) => identityChangeErrors(store, fields, deps.allowedCallingCodes));
        // A full queue refuses before the password is checked or anything counted.
        services.background.assertRoom('identity-change');
        const checked = await reauthenticated(
          request,
          customer,
          () => checkIdentityChange(deps, store, customer, request.body),
          () => countRequest('throttled'),
        );
        if (!checked.ok)
          throw refusal(request, changeOutcomes, checked, { customerId: customer.id, count: countRequest });
        const newIdentityValue = checked.value;
        // The message limits of resend and forgot, per new identity and per address.
        const subject = `identity-change:${newIdentityValue}`;
        const hits: LimitHit[] = [
          [limits.messagesPerIdentityMinute, subject],
          [limits.messagesPerIdentityHour, subject],
          [limits.messagesPerAddress, request.clientKey],
        ];
        await limit(request, hits, () => countRequest('throttled'));
        // Answered before the new identity is looked up, so the time to answer cannot tell whether
        // it has an account (as forgot-password does).
        const accepted = accept(reply, 'identity-change', () =>
          requestIdentityChange(deps, store, customer.id, newIdentityValue),
        );
        countRequest('accepted');
        audit(request, 'identity.change_requested', customer.id);
        return accepted;
      },
    );

    app.post('/identity/confirm', { config: { session: true }, schema: identityConfirmSchema }, async (request) => {
      const { sessionId, customer } = accountOf(request);
      await limit(request, [[limits.codeAttempts, request.clientKey]]);
      const result = await confirmIdentityChange(deps, request.store, customer.id, sessionId, request.body.code);
      if (!result.ok) throw refusal(request, confirmOutcomes, result, { count: countConfirm });
      countConfirm('changed');
      audit(request, 'identity.changed', customer.id);
      return result.value;
    });
  };
}
