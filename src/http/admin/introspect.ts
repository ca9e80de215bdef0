import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { toCustomer } from '../../auth/tables/customers.js';
import { findLiveSession } from '../../auth/tables/sessions.js';
import { forStore } from '../../storage/database.js';
import { normalizeHost, type StoreContext } from '../../store/store.js';
import { bodyLimitBytes } from '../core/common.js';
import { soleCookie, storeCookies } from '../core/csrf.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError } from '../core/problems.js';
import { limits } from '../core/rate-limit.js';
import { Customer } from '../core/schemas.js';
import { adminCallerOf, missingTokenDetail } from './tokens.js';

export const IntrospectBody = Type.Object(
  {
    cookie: Type.Optional(
      Type.String({
        maxLength: bodyLimitBytes,
        description:
          'The `Cookie` header the shopper sent, whole. The session cookie (SESSION_COOKIE_NAME) is read from it as the customer API reads it; a header without it is an inactive session.',
      }),
    ),
    session: Type.Optional(
      Type.String({
        minLength: 1,
        // A browser keeps no cookie larger than this.
        maxLength: 4096,
        description: "The session cookie's value alone.",
      }),
    ),
    store: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: "The shopper's store, by id or slug. With several stores, send this or `host`.",
      }),
    ),
    host: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        description: 'The host the shopper called (a storefront host of the store), instead of `store`.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Exactly one of `cookie` and `session`, and at most one of `store` and `host` (one is needed once the deployment has several stores); any other field is refused.',
  },
);
export type IntrospectBody = Static<typeof IntrospectBody>;

const time = Type.String({ format: 'date-time' });
const notExactlyOne = { body: ['Send exactly one of cookie and session.'] };
const storeNeeded = { store: ['The deployment has several stores: send store (id or slug) or host.'] };
const bothStoreAndHost = { body: ['Send at most one of store and host.'] };

export const ActiveSession = Type.Object({
  active: Type.Literal(true),
  customer: Customer,
  session: Type.Object({
    id: Type.String({
      description:
        "The session's public handle, as the customer's session list shows it; never the cookie value or its hash.",
    }),
    created_at: time,
    expires_at: Type.String({
      format: 'date-time',
      description: 'The absolute end (30 days from login); logout, revocation or 14 idle days end it sooner.',
    }),
  }),
  store: Type.Object({
    id: Type.String(),
    status: Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('closed')], {
      description:
        'Reported, never judged: while it is not `active` the customer API refuses the shopper, and the backend decides.',
    }),
  }),
});

export const InactiveSession = Type.Object(
  { active: Type.Literal(false) },
  {
    description: 'No live session: unknown, signed out, revoked, expired, or no session cookie in `cookie`.',
  },
);

const introspectRoute = declareRoute({
  operationId: 'introspectSession',
  summary: "Introspect a shopper's session",
  description:
    "For a backend that receives a shopper's request: whether its session cookie names a live session, and whose. Reads the same rows as the customer API's session check, so a session ended by logout or revocation is inactive at once, and slides its idle window as that check does. Answers while the store is paused or closed, reporting its status. Counted per token (`introspect`, 100,000 a minute, shared by every instance through REDIS_URL), never per address; not written to the audit trail one by one.",
  tag: 'sessions',
  // An introspection token is enough; none of the admin calls' `forbidden`.
  bearer: {
    problems: [
      'validation_failed',
      'store_not_found',
      'unauthenticated',
      'payload_too_large',
      'unsupported_media_type',
      'rate_limited',
      'service_unavailable',
      'internal_error',
    ],
    examples: { fieldErrors: notExactlyOne, details: { unauthenticated: missingTokenDetail }, operators: true },
    introspection: true,
  },
  body: IntrospectBody,
  answer: Type.Union([ActiveSession, InactiveSession], {
    description: 'Whether the session is live (`active: true`, with whose it is) or not (`active: false`).',
  }),
});

/** A body that gives the session one way, as validation cannot say. */
function checkOneSession(body: IntrospectBody): void {
  if ((body.cookie === undefined) === (body.session === undefined)) {
    throw new ProblemError('validation_failed', { errors: notExactlyOne });
  }
}

/** The session cookie's value a request carried, under the name the store's cookies have. */
function sessionIdOf(body: IntrospectBody, cookieName: string): string | undefined {
  return body.session ?? soleCookie(body.cookie, cookieName);
}

/** `POST /sessions/introspect`: a backend asks whether a shopper's session is live. */
export function introspectionRoutes(
  services: Pick<Edge, 'db' | 'clock' | 'config' | 'store' | 'limiter'>,
): FastifyPluginAsyncTypebox {
  const { db, clock, config, limiter } = services;

  /** The store the body names; a session is only ever looked for in it. */
  async function storeOf(body: IntrospectBody): Promise<StoreContext> {
    if (body.store !== undefined && body.host !== undefined) {
      throw new ProblemError('validation_failed', { errors: bothStoreAndHost });
    }
    if (body.store !== undefined) {
      const store = await services.store.named(body.store);
      if (store === null) throw new ProblemError('store_not_found');
      return store;
    }
    if (body.host !== undefined) {
      const store = await services.store.resolve(normalizeHost(body.host));
      if (store === null) throw new ProblemError('store_not_found');
      return store;
    }
    const only = await services.store.only();
    if (!only.ok) {
      if (only.reason === 'several_stores') throw new ProblemError('validation_failed', { errors: storeNeeded });
      throw new ProblemError('store_not_found');
    }
    return only.store;
  }

  return async (app) => {
    app.post('/sessions/introspect', introspectRoute, async (request) => {
      await limiter.consume(request, [[limits.introspections, adminCallerOf(request).tokenId]]);
      checkOneSession(request.body);
      // Not written to the audit trail: a backend asks on each of its requests, so the trail would
      // hold little else and its writes would cost more than the read. The request log names the token.
      const store = await storeOf(request.body);
      const { id, status } = store;
      const sessionId = sessionIdOf(request.body, storeCookies(config, store).sessionCookieName);
      const live = sessionId === undefined ? null : await findLiveSession(forStore(db, id), clock, sessionId);
      if (live === null) return { active: false as const };
      return {
        active: true as const,
        customer: toCustomer(live.customer),
        session: {
          id: live.publicId,
          created_at: live.createdAt.toISOString(),
          expires_at: live.expiresAt.toISOString(),
        },
        store: { id, status },
      };
    });
  };
}
