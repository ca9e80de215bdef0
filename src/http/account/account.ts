import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import { changeName, changePassword } from '../../auth/account.js';
import { newPasswordErrors } from '../../auth/registration.js';
import { validateName } from '../../auth/registration.js';
import type { Edge } from '../edge.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { startSessionCookies } from '../session-cookie.js';
import { bodyProblemResponses, ChangePasswordBody, Customer, PasswordChangedStatus, ProfileBody } from '../schemas.js';
import { authDeps, type AuthDepsSource, refuseInvalidBody, signedIn } from '../route-support.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'metrics' | 'limiter' | 'audit'>;

function describe(operationId: string, summary: string, description: string) {
  // Every account route needs the session cookie.
  return { tags: ['account'], operationId, summary, description, security: [{ session: [] }] };
}

/** The signed-in customer's own account: password and name. */
export function accountRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { config: settings, keys, metrics, limiter } = services;
  const deps = authDeps(services);

  function audit(request: FastifyRequest, event: AuditEvent, customerId: string, details?: Record<string, string>) {
    services.audit({ event, customerId, clientAddress: request.ip, requestId: request.id, details });
  }

  return async (app) => {
    app.post(
      '/password/change',
      {
        attachValidation: true,
        schema: {
          ...describe(
            'changePassword',
            'Change the password',
            "Checks current_password as a login does (it counts toward the failed-login limit; a wrong one is a 422 on current_password), applies the password rules, signs every other session out, and replaces the caller's session cookie and XSRF-TOKEN with new ones. Sends the customer a notice.",
          ),
          body: ChangePasswordBody,
          response: {
            200: PasswordChangedStatus,
            ...bodyProblemResponses(ChangePasswordBody, ['unauthenticated'], {
              fieldErrors: {
                current_password: ['Is not correct.'],
                password: ['Must contain at least one number.'],
                password_confirmation: ['Must match the password.'],
              },
            }),
          },
        },
      },
      async (request, reply) => {
        const { sessionId, customer } = await signedIn(services, request);
        refuseInvalidBody(request, newPasswordErrors);
        // Counted before the check, as a login is, so parallel guesses cannot pass the limit.
        await limiter
          .consume(request, [
            [limits.loginAttempts, request.clientKey],
            [limits.failedLogins, customer.identity_value],
          ])
          .catch((error: unknown) => {
            metrics.passwordChanges.inc({ outcome: 'throttled' });
            throw error;
          });
        const result = await changePassword(deps, request.store, customer, sessionId, request.body, {
          userAgent: request.headers['user-agent'],
          address: request.ip,
        });
        if (!result.ok) {
          if (result.error === 'unauthenticated') throw new ProblemError('unauthenticated');
          const wrong = result.error === 'wrong_password';
          metrics.passwordChanges.inc({ outcome: wrong ? 'wrong_password' : 'invalid' });
          // A guess at the password from a signed-in session, recorded as a failed login is.
          if (wrong) audit(request, 'reauthentication.failed', customer.id, { operation: 'password.change' });
          throw new ProblemError('validation_failed', { errors: result.fields });
        }
        metrics.passwordChanges.inc({ outcome: 'success' });
        audit(request, 'password.changed', customer.id);
        limiter.forget(limits.failedLogins, customer.identity_value, request.log);
        startSessionCookies(reply, settings, keys.csrf, result.value.sessionId);
        return { status: 'password_changed' as const };
      },
    );

    app.post(
      '/profile',
      {
        attachValidation: true,
        schema: {
          ...describe('changeProfile', 'Change the name', 'Sets the name, by the same rules as at registration.'),
          body: ProfileBody,
          response: {
            200: Customer,
            ...bodyProblemResponses(ProfileBody, ['unauthenticated'], { fieldErrors: { name: ['Is required.'] } }),
          },
        },
      },
      async (request) => {
        const { customer } = await signedIn(services, request);
        refuseInvalidBody(request, (fields) => {
          const errors = {};
          if (fields['name'] !== undefined) validateName(fields['name'], errors);
          return errors;
        });
        await limiter.consume(request, [[limits.profileChanges, customer.id]]);
        const result = await changeName(deps, customer.id, request.body.name);
        if (!result.ok) {
          throw result.error === 'invalid'
            ? new ProblemError('validation_failed', { errors: result.fields })
            : new ProblemError('unauthenticated');
        }
        audit(request, 'profile.changed', customer.id);
        return result.value;
      },
    );
  };
}
