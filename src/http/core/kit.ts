import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import type { CustomerRow } from '../../auth/tables/customers.js';
import type { AuthDeps, FieldErrors } from '../../auth/deps.js';
import type { SecondStepAsked, SignedIn } from '../../auth/rules/sign-in.js';
import { secondStepCookie } from '../two-factor/cookie.js';
import type { BotCheckOperation, StoreContext } from '../../store/store.js';
import { botCheckGate } from './bot-check.js';
import { askPasswordHook } from '../../hooks/ask-password-hook.js';
import { loadPasswordHook } from '../../hooks/password-hooks.js';
import { forStore, type StoreDatabase } from '../../storage/database.js';
import { parseIdentity, phoneAllowed, type ParsedIdentity } from '../../auth/rules/identity.js';
import { findSessionCustomer } from '../../auth/tables/sessions.js';
import type { Edge } from './edge.js';
import { storeCsrfKey } from './csrf.js';
import { ProblemError } from './problems.js';
import { limits, type LimitHit, type LimitRule } from './rate-limit.js';
import { declareRoute, type Outcome, type Outcomes, type StoreFeature } from './declare.js';
import { AcceptedStatus, IdentityBody } from './schemas.js';
import {
  endSessionCookies,
  reportSignInNotice,
  requestCookies,
  sessionCookieOf,
  startSessionCookies,
} from './session-cookie.js';
import { textFields, validationErrors } from './validation.js';
import { loggedUrl } from './request-log.js';

/**
 * The edge's kit: one of each thing a customer route does around its one flow call, so a handler
 * reads gate, limit, flow, answer. Kratos' post-login hooks are `signInSucceeded`; the outcome
 * tables map a flow's failure kinds to answers, typed so that a new kind must be mapped.
 */

/** The parts of the edge the domain's dependencies are made from (see authDeps). */
export type AuthDepsSource = Pick<
  Edge,
  'db' | 'clock' | 'hasher' | 'keys' | 'config' | 'dispatcher' | 'webhooks' | 'logger' | 'breachedPasswords'
>;

/** What the kit is made from: every customer route module takes exactly this. */
export type KitSource = AuthDepsSource & Pick<Edge, 'metrics' | 'limiter' | 'audit' | 'background'>;

/**
 * What the domain's flows need from the running services, for the request's store: its database
 * handle reaches only that store's rows, and its hashing waits in that store's line.
 */
export function authDeps(services: AuthDepsSource, store: Pick<StoreContext, 'id'>): AuthDeps {
  return {
    db: forStore(services.db, store.id),
    clock: services.clock,
    hasher: services.hasher.lane(store.id),
    keys: services.keys,
    allowedCallingCodes: services.config.smsAllowedCallingCodes,
    messagesQueued: () => services.dispatcher.nudge(),
    eventsRecorded: () => services.webhooks.nudge(),
    passwordHook: async (db) => {
      // A secret sealed under an APP_SECRET no longer accepted: every such sign-in is a wrong password, said here.
      const hook = await loadPasswordHook(db, services.keys).catch((error: unknown) => {
        services.logger.error({ err: error }, 'password migration hook unusable');
        return null;
      });
      return hook === null ? null : (question) => askPasswordHook(hook, question, services.logger);
    },
    breachedPasswords: services.breachedPasswords,
    legacyPasswordBreached: (customerId) =>
      services.logger.warn(
        { customer_id: customerId, store_id: store.id },
        'an imported password that signed in is in the breach corpus: ask the customer to change it',
      ),
  };
}

/** The database as the request's store sees it (the store gate has resolved it). */
export function storeDbOf(services: Pick<Edge, 'db'>, request: FastifyRequest): StoreDatabase {
  return forStore(services.db, request.store.id);
}

/** The signed-in customer of a route declared with `session: true`, resolved by the customer scope. */
export interface Account {
  customer: CustomerRow;
  sessionId: string;
}

/** The account of a route declared with `session: true`; reading it elsewhere is a bug. */
export function accountOf(request: FastifyRequest): Account {
  if (request.account === null) throw new Error(`${loggedUrl(request)} is not a session route`);
  return request.account;
}

/** The failure part of a flow's result, as the outcome tables read it. */
export interface Refusal<E extends string> {
  error: E;
  fields?: FieldErrors;
  customerId?: string | null;
  /** A block's end, told with `account_blocked` (the credential was right). */
  until?: Date | null;
}

/** The request's identity, parsed once for both the limiter and the domain. */
export function identityOf(request: FastifyRequest & { body: { identity: string } }): ParsedIdentity {
  return parseIdentity(request.store.identityMode, request.body.identity);
}

/**
 * The request's session cookie and its live customer, or `401 unauthenticated`: resolved once, by
 * the customer scope, for every route declared with `session: true`, before its body is validated.
 */
export async function resolveAccount(
  services: Pick<Edge, 'db' | 'clock' | 'config'>,
  request: FastifyRequest,
): Promise<Account> {
  const account = await findAccount(services, request);
  if (account === null) throw new ProblemError('unauthenticated');
  return account;
}

/**
 * The request's session cookie and its live customer (sliding the session's idle window), or null:
 * for a route that answers a missing session its own way rather than with `resolveAccount`'s 401.
 */
export async function findAccount(
  services: Pick<Edge, 'db' | 'clock' | 'config'>,
  request: FastifyRequest,
): Promise<Account | null> {
  const sessionId = sessionCookieOf(request, services.config);
  const customer =
    sessionId === undefined ? null : await findSessionCustomer(storeDbOf(services, request), services.clock, sessionId);
  return sessionId === undefined || customer === null ? null : { customer, sessionId };
}

/** Records a security event of the request behind the answer. */
function requestAuditor(record: Edge['audit']) {
  return (request: FastifyRequest, event: AuditEvent, customerId: string | null, details?: Record<string, string>) =>
    record({
      storeId: request.store.id,
      event,
      customerId,
      clientAddress: request.ip,
      requestId: request.id,
      ...(details && { details }),
    });
}

type RequestAuditor = ReturnType<typeof requestAuditor>;

/** The limits a route counts, forgives, and counts around a check of the current password. */
function limiting(limiter: Edge['limiter']) {
  /** Counts the hits before anything is checked; a refusal is also counted by `throttled`. */
  async function limit(request: FastifyRequest, hits: LimitHit[], throttled?: () => void): Promise<void> {
    await limiter.consume(request, hits, request.store.id).catch((error: unknown) => {
      throttled?.();
      throw error;
    });
  }

  /** Forgives the subject's count of a rule (a right password after wrong ones). */
  function forget(request: FastifyRequest, rule: LimitRule, subject: string): void {
    limiter.forget(rule, subject, request.store.id, request.log);
  }

  /**
   * A check of the current password from a signed-in session: counted as a login attempt before it
   * runs, so parallel guesses cannot pass the identity's failed-login limit, and forgiven when the
   * flow succeeds. The flow's own outcome table records a wrong one (reauthentication.failed).
   */
  async function reauthenticated<R extends { ok: boolean }>(
    request: FastifyRequest,
    customer: CustomerRow,
    flow: () => Promise<R>,
    throttled?: () => void,
  ): Promise<R> {
    const hits: LimitHit[] = [
      [limits.loginAttempts, request.clientKey],
      [limits.failedLogins, customer.identity_value],
    ];
    await limit(request, hits, throttled);
    const result = await flow();
    if (result.ok) forget(request, limits.failedLogins, customer.identity_value);
    return result;
  }

  return { limit, forget, reauthenticated };
}

/**
 * A flow's failure as its outcome says: the metric counted, the audit event recorded (about the
 * customer the failure names, or the signed-in one), and the problem to throw.
 */
function refusals(audit: RequestAuditor) {
  return <E extends string>(
    request: FastifyRequest,
    outcomes: Outcomes<E>,
    failure: Refusal<E>,
    {
      customerId = failure.customerId ?? null,
      count,
    }: { customerId?: string | null; count?: (label: string, request: FastifyRequest) => void } = {},
  ): ProblemError => {
    const outcome: Outcome = outcomes[failure.error];
    if (outcome.metric !== undefined) count?.(outcome.metric, request);
    if (outcome.audit !== undefined) audit(request, outcome.audit.event, customerId, outcome.audit.details);
    const extras = failure.fields
      ? { errors: failure.fields }
      : failure.until
        ? { until: failure.until.toISOString() }
        : {};
    return new ProblemError(outcome.problem, extras, {}, outcome.detail);
  };
}

/**
 * Answers 202 before any lookup and leaves the work behind the answer, so the time to answer
 * cannot tell who has an account. When this instance has too much work waiting, the work is not
 * taken and the request answers 503 service_unavailable with Retry-After instead (a
 * BackgroundBusyError): decided by the queue alone, before any lookup, so every identity gets the
 * same answer, and never a 202 for work that is then dropped.
 */
function accepting(background: Edge['background']) {
  return (reply: FastifyReply, operation: string, work: () => Promise<void>, lane?: string) => {
    background.admit(operation, work, lane);
    reply.code(202);
    return { status: 'accepted' as const };
  };
}

/** How a pending sign-in may be finished: a code from the app, or a recovery code. */
const secondStepMethods: Array<'totp' | 'recovery_code'> = ['totp', 'recovery_code'];

/** The kit of one route module, built once from the services. */
export function routeKit(services: KitSource) {
  const { config, keys, metrics } = services;
  const audit = requestAuditor(services.audit);
  const { limit, forget, reauthenticated } = limiting(services.limiter);

  /**
   * The end of every way of signing in, once its first step was right (Kratos' post-login hooks).
   * A session opened: the login counted and audited, the new-device notice reported, the
   * identity's failed logins forgiven, and the session cookie and a fresh XSRF-TOKEN handed to the
   * browser. A second step asked for: the cookie of the pending sign-in, and nothing forgiven yet.
   */
  function signInSucceeded(
    request: FastifyRequest,
    reply: FastifyReply,
    signedIn: SignedIn | SecondStepAsked,
    method: 'password' | 'code' | 'passkey' | 'provider',
    identityKey?: string,
    details?: Record<string, string>,
  ) {
    if ('secondStep' in signedIn) {
      metrics.logins.inc({ outcome: 'second_step', store: request.storeLabel });
      audit(request, 'login.second_step_asked', signedIn.customerId, { method, ...details });
      secondStepCookie.set(reply, keys.csrf, signedIn.secondStep.handle, config.cookieSecure);
      return { auth_type: 'two_factor_required' as const, methods: secondStepMethods };
    }
    metrics.logins.inc({ outcome: 'success', store: request.storeLabel });
    audit(request, 'login.succeeded', signedIn.customer.id, { method, ...details });
    reportSignInNotice(request.log, metrics, signedIn.signInNotice);
    if (identityKey !== undefined) forget(request, limits.failedLogins, identityKey);
    startSessionCookies(
      reply,
      requestCookies(config, request),
      storeCsrfKey(keys.csrf, request.store.id),
      signedIn.sessionId,
    );
    return { auth_type: 'session' as const, customer: signedIn.customer };
  }

  return {
    depsOf: (request: FastifyRequest) => authDeps(services, request.store),
    audit,
    limit,
    forget,
    refusal: refusals(audit),
    reauthenticated,
    signInSucceeded,
    signOut: (request: FastifyRequest, reply: FastifyReply) =>
      endSessionCookies(reply, requestCookies(config, request), storeCsrfKey(keys.csrf, request.store.id)),
    accept: accepting(services.background),
    passBotCheck: botCheckGate(services),
  };
}

export type RouteKit = ReturnType<typeof routeKit>;

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
  services: KitSource,
  route: {
    path: string;
    /** Names the background work and the per-identity counters. */
    operation: string;
    operationId: string;
    summary: string;
    /** In place of the resend and forgot description. */
    description?: string;
    /** The store setting the route belongs to (404 not_found while it is off). */
    feature?: StoreFeature;
    /** The operation a store's bot check names it by. */
    botCheck: BotCheckOperation;
    work: (deps: AuthDeps, store: StoreContext, identity: ParsedIdentity) => Promise<void>;
  },
): FastifyPluginAsyncTypebox {
  const { depsOf, limit, accept, passBotCheck } = routeKit(services);
  const { feature } = route;
  return async (app) => {
    app.post(
      route.path,
      declareRoute({
        operationId: route.operationId,
        summary: route.summary,
        description: route.description ?? messageRequestDescription,
        ...(feature && { feature }),
        body: IdentityBody,
        answer: AcceptedStatus,
        status: 202,
        botCheck: route.botCheck,
      }),
      async (request, reply) => {
        await passBotCheck(request, route.botCheck);
        const identity = identityOf(request);
        // A full queue refuses before the limits count, so the retry it asks for is not a 429.
        services.background.assertRoom(route.operation);
        const subject = `${route.operation}:${identity.key}`;
        await limit(request, [
          [limits.messagesPerIdentityMinute, subject],
          [limits.messagesPerIdentityHour, subject],
          [limits.messagesPerAddress, request.clientKey],
        ]);
        const store = request.store;
        const deps = depsOf(request);
        // A number the store may not send to gets the same 202 and nothing behind it (SMS pumping).
        const sendable =
          identity.value === null ||
          identity.mode !== 'phone' ||
          phoneAllowed(identity.value, deps.allowedCallingCodes, store.phoneCountries);
        const work = sendable ? () => route.work(deps, store, identity) : async () => {};
        return accept(reply, route.operation, work, subject);
      },
    );
  };
}
