import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { BotCheckOperation } from '../../store/store.js';
import type { AuditEvent } from '../../audit.js';
import type { AnyProblemCode, FieldMessage, ProblemCode } from './problems.js';
import {
  bodyProblemResponses,
  customerProblems,
  ownProblemResponses,
  problemResponses,
  type ProblemExamples,
} from './problem-responses.js';

/** A part of the API that a store setting turns on: the setting's field in the store context. */
export type StoreFeature = 'signInWithCode' | 'passkeys' | 'twoFactorOffered';

/** What a failure of a flow answers: its problem, and what the audit trail and metrics record. */
export interface Outcome {
  problem: ProblemCode;
  /** The problem's detail, where one text must cover several causes. */
  detail?: FieldMessage;
  /** Recorded with the customer the failure names, when it names one. */
  audit?: { event: AuditEvent; details?: Record<string, string> };
  /** The label the route's metric counts the failure under. */
  metric?: string;
}

/** Every failure kind of a flow mapped to its outcome: a kind a flow adds fails to compile until mapped. */
export type Outcomes<E extends string> = { readonly [Kind in E]: Outcome };

/** A wrong current password from a signed-in session: a 422, recorded as a failed login is. */
export function wrongPasswordOutcome(operation: string): Outcome {
  return {
    problem: 'validation_failed',
    metric: 'wrong_password',
    audit: { event: 'reauthentication.failed', details: { operation } },
  };
}

/**
 * A sign-in whose credential was right, of a blocked account: `403 account_blocked`, counted and
 * recorded as a failed login of its method with the reason.
 */
export function signInBlocked(method: 'password' | 'code' | 'passkey' | 'provider'): Outcome {
  return {
    problem: 'account_blocked',
    audit: { event: 'login.failed', details: { method, reason: 'blocked' } },
    metric: 'blocked',
  };
}

/** A refused sign-in: counted and recorded as a failed login of its method. */
export function signInRefused(method: 'password' | 'code', problem: ProblemCode, detail?: FieldMessage): Outcome {
  return {
    problem,
    ...(detail && { detail }),
    audit: { event: 'login.failed', details: { method } },
    metric: 'failure',
  };
}

/**
 * A route of the admin listener: called with a bearer token instead of a session, and answering
 * the problems every such call can (`problems`), in the listener's words (`examples`).
 */
export interface BearerCaller {
  problems: AnyProblemCode[];
  examples: ProblemExamples;
  /** The token may be an introspection token as well as an admin token. */
  introspection?: boolean;
}

/** What a route is: its words, what it needs, what it takes and every answer it gives. */
export interface RouteDeclaration<
  Body extends TObject | undefined,
  Params extends TObject | undefined,
  Query extends TObject | undefined = undefined,
  Headers extends TObject | undefined = undefined,
> {
  operationId: string;
  summary: string;
  description: string;
  /** An admin listener's route; without it, a customer route. */
  bearer?: BearerCaller;
  /**
   * Needs the session cookie: the customer scope resolves it before the body is validated
   * (`accountOf`), the answer may be 401 unauthenticated, and the route is tagged `account`.
   * `'handler'`: the handler reads it itself (`findAccount`) and answers a missing session its own
   * way, documented in `answers`; the scope resolves nothing.
   */
  session?: boolean | 'handler';
  /** The OpenAPI tag, where it is not the one `session` implies (an admin route always names one). */
  tag?: 'auth' | 'account' | 'stores' | 'customers' | 'webhooks' | 'sessions';
  /** The store setting the route belongs to: while it is off, the route answers 404 not_found. */
  feature?: StoreFeature;
  /** A provider's way back: see `providerCallback` in scopes.ts. */
  providerCallback?: boolean;
  body?: Body;
  params?: Params;
  /** The query string's schema (a navigation's parameters). */
  query?: Query;
  /** Request headers the route reads (an admin route's `Idempotency-Key`). */
  headers?: Headers;
  /**
   * A body that fails its schema reaches the handler, which names every failing field with
   * `refuseInvalidBody` (the schema's and the domain's), instead of Fastify's first one.
   */
  ownValidation?: boolean;
  /** The success answer's schema, and its status when it is not 200. */
  answer: TSchema;
  status?: 200 | 201 | 202 | 302 | 303;
  /** Answers that are not problem documents, by status, besides the success answer. */
  answers?: Record<number, TSchema>;
  /**
   * The route's own problems besides those of every customer route (and of a session, a feature
   * and a body): its outcome tables' problems and any other it throws.
   */
  problems?: Array<AnyProblemCode | Outcomes<string>>;
  examples?: ProblemExamples;
  /**
   * The operation a store's bot check may cover (see bot-check.ts): the route takes the token as
   * `X-Captcha-Token` besides its body's `captcha_token`, and may answer 503 while the provider cannot.
   */
  botCheck?: BotCheckOperation;
}

const botCheckHeaders = Type.Object({
  'x-captcha-token': Type.Optional(
    Type.String({
      description:
        "The token of the store's bot check, where the body has no `captcha_token`: needed when the store's `auth.bot_check` lists the operation.",
    }),
  ),
});

const botCheckNote =
  " When the store's bot check (`auth.bot_check`) lists this operation, the request carries the widget's token (`captcha_token` or `X-Captcha-Token`): a missing or refused one is a 422 on `captcha_token`, and while the provider cannot answer, 503 service_unavailable with Retry-After.";

/** The problem codes a list of codes and outcome tables can answer, in their order. */
function problemCodes(problems: Array<AnyProblemCode | Outcomes<string>>): AnyProblemCode[] {
  return problems.flatMap((entry) =>
    typeof entry === 'string' ? [entry] : Object.values(entry).map((outcome) => outcome.problem),
  );
}

/**
 * A route's options, from its declaration: the OpenAPI words and tag, the config the customer
 * scope reads (session, feature), the schemas, and every answer documented, with the problems a
 * session, a feature and a body bring derived rather than listed by hand. An admin route
 * (`bearer`) lists its own, beside those every admin call can answer.
 */
export function declareRoute<
  Body extends TObject | undefined = undefined,
  Params extends TObject | undefined = undefined,
  Query extends TObject | undefined = undefined,
  Headers extends TObject | undefined = undefined,
>(declaration: RouteDeclaration<Body, Params, Query, Headers>) {
  const { session = false, feature, body, params, query, headers, examples, bearer } = declaration;
  const codes = [
    ...(session === true ? (['unauthenticated'] as const) : []),
    ...problemCodes(declaration.problems ?? []),
    ...(feature ? (['not_found'] as const) : []),
    ...(declaration.botCheck ? (['validation_failed', 'service_unavailable'] as const) : []),
  ];
  // A customer route answers only the customer API's problems.
  const customerCodes = codes as ProblemCode[];
  const tag = declaration.tag ?? (session ? 'account' : 'auth');
  const problems = bearer
    ? ownProblemResponses([...codes, ...bearer.problems], { ...bearer.examples, ...examples })
    : body
      ? bodyProblemResponses(body, customerCodes, examples)
      : problemResponses(...customerProblems, ...customerCodes);
  return {
    ...(declaration.ownValidation && { attachValidation: true }),
    config: {
      session: session === true,
      ...(feature && { feature }),
      ...(declaration.providerCallback && { providerCallback: true }),
      ...(bearer?.introspection && { introspectionTokens: true }),
    },
    schema: {
      tags: [tag],
      operationId: declaration.operationId,
      summary: declaration.summary,
      description: declaration.botCheck ? `${declaration.description}${botCheckNote}` : declaration.description,
      security: bearer
        ? [{ bearer: [] as string[] }]
        : session
          ? [{ session: [] as string[] }]
          : ([] as Array<Record<string, string[]>>),
      // Only the parts the route has; typed as declared, so the handler's request is typed by them.
      ...((body ? { body } : {}) as { body: Body }),
      ...((params ? { params } : {}) as { params: Params }),
      ...((query ? { querystring: query } : {}) as { querystring: Query }),
      ...((headers ? { headers } : declaration.botCheck ? { headers: botCheckHeaders } : {}) as { headers: Headers }),
      response: { [declaration.status ?? 200]: declaration.answer, ...declaration.answers, ...problems },
    },
  };
}
