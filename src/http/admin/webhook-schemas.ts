import type { OpenAPIV3_1 } from 'openapi-types';
import { Type, type TSchema } from '@sinclair/typebox';
import {
  allEvents,
  customerEventTypes,
  loudEventTypes,
  testEventType,
  type WebhookEventType,
} from '../../hooks/webhook-catalogue.js';

/**
 * The admin API's webhook shapes, and the catalogue of events (OpenAPI 3.1 `webhooks`): each
 * event's body with its schema and an example, as a receiver gets it.
 */

const time = Type.String({ format: 'date-time' });
const nullableTime = Type.Union([time, Type.Null()]);

export const EventName = Type.String({
  maxLength: 64,
  description: `An event type of the catalogue (the admin OpenAPI document's \`webhooks\`), or \`${allEvents}\` for every type except ${loudEventTypes.map((t) => `\`${t}\``).join(', ')} (loud: asked for by name only).`,
  examples: ['customer.registered', allEvents],
});

export const WebhookEndpoint = Type.Object({
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.String(),
  enabled: Type.Boolean(),
  disabled_at: nullableTime,
  disabled_reason: Type.Union([Type.String(), Type.Null()], {
    description:
      'Why it stopped: it answered `410 Gone`, no delivery succeeded for 5 days, or the platform turned it off.',
  }),
  failing_since: Type.Union([time, Type.Null()], {
    description: 'When its current run of failed attempts began; null once an attempt succeeds.',
  }),
  previous_secret_until: Type.Union([time, Type.Null()], {
    description: 'After a rotation: until when the previous secret still signs beside the new one.',
  }),
  created_at: time,
  updated_at: time,
});

export const WebhookEndpointWithSecret = Type.Composite([
  WebhookEndpoint,
  Type.Object({
    secret: Type.String({
      description: 'The signing secret (`whsec_…`): answered here only, never again. Keep it in the receiver.',
    }),
  }),
]);

const url = Type.String({
  maxLength: 2048,
  description:
    'Where events are POSTed: `https://` (`http://` too outside production). Private, loopback and link-local addresses are refused, here and again at every delivery after the name is resolved, unless WEBHOOK_ALLOW_PRIVATE=true.',
});
const events = Type.Array(EventName, { minItems: 1, maxItems: 20 });
const description = Type.String({ maxLength: 500 });

export const NewWebhookBody = Type.Object(
  { url, events, description: Type.Optional(description) },
  { additionalProperties: false },
);

export const WebhookPatchBody = Type.Object(
  {
    url: Type.Optional(url),
    events: Type.Optional(events),
    description: Type.Optional(description),
    enabled: Type.Optional(
      Type.Boolean({
        description:
          '`true` turns a disabled endpoint back on: what was queued for it before it stopped is sent now. `false` holds those, and the events while it is off are not queued for it.',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

const Attempt = Type.Object({
  at: time,
  status: Type.Union([Type.Integer(), Type.Null()], { description: "The answer's status; null when none came." }),
  error: Type.Union([Type.String(), Type.Null()], {
    description: 'Why no answer came (refused, timed out, a private address).',
  }),
  duration_ms: Type.Integer(),
});

export const DeliveryList = Type.Object({
  deliveries: Type.Array(
    Type.Object({
      id: Type.String({ description: 'The delivery, for `…/deliveries/{delivery_id}/retry`.' }),
      event_id: Type.String({ description: 'The `webhook-id` of every attempt.' }),
      type: Type.String(),
      status: Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed')]),
      attempts: Type.Array(Attempt, { description: 'The last 20 attempts, oldest first.' }),
      next_attempt_at: nullableTime,
      created_at: time,
      delivered_at: nullableTime,
    }),
  ),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'The next page: `?cursor=`; null at the end.' }),
});

export const DeliveriesQuery = Type.Object({
  cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$' })),
  // Text, as a query string carries it: the validator coerces no types, so an integer would refuse every value.
  limit: Type.Optional(
    Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Deliveries per page, 1 to 100 (default 50).' }),
  ),
});

// The event bodies.

const exampleStore = 'default';
const exampleAt = '2026-11-28T09:30:00.000Z';
const exampleCustomer = {
  id: '0f8fad5b-d9cb-469f-a165-70867728950e',
  identity: { type: 'email', value: 'ada@example.com', verified_at: exampleAt },
  name: 'Ada',
  external_id: 'shop-4711',
};

const Customer = Type.Object({
  id: Type.String({ format: 'uuid' }),
  identity: Type.Object({
    type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
    value: Type.String({ description: 'The email address, or the phone number in E.164.' }),
    verified_at: nullableTime,
  }),
  name: Type.String(),
  external_id: Type.Union([Type.String(), Type.Null()], {
    description: "The customer's id in the system an import brought them from.",
  }),
});

interface EventEntry {
  summary: string;
  description: string;
  data: Record<string, TSchema>;
  example: Record<string, unknown>;
}

const customerEntry = (summary: string, description: string, data: Record<string, TSchema> = {}, example = {}) => ({
  summary,
  description,
  data: { customer: Customer, ...data },
  example: { customer: exampleCustomer, ...example },
});

const catalogue: Record<WebhookEventType, EventEntry> = {
  'customer.registered': customerEntry(
    'A customer registered',
    'A new account: by registration with a password (its identity still unproven), by a provider sign-in (proven; `customer.verified` follows), or by the platform’s staff (`staff`; `customer.verified` follows when they created it verified).',
    { method: Type.Union([Type.Literal('password'), Type.Literal('provider'), Type.Literal('staff')]) },
    { method: 'password' },
  ),
  'customer.verified': customerEntry(
    'A customer proved their identity for the first time',
    'The first proof of control, whichever way: a verification code, a reset code, a sign-in code or a provider. Attach guest orders to the address only after this.',
  ),
  'customer.identity_changed': customerEntry(
    'A customer changed their email or phone',
    'The new identity is proven (or, when staff changed it, as they said: see `customer.identity.verified_at`); `previous_identity` is the one it replaced.',
    { previous_identity: Type.Object({ type: Type.String(), value: Type.String() }) },
    { previous_identity: { type: 'email', value: 'ada@old.example' } },
  ),
  'customer.password_changed': customerEntry(
    'A customer changed or reset their password',
    '`how`: `changed` (signed in, with the current password), `reset` (with a code) or `retired` (staff required a reset: the password no longer signs in, a reset code was sent). Their other sessions ended with it.',
    { how: Type.Union([Type.Literal('changed'), Type.Literal('reset'), Type.Literal('retired')]) },
    { how: 'reset' },
  ),
  'customer.sessions_revoked': customerEntry(
    "A customer's sessions were ended on purpose",
    '`sessions`: `one`, `others` (all but the caller’s) or `all`; `by`: `customer` (from their account) or `staff` (the admin API or the command line).',
    {
      sessions: Type.Union([Type.Literal('one'), Type.Literal('others'), Type.Literal('all')]),
      by: Type.Union([Type.Literal('customer'), Type.Literal('staff')]),
    },
    { sessions: 'all', by: 'staff' },
  ),
  'customer.blocked': customerEntry(
    'Staff blocked a customer',
    'No sign-in opens a session until the block ends (`until`, null: until lifted); their sessions ended with it. `reason` is what staff wrote.',
    { reason: Type.String(), until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]) },
    { reason: 'chargeback fraud', until: null },
  ),
  'customer.unblocked': customerEntry('Staff lifted a block', 'The customer can sign in again.'),
  'customer.deleted': {
    summary: 'A customer was deleted',
    description:
      'The account is erased: only its id and `external_id` are sent. Forget the customer. Their earlier events still pending reach each endpoint before this one.',
    data: {
      customer: Type.Object({
        id: Type.String({ format: 'uuid' }),
        external_id: Type.Union([Type.String(), Type.Null()]),
      }),
    },
    example: { customer: { id: exampleCustomer.id, external_id: exampleCustomer.external_id } },
  },
  'customer.imported': {
    summary: 'An import finished',
    description: 'Once per import (not per customer), when its report says done: its counts. A dry run sends none.',
    data: {
      import_id: Type.String({ format: 'uuid' }),
      created: Type.Integer(),
      updated: Type.Integer(),
      unchanged: Type.Integer(),
      refused: Type.Integer(),
      invited: Type.Integer(),
    },
    example: {
      import_id: '9b2f6a4e-52a1-4f37-8a38-8f0b0f3f2d11',
      created: 1200,
      updated: 3,
      unchanged: 0,
      refused: 2,
      invited: 40,
    },
  },
  'customer.signed_in': customerEntry(
    'A customer signed in',
    'Every sign-in that opened a session, and how. Loud: sent only to endpoints that name it (`*` does not include it).',
    {
      method: Type.Union([
        Type.Literal('password'),
        Type.Literal('code'),
        Type.Literal('passkey'),
        Type.Literal('provider'),
      ]),
    },
    { method: 'password' },
  ),
  [testEventType]: {
    summary: 'A test',
    description: 'Sent by `POST …/webhooks/{webhook_id}/test` to that endpoint only, whatever it asked for.',
    data: { webhook_id: Type.String({ format: 'uuid' }) },
    example: { webhook_id: '3d5c1c2e-0a4b-4f5e-9c6d-7e8f9a0b1c2d' },
  },
};

const signing =
  'Signed as Standard Webhooks 1.0: `webhook-id` (the event, the same on every retry: drop duplicates by it), `webhook-timestamp` (seconds) and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of "id.timestamp.body" under the endpoint secret; two, space-separated, for 24 hours after a rotation). Answer 2xx within 10 s; anything else is retried after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h. `410 Gone` disables the endpoint.';

/** The OpenAPI 3.1 `webhooks` object: one entry per event type. */
export function webhookCatalogue(): Record<string, OpenAPIV3_1.PathItemObject> {
  const types: WebhookEventType[] = [...customerEventTypes, testEventType];
  return Object.fromEntries(
    types.map((type) => {
      const entry = catalogue[type];
      const schema = Type.Object({
        type: Type.Literal(type),
        timestamp: time,
        data: Type.Object({ store_id: Type.String(), ...entry.data }),
      });
      const example = { type, timestamp: exampleAt, data: { store_id: exampleStore, ...entry.example } };
      return [
        type,
        {
          post: {
            tags: ['webhooks'],
            summary: entry.summary,
            description: `${entry.description}\n\n${signing}`,
            requestBody: { required: true, content: { 'application/json': { schema, example } } },
            responses: { '2XX': { description: 'Received: not sent again.' } },
          },
        },
      ];
    }),
  );
}
