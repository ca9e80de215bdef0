import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../audit.js';
import type { CustomerRow } from '../auth/customers.js';
import type { AuthDeps, FieldErrors } from '../auth/deps.js';
import type { StoreContext } from '../store/store.js';
import { parseIdentity, type ParsedIdentity } from '../auth/identity.js';
import { findSessionCustomer } from '../auth/sessions.js';
import type { Edge } from './edge.js';
import { ProblemError } from './problems.js';
import { limits } from './rate-limit.js';
import { AcceptedStatus, bodyProblemResponses, IdentityBody } from './schemas.js';
import { textFields, validationErrors } from './validation.js';

/** The parts of the edge the domain's dependencies are made from (see authDeps). */
export type AuthDepsSource = Pick<Edge, 'db' | 'clock' | 'hasher' | 'keys' | 'config' | 'dispatcher'>;

/** What the domain's flows need from the running services; the same for every route module. */
export function authDeps(services: AuthDepsSource): AuthDeps {
  return {
    db: services.db,
    clock: services.clock,
    hasher: services.hasher,
    keys: services.keys,
    allowedCallingCodes: services.config.smsAllowedCallingCodes,
    messagesQueued: () => services.dispatcher.nudge(),
  };
}

/**
 * The request's session cookie and its live customer, or `401 unauthenticated` before anything
 * else of the request is looked at: the first step of every call of the account area.
 */
export async function signedIn(
  services: Pick<Edge, 'db' | 'clock' | 'config'>,
  request: FastifyRequest,
): Promise<{ sessionId: string; customer: CustomerRow }> {
  const sessionId = request.cookies[services.config.sessionCookieName];
  const customer = sessionId === undefined ? null : await findSessionCustomer(services.db, services.clock, sessionId);
  if (sessionId === undefined || customer === null) throw new ProblemError('unauthenticated');
  return { sessionId, customer };
}

export function describe(operationId: string, summary: string, description: string) {
  // Public unless a route says otherwise: these are used before a session exists.
  return { tags: ['auth'], operationId, summary, description, security: [] as Array<Record<string, string[]>> };
}

/** The request's identity, parsed once for both the limiter and the domain. */
export function identityOf(request: FastifyRequest & { body: { identity: string } }): ParsedIdentity {
  return parseIdentity(request.store.identityMode, request.body.identity);
}

/** Records a security event of the request behind the answer. */
export function auditor(services: Pick<Edge, 'audit'>) {
  return (request: FastifyRequest, event: AuditEvent, customerId: string | null, details?: Record<string, string>) =>
    services.audit({
      event,
      customerId,
      clientAddress: request.ip,
      requestId: request.id,
      ...(details && { details }),
    });
}

/**
 * Answers 202 before any lookup and leaves the work behind the answer, so the time to answer
 * cannot tell who has an account. When this instance has too much work waiting, the work is not
 * taken and the request answers 503 service_unavailable with Retry-After instead (a
 * BackgroundBusyError): decided by the queue alone, before any lookup, so every identity gets the
 * same answer, and never a 202 for work that is then dropped.
 */
export function acceptMessageRequest(
  services: Pick<Edge, 'background'>,
  reply: FastifyReply,
  operation: string,
  work: () => Promise<void>,
) {
  services.background.admit(operation, work);
  reply.code(202);
  return { status: 'accepted' as const };
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

/** How resend and forgot are described in the OpenAPI document. */
const messageRequestDescription =
  'Answers 202 whether or not an eligible account exists, so identities cannot be probed. While this instance has too much work waiting, answers 503 service_unavailable with Retry-After instead, alike for every identity, and takes nothing on.';

/**
 * A request for a message about an identity (a new verification code, a reset code): counted per
 * identity and per address, then answered 202 whether or not an eligible account exists, so
 * identities cannot be probed.
 */
export function messageRequestRoute(
  services: AuthDepsSource & Pick<Edge, 'limiter' | 'background'>,
  route: {
    path: string;
    /** Names the background work and the per-identity counters. */
    operation: string;
    operationId: string;
    summary: string;
    work: (deps: AuthDeps, store: StoreContext, identity: ParsedIdentity) => Promise<void>;
  },
): FastifyPluginAsyncTypebox {
  const deps = authDeps(services);
  return async (app) => {
    app.post(
      route.path,
      {
        schema: {
          ...describe(route.operationId, route.summary, messageRequestDescription),
          body: IdentityBody,
          response: { 202: AcceptedStatus, ...bodyProblemResponses(IdentityBody) },
        },
      },
      async (request, reply) => {
        const identity = identityOf(request);
        // A full queue refuses before the limits count, so the retry it asks for is not a 429.
        services.background.assertRoom(route.operation);
        const subject = `${route.operation}:${identity.key}`;
        await services.limiter.consume(request, [
          [limits.messagesPerIdentityMinute, subject],
          [limits.messagesPerIdentityHour, subject],
          [limits.messagesPerAddress, request.clientKey],
        ]);
        const store = request.store;
        return acceptMessageRequest(services, reply, route.operation, () => route.work(deps, store, identity));
      },
    );
  };
}
