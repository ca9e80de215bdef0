import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { listAudit } from '../../audit.js';
import { listOutbox, retryOutboxMessage } from '../../delivery/outbox.js';
import { forStore } from '../../storage/database.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError } from '../core/problems.js';
import { adminCaller, adminStoreKit, countAdminCalls, pageSize, StoreParams, storeProblems } from './admin-kit.js';
import { AuditPage, AuditQuery, OutboxPage, OutboxQuery, RetriedMessage } from './store-records-schemas.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'store' | 'limiter' | 'audit' | 'dispatcher'>;

const MessageParams = Type.Composite([StoreParams, Type.Object({ message_id: Type.String({ maxLength: 100 }) })]);

/** A page's cursor: the last row's id, opaque to the caller. */
const cursorOf = (id: string) => Buffer.from(id).toString('base64url');

/** The id a page's `next_cursor` names, or 422 for anything no page answered. */
function idBefore(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const id = Buffer.from(cursor, 'base64url').toString();
  if (!/^[1-9][0-9]{0,17}$/.test(id))
    throw new ProblemError('validation_failed', { errors: { cursor: ["Is not a page's next_cursor."] } });
  return id;
}

/** One more row than the page is read: whether a next page exists, without a count. */
function paged<T extends { id: string }>(found: T[], size: number): { page: T[]; next_cursor: string | null } {
  const page = found.slice(0, size);
  return { page, next_cursor: found.length > size ? cursorOf(page.at(-1)!.id) : null };
}

/**
 * A store's records on the admin listener, as the command line's `audit` and `outbox` show them:
 * its audit trail and its message outbox, newest first a page at a time, and a retry of a failed
 * message. Every read is scoped to the store. Reading is not written to the trail (the request log
 * names the token), and neither is a retry, as the command line's is not.
 */
export function storeRecordRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, limiter } = services;
  const { storeNamed } = adminStoreKit(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.get(
      '/stores/:id/audit',
      declareRoute({
        operationId: 'listStoreAudit',
        summary: "A store's audit trail",
        description:
          "The store's security events, newest first, a page at a time: pass `next_cursor` as `cursor` until it is null. Pages are keyed by the event's id, so an event written meanwhile is never on a later page and none is listed twice. `customer_id` and `event` narrow it; a customer of another store finds nothing. Kept for AUDIT_RETENTION_DAYS.",
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        query: AuditQuery,
        problems: [...storeProblems, 'validation_failed'],
        answer: AuditPage,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const size = pageSize(request.query.limit);
        const found = await listAudit(forStore(db, store.id), {
          customerId: request.query.customer_id,
          event: request.query.event,
          beforeId: idBefore(request.query.cursor),
          limit: size + 1,
        });
        const { page, next_cursor } = paged(found, size);
        return { events: page, next_cursor };
      },
    );

    app.get(
      '/stores/:id/outbox',
      declareRoute({
        operationId: 'listStoreOutbox',
        summary: "A store's messages",
        description:
          "The store's email and SMS messages, newest first, a page at a time (as `cursor` and `next_cursor` on the audit trail): recipient, purpose, status, attempts and the last error, never the body. `status` narrows it. Sent and dropped messages are kept for MESSAGE_RETENTION_DAYS, failed ones for FAILED_MESSAGE_RETENTION_DAYS.",
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        query: OutboxQuery,
        problems: [...storeProblems, 'validation_failed'],
        answer: OutboxPage,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const size = pageSize(request.query.limit);
        const found = await listOutbox(
          forStore(db, store.id),
          request.query.status,
          size + 1,
          idBefore(request.query.cursor),
        );
        const { page, next_cursor } = paged(found, size);
        return { messages: page, next_cursor };
      },
    );

    app.post(
      '/stores/:id/outbox/:message_id/retry',
      declareRoute({
        operationId: 'retryStoreOutboxMessage',
        summary: 'Send a failed message again',
        description:
          'Puts a failed message back in the queue with a fresh delivery window, as `storefront-auth outbox retry` does; the dispatcher sends it next. Only a failed one: a pending, sent or dropped message (a dropped one has no body left) is `409 message_not_retryable`. Not written to the audit trail.',
        tag: 'stores',
        bearer: adminCaller,
        params: MessageParams,
        problems: [...storeProblems, 'not_found', 'message_not_retryable'],
        answer: RetriedMessage,
        status: 202,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const id = request.params.message_id;
        const outcome = await retryOutboxMessage(forStore(db, store.id), clock, id);
        if (outcome === 'not_found')
          throw new ProblemError('not_found', {}, {}, 'The store has no message with this id.');
        if (outcome === 'not_retryable') throw new ProblemError('message_not_retryable');
        services.dispatcher.nudge();
        return reply.code(202).send({ id, status: 'pending' as const });
      },
    );
  };
}
