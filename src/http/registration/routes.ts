import { fieldPhrase } from '../../auth/rules/field-phrase.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { register, registrationErrors } from '../../auth/flows/registration.js';
import { resendVerification, verifyIdentity } from '../../auth/flows/verification.js';
import { requestedLanguage } from '../../i18n/negotiate.js';
import { declareRoute, type Outcomes } from '../core/declare.js';
import { identityOf, messageRequestRoute, refuseInvalidBody, routeKit, type KitSource } from '../core/kit.js';
import { limits } from '../core/rate-limit.js';
import { Customer, RegisterBody, VerifyBody } from '../core/schemas.js';

const registerOutcomes: Outcomes<'invalid' | 'identity_unavailable'> = {
  invalid: { problem: 'validation_failed' },
  identity_unavailable: { problem: 'identity_unavailable' },
};

const verifyOutcomes: Outcomes<'invalid_challenge'> = { invalid_challenge: { problem: 'invalid_identity_challenge' } };

const registerRoute = declareRoute({
  operationId: 'register',
  summary: 'Register a customer',
  description:
    "Creates an unverified customer and sends a verification code through the store channel. Never creates a session. Send `email` on an email store and `phone` on a phone store; a 422 names every failing field at once, the store's identity field included. The customer's messages are written in `locale` when sent (one of the store's languages), else in the store language `Accept-Language` asks for, else in the store's default language.",
  body: RegisterBody,
  ownValidation: true,
  answer: Customer,
  status: 201,
  problems: [registerOutcomes],
  botCheck: 'register',
  // The identity field is the store's (email or phone), so the schema alone cannot show it.
  examples: {
    fieldErrors: {
      name: [fieldPhrase('required')],
      email: [fieldPhrase('email')],
      password: [fieldPhrase('password_number')],
      password_confirmation: [fieldPhrase('password_mismatch')],
    },
  },
});

const verifyRoute = declareRoute({
  operationId: 'verify',
  summary: 'Verify an identity with its code',
  description:
    'Sets verified_at when the code is the live verification code: the first proof of control, which ends every earlier session and passkey of the account and voids its other codes. Never creates a session.',
  body: VerifyBody,
  answer: Customer,
  problems: [verifyOutcomes],
});

/** Registration: create the account, verify its identity with a code, ask for a new code. */
export function registrationRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  const { depsOf, audit, limit, refusal, passBotCheck } = routeKit(services);

  return async (app) => {
    app.post('/register', registerRoute, async (request, reply) => {
      refuseInvalidBody(request, (fields) =>
        registrationErrors(request.store, fields, services.config.smsAllowedCallingCodes),
      );
      await passBotCheck(request, 'register');
      await limit(request, [[limits.registrations, request.clientKey]]);
      const { store } = request;
      const requested = requestedLanguage(request.headers['accept-language'], store.languages);
      const result = await register(depsOf(request), store, request.body, requested);
      if (!result.ok) throw refusal(request, registerOutcomes, result);
      audit(request, 'customer.registered', result.value.id);
      reply.code(201);
      return result.value;
    });

    app.post('/verify', verifyRoute, async (request) => {
      await limit(request, [[limits.codeAttempts, request.clientKey]]);
      const result = await verifyIdentity(depsOf(request), identityOf(request), request.body.code);
      if (!result.ok) throw refusal(request, verifyOutcomes, result);
      audit(request, 'customer.verified', result.value.id);
      return result.value;
    });

    await app.register(
      messageRequestRoute(services, {
        path: '/verification/resend',
        operation: 'resend-verification',
        botCheck: 'resend',
        operationId: 'resendVerification',
        summary: 'Send a new verification code',
        work: resendVerification,
      }),
    );
  };
}
