import { Type } from '@sinclair/typebox';
import { auditEvents } from '../../audit.js';
import { outboxStatuses } from '../../delivery/outbox.js';

/** The admin API's shapes of a store's records: its audit trail and its message outbox. */

const time = Type.String({ format: 'date-time' });

const cursor = Type.Optional(Type.String({ maxLength: 200, description: "A page's `next_cursor`." }));
// Text, as a query string carries it: the validator coerces no types, so an integer would refuse every value.
const limit = Type.Optional(
  Type.String({ pattern: '^[0-9]{1,3}$', description: 'Entries per page, 1 to 500 (default 100).' }),
);
const nextCursor = Type.Union([Type.String(), Type.Null()], {
  description: 'Pass as `cursor` for the next page; null on the last page.',
});

export const AuditQuery = Type.Object(
  {
    customer_id: Type.Optional(
      Type.String({ format: 'uuid', description: "Only this customer's events (an id of this store's customers)." }),
    ),
    event: Type.Optional(
      Type.Union(
        auditEvents.map((event) => Type.Literal(event)),
        { description: 'Only events of this type.' },
      ),
    ),
    cursor,
    limit,
  },
  { additionalProperties: false },
);

export const AuditRecord = Type.Object({
  id: Type.String({ description: 'The event, in the order events happened: a later event has a greater id.' }),
  occurred_at: time,
  event: Type.String({
    description:
      'Its type: `login.succeeded`, `session.revoked`, `store.changed`, … (the `event` filter lists them all).',
  }),
  customer_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
    description: 'The customer it is about, kept after they are deleted; null for none.',
  }),
  client_address: Type.Union([Type.String(), Type.Null()], {
    description: 'Where the request came from; null for what an operator did from the command line.',
  }),
  request_id: Type.Union([Type.String(), Type.Null()], { description: "The request's `X-Request-ID`." }),
  details: Type.Record(Type.String(), Type.String(), {
    description: 'What the type tells besides (`method`, `by`, `count`, `fields`, …); never a secret.',
  }),
});

export const AuditPage = Type.Object({
  events: Type.Array(AuditRecord, { description: 'Newest first.' }),
  next_cursor: nextCursor,
});

const statuses = outboxStatuses.map((status) => Type.Literal(status));
const OutboxStatus = Type.Union(statuses, {
  description:
    '`pending` (waiting or being retried), `sent`, `failed` (its delivery window ended; a retry queues it again) or `dropped` (never sent: its code was no longer usable, or its customer was deleted; its body is gone).',
});

export const OutboxQuery = Type.Object(
  {
    status: Type.Optional(Type.Union(statuses, { description: 'Only messages in this status.' })),
    cursor,
    limit,
  },
  { additionalProperties: false },
);

export const OutboxEntry = Type.Object({
  id: Type.String({ description: 'The message, for `…/outbox/{message_id}/retry`.' }),
  channel: Type.Union([Type.Literal('email'), Type.Literal('sms')]),
  purpose: Type.String({
    description: 'What it is for: `verification`, `password_reset`, `invitation`, `sign_in`, `new_sign_in`, …',
  }),
  recipient: Type.String({
    description: 'The email address or phone number; `(erased)` once its customer was deleted.',
  }),
  status: OutboxStatus,
  attempts: Type.Integer({ description: 'Attempts in its current delivery window.' }),
  next_attempt_at: time,
  last_error: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed.' }),
  created_at: time,
  sent_at: Type.Union([time, Type.Null()]),
});

export const OutboxPage = Type.Object({
  messages: Type.Array(OutboxEntry, { description: 'Newest first, never a body.' }),
  next_cursor: nextCursor,
});

export const RetriedMessage = Type.Object({
  id: Type.String(),
  status: Type.Literal('pending', {
    description: 'Queued again with a fresh delivery window; the dispatcher sends it next.',
  }),
});
