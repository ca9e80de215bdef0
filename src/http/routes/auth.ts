import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import type { FieldErrors } from '../../auth/deps.js';
import { parseIdentity } from '../../auth/identity.js';
import { login } from '../../auth/login.js';
import { requestPasswordReset, resetPassword, resetPasswordErrors } from '../../auth/password-reset.js';
import { register, registrationErrors } from '../../auth/registration.js';
import { toCustomer } from '../../auth/customers.js';
import { deleteSession, findSessionCustomer } from '../../auth/sessions.js';
import { resendVerification, verifyIdentity } from '../../auth/verification.js';
import type { Edge } from '../edge.js';
import { setCsrfCookie } from '../csrf.js';
import { ProblemError } from '../problems.js';
import { limits } from '../rate-limit.js';
import { reportSignInNotice, startSessionCookies } from '../session-cookie.js';
import { textFields, validationErrors } from '../validation.js';
import {
  AcceptedStatus,
  AuthSession,
  bodyProblemResponses,
  customerProblems,
  problemResponses,
  Customer,
  IdentityBody,
  LoginBody,
  PasswordResetStatus,
  RegisterBody,
  ResetPasswordBody,
  SignedOutStatus,
  VerifyBody,
} from '../schemas.js';
import { authDeps } from '../route-support.js';

export const loginRefusedDetail = 'The identity or password is not correct.';

export function describe(operationId: string, summary: string, description: string) {
  // Public unless a route says otherwise: these are used before a session exists.
  return { tags: ['auth'], operationId, summary, description, security: [] as Array<Record<string, string[]>> };
}

// Routes behind the store gate: 503 store_unavailable while the store is paused or closed.
const config = { customer: true };

/** The request's identity, parsed once for both the limiter and the domain. */
export function identityOf(request: FastifyRequest & { body: { identity: string } }) {
  return parseIdentity(request.store.identityMode, request.body.identity);
}

/**
 * Throws when the body failed its schema, naming every failing field: the schema's own errors,
 * plus what the domain finds in the text fields the schema let through. Without this, a body
 * missing the store's identity field and another required field would be told only of the other.
 */
export function refuseInvalidBody(
  request: FastifyRequest,
  domainErrors: (fields: Record<string, string>) => FieldErrors,
) {
  const failure = request.validationError;
  if (failure === undefined || failure === null) return;
  const fields = textFields(request.body);
  const schemaErrors = validationErrors(failure.validation);
  throw new ProblemError('validation_failed', {
    // A field the schema refused keeps the schema's words; the domain speaks for the rest.
    errors: fields === null ? schemaErrors : { ...domainErrors(fields), ...schemaErrors },
  });
}

export function authRoutes(services: Edge): FastifyPluginAsyncTypebox {
  const { config: settings, keys } = services;
  const { metrics, limiter } = services;
  const deps = authDeps(services);
  const sessionCookie = settings.sessionCookieName;

  function audit(
    request: FastifyRequest,
    event: AuditEvent,
    customerId: string | null,
    details?: Record<string, string>,
  ) {
    services.audit({
      event,
      customerId,
      clientAddress: request.ip,
      requestId: request.id,
      ...(details && { details }),
    });
  }

  function acceptMessageRequest(reply: FastifyReply, operation: string, work: () => Promise<void>) {
    // Answered before any lookup, so the time to answer cannot tell who has an account.
    services.background.run(operation, work);
    reply.code(202);
    return { status: 'accepted' as const };
  }

  return async (app) => {
    app.post(
      '/register',
      {
        config,
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
        await limiter.consume([[limits.registrations, request.clientKey]]);
        const result = await register(deps, request.store, request.body);
        if (!result.ok) {
          throw result.reason === 'invalid'
            ? new ProblemError('validation_failed', { errors: result.errors })
            : new ProblemError('identity_unavailable');
        }
        audit(request, 'customer.registered', result.customer.id);
        reply.code(201);
        return result.customer;
      },
    );

    app.post(
      '/verify',
      {
        config,
        schema: {
          ...describe(
            'verify',
            'Verify an identity with its code',
            'Sets verified_at when the code is the live verification code. Never creates a session.',
          ),
          body: VerifyBody,
          response: { 200: Customer, ...bodyProblemResponses(VerifyBody, ['invalid_identity_challenge']) },
        },
      },
      async (request) => {
        await limiter.consume([[limits.codeAttempts, request.clientKey]]);
        const customer = await verifyIdentity(deps, request.store, identityOf(request), request.body.code);
        if (customer === null) throw new ProblemError('invalid_identity_challenge');
        audit(request, 'customer.verified', customer.id);
        return customer;
      },
    );

    for (const [path, operation, work] of [
      ['/verification/resend', 'resend-verification', resendVerification],
      ['/password/forgot', 'forgot-password', requestPasswordReset],
    ] as const) {
      app.post(
        path,
        {
          config,
          schema: {
            ...describe(
              operation === 'resend-verification' ? 'resendVerification' : 'forgotPassword',
              operation === 'resend-verification' ? 'Send a new verification code' : 'Send a password reset code',
              'Answers 202 whether or not an eligible account exists, so identities cannot be probed.',
            ),
            body: IdentityBody,
            response: { 202: AcceptedStatus, ...bodyProblemResponses(IdentityBody) },
          },
        },
        async (request, reply) => {
          const identity = identityOf(request);
          const subject = `${operation}:${identity.key}`;
          await limiter.consume([
            [limits.messagesPerIdentityMinute, subject],
            [limits.messagesPerIdentityHour, subject],
            [limits.messagesPerAddress, request.clientKey],
          ]);
          const store = request.store;
          return acceptMessageRequest(reply, operation, () => work(deps, store, identity));
        },
      );
    }

    app.post(
      '/login',
      {
        config,
        schema: {
          ...describe(
            'login',
            'Log in',
            'Checks the password and sets the session cookie (replacing any the request carried) and a fresh XSRF-TOKEN. Unknown identity, wrong password and an unverified account on a store requiring verification are indistinguishable 401s, each with the detail "The identity or password is not correct." A login from a device the customer has not signed in from for 90 days queues a new_sign_in message (store setting auth.sign_in_notices); the answer does not depend on it.',
          ),
          body: LoginBody,
          response: {
            200: AuthSession,
            ...bodyProblemResponses(LoginBody, ['unauthenticated'], {
              details: { unauthenticated: loginRefusedDetail },
            }),
          },
        },
      },
      async (request, reply) => {
        const identity = identityOf(request);
        // Counted before the password check so parallel guesses cannot exceed the limit; forgiven on success.
        await limiter
          .consume([
            [limits.loginAttempts, request.clientKey],
            [limits.failedLogins, identity.key],
          ])
          .catch((error: unknown) => {
            metrics.logins.inc({ outcome: 'throttled' });
            throw error;
          });
        const previous = request.cookies[sessionCookie];
        const client = { userAgent: request.headers['user-agent'], address: request.ip };
        const result = await login(deps, request.store, identity, request.body.password, previous, client);
        metrics.logins.inc({ outcome: result.ok ? 'success' : 'failure' });
        if (!result.ok) {
          audit(request, 'login.failed', result.customerId, { method: 'password' });
          // One text for all three refusals: it must not tell which part was wrong.
          throw new ProblemError('unauthenticated', {}, {}, loginRefusedDetail);
        }
        audit(request, 'login.succeeded', result.customer.id, { method: 'password' });
        reportSignInNotice(request.log, metrics, result.signInNotice);
        await limiter.forget(limits.failedLogins, identity.key);
        startSessionCookies(reply, settings, keys.csrf, result.sessionId);
        return { auth_type: 'session' as const, customer: result.customer };
      },
    );

    app.post(
      '/password/reset',
      {
        config,
        attachValidation: true,
        schema: {
          ...describe(
            'resetPassword',
            'Set a new password with a reset code',
            'Signs the customer out of every session and sends a notice. Never signs anyone in.',
          ),
          body: ResetPasswordBody,
          response: {
            200: PasswordResetStatus,
            ...bodyProblemResponses(ResetPasswordBody, ['invalid_identity_challenge']),
          },
        },
      },
      async (request) => {
        refuseInvalidBody(request, resetPasswordErrors);
        await limiter.consume([[limits.codeAttempts, request.clientKey]]);
        const result = await resetPassword(deps, request.store, { ...request.body, identity: identityOf(request) });
        if (!result.ok) {
          throw result.reason === 'invalid'
            ? new ProblemError('validation_failed', { errors: result.errors })
            : new ProblemError('invalid_identity_challenge');
        }
        audit(request, 'password.reset', result.customerId);
        return { status: 'password_reset' as const };
      },
    );

    // Who am I: for storefront pages, and usable by a reverse proxy as a forward-auth check.
    app.get(
      '/session',
      {
        config,
        schema: {
          ...describe(
            'session',
            'Who am I',
            'The customer of the session cookie; also usable by a reverse proxy as a forward-auth check.',
          ),
          security: [{ session: [] }],
          response: { 200: AuthSession, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request) => {
        const sessionId = request.cookies[sessionCookie];
        const customer =
          sessionId === undefined ? null : await findSessionCustomer(services.db, services.clock, sessionId);
        if (customer === null) throw new ProblemError('unauthenticated');
        return { auth_type: 'session' as const, customer: toCustomer(customer) };
      },
    );

    app.post(
      '/logout',
      {
        config,
        schema: {
          ...describe(
            'logout',
            'Log out',
            'Deletes the session on the server, expires the cookie and issues a fresh XSRF-TOKEN.',
          ),
          security: [{ session: [] }],
          response: { 200: SignedOutStatus, ...problemResponses(...customerProblems, 'unauthenticated') },
        },
      },
      async (request, reply) => {
        const sessionId = request.cookies[sessionCookie];
        const customerId = sessionId === undefined ? null : await deleteSession(services.db, services.clock, sessionId);
        if (customerId === null) throw new ProblemError('unauthenticated');
        audit(request, 'logout', customerId);
        reply.clearCookie(sessionCookie, { path: '/', httpOnly: true, sameSite: 'lax', secure: settings.cookieSecure });
        setCsrfCookie(reply, keys.csrf, undefined, settings.cookieSecure);
        return { status: 'signed_out' as const };
      },
    );
  };
}
