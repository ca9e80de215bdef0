import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { register, registrationErrors } from '../../auth/registration.js';
import { resendVerification, verifyIdentity } from '../../auth/verification.js';
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
import { bodyProblemResponses, Customer, RegisterBody, VerifyBody } from '../schemas.js';

/** The parts of the edge these routes use. */
type Deps = AuthDepsSource & Pick<Edge, 'limiter' | 'audit' | 'background'>;

/** Registration: create the account, verify its identity with a code, ask for a new code. */
export function registrationRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { limiter } = services;
  const deps = authDeps(services);
  const audit = auditor(services);

  return async (app) => {
    app.post(
      '/register',
      {
        attachValidation: true,
        schema: {
          ...describe(
            'register',
            'Register a customer',
            "Creates an unverified customer and sends a verification code through the store channel. Never creates a session. Send `email` on an email store and `phone` on a phone store; a 422 names every failing field at once, the store's identity field included.",
          ),
          body: RegisterBody,
          response: {
            201: Customer,
            ...bodyProblemResponses(RegisterBody, ['identity_unavailable'], {
              // The identity field is the store's (email or phone), so the schema alone cannot show it.
              fieldErrors: {
                name: ['Is required.'],
                email: ['Must be a valid email address.'],
                password: ['Must contain at least one number.'],
                password_confirmation: ['Must match the password.'],
              },
            }),
          },
        },
      },
      async (request, reply) => {
        refuseInvalidBody(request, (fields) => registrationErrors(request.store, fields, deps.allowedCallingCodes));
        await limiter.consume(request, [[limits.registrations, request.clientKey]]);
        const result = await register(deps, request.store, request.body);
        if (!result.ok) {
          throw result.error === 'invalid'
            ? new ProblemError('validation_failed', { errors: result.fields })
            : new ProblemError('identity_unavailable');
        }
        audit(request, 'customer.registered', result.value.id);
        reply.code(201);
        return result.value;
      },
    );

    app.post(
      '/verify',
      {
        schema: {
          ...describe(
            'verify',
            'Verify an identity with its code',
            'Sets verified_at when the code is the live verification code: the first proof of control, which ends every earlier session and passkey of the account and voids its other codes. Never creates a session.',
          ),
          body: VerifyBody,
          response: { 200: Customer, ...bodyProblemResponses(VerifyBody, ['invalid_identity_challenge']) },
        },
      },
      async (request) => {
        await limiter.consume(request, [[limits.codeAttempts, request.clientKey]]);
        const result = await verifyIdentity(deps, request.store, identityOf(request), request.body.code);
        if (!result.ok) throw new ProblemError('invalid_identity_challenge');
        audit(request, 'customer.verified', result.value.id);
        return result.value;
      },
    );

    await app.register(
      messageRequestRoute(services, {
        path: '/verification/resend',
        operation: 'resend-verification',
        operationId: 'resendVerification',
        summary: 'Send a new verification code',
        work: resendVerification,
      }),
    );
  };
}
