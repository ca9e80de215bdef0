import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  checkIdentityChange,
  confirmIdentityChange,
  identityChangeErrors,
  requestIdentityChange,
} from '../../auth/flows/identity-change.js';
import { declareRoute, wrongPasswordOutcome, type Outcomes } from '../core/declare.js';
import { accountOf, refuseInvalidBody, routeKit, type KitSource } from '../core/kit.js';
import { limits, type LimitHit } from '../core/rate-limit.js';
import { AcceptedStatus, Customer, IdentityChangeBody, IdentityConfirmBody } from '../core/schemas.js';

const changeOutcomes: Outcomes<'invalid' | 'wrong_password'> = {
  invalid: { problem: 'validation_failed', metric: 'invalid' },
  wrong_password: wrongPasswordOutcome('identity.change'),
};

const confirmOutcomes: Outcomes<'invalid_challenge' | 'identity_unavailable' | 'unauthenticated'> = {
  invalid_challenge: { problem: 'invalid_identity_challenge', metric: 'invalid_challenge' },
  identity_unavailable: { problem: 'identity_unavailable', metric: 'identity_unavailable' },
  unauthenticated: { problem: 'unauthenticated', metric: 'unauthenticated' },
};

const changeIdentityRoute = declareRoute({
  operationId: 'changeIdentity',
  summary: 'Ask to change the email address or phone number',
  description:
    'Checks current_password as a login does (it counts toward the failed-login limit; a wrong one is a 422 on current_password), then answers 202 whether or not the new identity is free (503 service_unavailable with Retry-After instead while this instance has too much work waiting, before the password is checked). A free one is sent a code for POST /identity/confirm; one that already has an account is told so instead. Send `email` on an email store and `phone` on a phone store.',
  session: true,
  body: IdentityChangeBody,
  ownValidation: true,
  answer: AcceptedStatus,
  status: 202,
  problems: [changeOutcomes],
  botCheck: 'identity_change',
  examples: {
    fieldErrors: { email: [fieldPhrase('email')], current_password: [fieldPhrase('wrong_current_password')] },
  },
});

const confirmIdentityRoute = declareRoute({
  operationId: 'confirmIdentity',
  summary: 'Confirm the change of email address or phone number',
  description:
    'Switches the account to the new identity (verified now) when the code is the live change code, signs every other session out, and tells the old identity, naming the new one masked.',
  session: true,
  body: IdentityConfirmBody,
  answer: Customer,
  problems: [confirmOutcomes],
});

/** The signed-in customer moving their account to another email address or phone number. */
export function identityRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { metrics } = services;
  const { depsOf, audit, limit, refusal, reauthenticated, accept, passBotCheck } = routeKit(services);
  const countStep = (step: string) => (outcome: string) => metrics.identityChanges.inc({ step, outcome });
  const countRequest = countStep('request');
  const countConfirm = countStep('confirm');

  return async (app) => {
    app.post('/identity/change', changeIdentityRoute, async (request, reply) => {
      const { customer } = accountOf(request);
      const store = request.store;
      refuseInvalidBody(request, (fields) =>
        identityChangeErrors(store, fields, services.config.smsAllowedCallingCodes),
      );
      await passBotCheck(request, 'identity_change');
      // A full queue refuses before the password is checked or anything counted.
      services.background.assertRoom('identity-change');
      const checked = await reauthenticated(
        request,
        customer,
        () => checkIdentityChange(depsOf(request), store, customer, request.body),
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
      // it has an account (as forgot-password does). One lane per customer: each request voids the
      // codes before it, so the last one asked for must be the last one made.
      const accepted = accept(
        reply,
        'identity-change',
        () => requestIdentityChange(depsOf(request), store, customer.id, newIdentityValue),
        `identity-change:${customer.id}`,
      );
      countRequest('accepted');
      audit(request, 'identity.change_requested', customer.id);
      return accepted;
    });

    app.post('/identity/confirm', confirmIdentityRoute, async (request) => {
      const { sessionId, customer } = accountOf(request);
      await limit(request, [[limits.codeAttempts, request.clientKey]]);
      const result = await confirmIdentityChange(
        depsOf(request),
        request.store,
        customer.id,
        sessionId,
        request.body.code,
      );
      if (!result.ok) throw refusal(request, confirmOutcomes, result, { count: countConfirm });
      countConfirm('changed');
      audit(request, 'identity.changed', customer.id);
      return result.value;
    });
  };
}
