import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requestPasswordReset, resetPassword } from '../../auth/password-reset.js';
import { newPasswordErrors } from '../../auth/registration.js';
import type { Edge } from '../edge.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import {
  auditor,
  authDeps,
  type AuthDepsSource,
  describe,
  identityOf,
  messageRequestRoute,
  refuseInvalidBody,
} from '../route-support.js';
import { bodyProblemResponses, PasswordResetStatus, ResetPasswordBody } from '../schemas.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'limiter' | 'audit' | 'background'>;

/** Recovery: ask for a reset code, set a new password with it. */
export function recoveryRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { limiter } = services;
  const deps = authDeps(services);
  const audit = auditor(services);

  return async (app) => {
    await app.register(
      messageRequestRoute(services, {
        path: '/password/forgot',
        operation: 'forgot-password',
        operationId: 'forgotPassword',
        summary: 'Send a password reset code',
        work: requestPasswordReset,
      }),
    );

    app.post(
      '/password/reset',
      {
        attachValidation: true,
        schema: {
          ...describe(
            'resetPassword',
            'Set a new password with a reset code',
            'Signs the customer out of every session, voids their other codes and sends a notice. On an account whose identity was not yet proven it is the first proof of control, and the passkeys added before it end too. Never signs anyone in.',
          ),
          body: ResetPasswordBody,
          response: {
            200: PasswordResetStatus,
            ...bodyProblemResponses(ResetPasswordBody, ['invalid_identity_challenge']),
          },
        },
      },
      async (request) => {
        refuseInvalidBody(request, newPasswordErrors);
        await limiter.consume(request, [[limits.codeAttempts, request.clientKey]]);
        const result = await resetPassword(deps, request.store, { ...request.body, identity: identityOf(request) });
        if (!result.ok) {
          throw result.error === 'invalid'
            ? new ProblemError('validation_failed', { errors: result.fields })
            : new ProblemError('invalid_identity_challenge');
        }
        audit(request, 'password.reset', result.value.customerId);
        return { status: 'password_reset' as const };
      },
    );
  };
}
