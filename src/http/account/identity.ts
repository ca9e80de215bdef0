import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import {
  checkIdentityChange,
  confirmIdentityChange,
  identityChangeErrors,
  requestIdentityChange,
} from '../../auth/identity-change.js';
import type { Edge } from '../edge.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { acceptMessageRequest, authDeps, type AuthDepsSource, refuseInvalidBody, signedIn } from '../route-support.js';
import { identityChangeSchema, identityConfirmSchema } from './identity-schemas.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'metrics' | 'limiter' | 'audit' | 'background'>;

/** The signed-in customer moving their account to another email address or phone number. */
export function identityRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { metrics, limiter } = services;
  const deps = authDeps(services);

  function audit(request: FastifyRequest, event: AuditEvent, customerId: string, details?: Record<string, string>) {
    services.audit({ event, customerId, clientAddress: request.ip, requestId: request.id, details });
  }

  return async (app) => {
    app.post(
      '/identity/change',
      {
        attachValidation: true,
        schema: identityChangeSchema,
      },
      async (request, reply) => {
        const { customer } = await signedIn(services, request);
        const store = request.store;
        refuseInvalidBody(request, (fields) => identityChangeErrors(store, fields, deps.allowedCallingCodes));
        // A full queue refuses before the password is checked or anything counted.
        services.background.assertRoom('identity-change');
        const count = (outcome: string) => metrics.identityChanges.inc({ step: 'request', outcome });
        // Counted before the check, as a login is, so parallel guesses cannot pass the limit.
        await limiter
          .consume(request, [
            [limits.loginAttempts, request.clientKey],
            [limits.failedLogins, customer.identity_value],
          ])
          .catch((error: unknown) => {
            count('throttled');
            throw error;
          });
        const checked = await checkIdentityChange(deps, store, customer, request.body);
        if (!checked.ok) {
          count(checked.error);
          // A guess at the password from a signed-in session, recorded as a failed login is.
          if (checked.error === 'wrong_password') {
            audit(request, 'reauthentication.failed', customer.id, { operation: 'identity.change' });
          }
          throw new ProblemError('validation_failed', { errors: checked.fields });
        }
        const newIdentityValue = checked.value;
        limiter.forget(limits.failedLogins, customer.identity_value, request.log);
        // The message limits of resend and forgot, per new identity and per address.
        const subject = `identity-change:${newIdentityValue}`;
        await limiter
          .consume(request, [
            [limits.messagesPerIdentityMinute, subject],
            [limits.messagesPerIdentityHour, subject],
            [limits.messagesPerAddress, request.clientKey],
          ])
          .catch((error: unknown) => {
            count('throttled');
            throw error;
          });
        // Answered before the new identity is looked up, so the time to answer cannot tell whether
        // it has an account (as forgot-password does).
        const accepted = acceptMessageRequest(services, reply, 'identity-change', () =>
          requestIdentityChange(deps, store, customer.id, newIdentityValue),
        );
        count('accepted');
        audit(request, 'identity.change_requested', customer.id);
        return accepted;
      },
    );

    app.post(
      '/identity/confirm',
      {
        schema: identityConfirmSchema,
      },
      async (request) => {
        const { sessionId, customer } = await signedIn(services, request);
        await limiter.consume(request, [[limits.codeAttempts, request.clientKey]]);
        const result = await confirmIdentityChange(deps, request.store, customer.id, sessionId, request.body.code);
        if (!result.ok) {
          metrics.identityChanges.inc({ step: 'confirm', outcome: result.error });
          throw new ProblemError(result.error === 'invalid_challenge' ? 'invalid_identity_challenge' : result.error);
        }
        metrics.identityChanges.inc({ step: 'confirm', outcome: 'changed' });
        audit(request, 'identity.changed', customer.id);
        return result.value;
      },
    );
  };
}
