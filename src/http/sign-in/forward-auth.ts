import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { declareRoute } from '../core/declare.js';
import { findAccount, type KitSource } from '../core/kit.js';

/**
 * Forward auth: a reverse proxy (nginx auth_request, Traefik forwardAuth, Caddy forward_auth)
 * asks, with the shopper's own headers, whether the request carries a live session, and hands
 * the identity headers of the answer to the application behind it.
 */

/** The identity headers of a 200, as the proxy copies them onto the request it forwards. */
const forwardAuthHeaders = {
  customerId: 'x-customer-id',
  identityType: 'x-customer-identity-type',
  identity: 'x-customer-identity',
  verified: 'x-customer-verified',
  storeId: 'x-store-id',
} as const;

/**
 * The value with every character that is not visible ASCII, and `%` itself, percent-encoded as
 * UTF-8: a header value then holds nothing a proxy could split on or mangle, and decodes back
 * unambiguously. Identities are ASCII here: only an email with a `%` in it changes (`%25`).
 */
export function headerValue(value: string): string {
  return value.replace(/[^\x21-\x24\x26-\x7e]/gu, (character) =>
    [...Buffer.from(character, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

const forwardAuthRoute = declareRoute({
  operationId: 'forwardAuth',
  summary: 'Forward auth for a reverse proxy',
  description:
    "For a reverse proxy's forward auth (nginx `auth_request`, Traefik `forwardAuth`, Caddy `forward_auth`): the proxy sends the shopper's request headers here and, on a 200, copies the identity headers onto the request it forwards, replacing any the shopper sent. Without a live session the answer is 401 with no body, which the proxy passes on or replaces with its own page. Slides the session's idle window as Who am I does. Counted by the any-call limit per client address: behind the proxy, set `TRUST_PROXY=true` so each shopper is counted by their own. A paused or closed store answers 503 store_unavailable, as every customer call does (nginx turns it into a 500).",
  session: 'handler',
  tag: 'auth',
  answer: Type.Null({
    description: 'A live session. No body: the customer is in the headers.',
    headers: {
      'X-Customer-Id': Type.String({ format: 'uuid', description: "The customer's id." }),
      'X-Customer-Identity-Type': Type.Union([Type.Literal('email'), Type.Literal('phone')], {
        description: "The store's identity mode: what X-Customer-Identity holds.",
      }),
      'X-Customer-Identity': Type.String({
        description:
          'The email address or the E.164 phone number. Any character that is not visible ASCII, and `%`, is percent-encoded as UTF-8. Identities are ASCII, so only an email with a `%` changes: `a%b@example.com` is sent as `a%25b@example.com`.',
      }),
      'X-Customer-Verified': Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: 'Whether the customer has proved control of the identity.',
      }),
      'X-Store-Id': Type.String({ description: "The store's id." }),
    },
  }),
  answers: {
    401: Type.Null({
      description:
        'No live session: no cookie, or one that is unknown, signed out, revoked or expired. No body, unlike every other refusal: a proxy shows the answer to the shopper as it is.',
    }),
  },
});

/** The check a reverse proxy makes before it forwards a shopper's request. */
export function forwardAuthRoutes(services: KitSource): FastifyPluginAsyncTypebox {
  return async (app) => {
    // GET, as every proxy sends it; Fastify answers HEAD alike.
    app.get('/forward', forwardAuthRoute, async (request, reply) => {
      const account = await findAccount(services, request);
      if (account === null) return reply.code(401).send();
      const { customer } = account;
      return reply
        .headers({
          [forwardAuthHeaders.customerId]: customer.id,
          [forwardAuthHeaders.identityType]: customer.identity_type,
          [forwardAuthHeaders.identity]: headerValue(customer.identity_value),
          [forwardAuthHeaders.verified]: String(customer.verified_at !== null),
          [forwardAuthHeaders.storeId]: headerValue(request.store.id),
        })
        .send();
    });
  };
}
