import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requestPasswordReset, resetPassword } from '../../auth/flows/password-reset.js';
import { newPasswordErrors } from '../../auth/rules/fields.js';
import { declareRoute, type Outcomes } from '../core/declare.js';
import { identityOf, messageRequestRoute, refuseInvalidBody, routeKit, type KitSource } from '../core/kit.js';
import { limits } from '../core/rate-limit.js';
import { PasswordResetStatus, ResetPasswordBody } from '../core/schemas.js';

const resetOutcomes: Outcomes<'invalid' | 'invalid_challenge'> = {
  invalid: { problem: 'validation_failed' },
  invalid_challenge: { problem: 'invalid_identity_challenge' },
};

const resetPasswordRoute = declareRoute({
  operationId: 'resetPassword',
  summary: 'Set a new password with a reset code',
  description:
    'Signs the customer out of every session, voids their other codes and sends a notice. On an account whose identity was not yet proven it is the first proof of control, and the passkeys added before it end too. Never signs anyone in.',
  body: ResetPasswordBody,
  ownValidation: true,
  answer: PasswordResetStatus,
  problems: [resetOutcomes],
});

/** Recovery: ask for a reset code, set a new password with it. */
export function recoveryRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { depsOf, audit, limit, refusal } = routeKit(services);

  return async (app) => {
    await app.register(
      messageRequestRoute(services, {
        path: '/password/forgot',
        operation: 'forgot-password',
        botCheck: 'forgot',
        operationId: 'forgotPassword',
        summary: 'Send a password reset code',
        work: requestPasswordReset,
      }),
    );

    app.post('/password/reset', resetPasswordRoute, async (request) => {
      refuseInvalidBody(request, newPasswordErrors);
      await limit(request, [[limits.codeAttempts, request.clientKey]]);
      const result = await resetPassword(depsOf(request), request.store, {
        ...request.body,
        identity: identityOf(request),
      });
      if (!result.ok) throw refusal(request, resetOutcomes, result);
      audit(request, 'password.reset', result.value.customerId);
      return { status: 'password_reset' as const };
    });
  };
}
