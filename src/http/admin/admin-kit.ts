import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import { findStoreNamed, type StoreContext } from '../../store/store.js';
import type { Edge } from '../edge.js';
import { ProblemError, type AnyProblemCode } from '../problems.js';
import { limits } from '../rate-limit.js';
import { ownProblemResponses } from '../problem-responses.js';
import { adminCallerOf, missingTokenDetail } from './tokens.js';

/** What the admin API's route modules about one store share: its path, its lookup, its audit. */

export const StoreParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: "The store's id (or its slug)." }),
});
/** One customer of a store. */
export const CustomerParams = Type.Composite([
  StoreParams,
  Type.Object({ customer_id: Type.String({ maxLength: 100 }) }),
]);
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7e]+$',
      description:
        'Any 1 to 255 visible ASCII characters, new for each thing to make. Within 24 hours the same key with the same body answers the first answer again (with `Idempotency-Replayed: true`), without making it twice; with another body it is `422 idempotency_key_reused`.',
    }),
  ),
});

/** A page's size from its `limit` (1 to 500, default 100), or 422. */
export function pageSize(limit: string | undefined): number {
  const size = limit === undefined ? 100 : Number(limit);
  if (size < 1 || size > 500)
    throw new ProblemError('validation_failed', { errors: { limit: ['Must be from 1 to 500.'] } });
  return size;
}

export const storeNotFound = 'No live store has this id or slug.';
export const storeProblems: AnyProblemCode[] = ['store_not_found'];
/** What every call of this file can answer besides its own. */
export const common: AnyProblemCode[] = [
  'unauthenticated',
  'forbidden',
  'rate_limited',
  'service_unavailable',
  'internal_error',
];
export const withBody: AnyProblemCode[] = ['validation_failed', 'payload_too_large', 'unsupported_media_type'];
export const examples = {
  details: { unauthenticated: missingTokenDetail, store_not_found: storeNotFound },
  operators: true,
};

function tagOf(operationId: string): string {
  if (operationId.includes('Webhook') || operationId.includes('Deliver')) return 'webhooks';
  return operationId.includes('Customer') ? 'customers' : 'stores';
}

export function route<T extends object>(
  operationId: string,
  summary: string,
  description: string,
  parts: T,
  codes: AnyProblemCode[],
  success: Record<number, unknown>,
  /** `attachValidation`: the handler merges the body's schema errors with its own field checks. */
  options: { attachValidation?: boolean } = {},
) {
  return {
    ...options,
    schema: {
      tags: [tagOf(operationId)],
      operationId,
      summary,
      description,
      security: [{ bearer: [] as string[] }],
      ...parts,
      response: { ...success, ...ownProblemResponses([...codes, ...common], examples) },
    },
  };
}

/** Every admin call counts against its token's limit. */
export function countAdminCalls(app: FastifyInstance, limiter: Edge['limiter']): void {
  app.addHook('onRequest', async (request) => {
    await limiter.consume(request, [[limits.adminCalls, adminCallerOf(request).tokenId]]);
  });
}

export function adminStoreKit(services: Pick<Edge, 'db' | 'store' | 'audit'>) {
  /** A live store by id or slug, or 404 store_not_found. */
  async function storeNamed(name: string): Promise<StoreContext> {
    const store = await findStoreNamed(services.db, name);
    if (store === null) throw new ProblemError('store_not_found', {}, {}, storeNotFound);
    return store;
  }

  /** Recorded in the store's trail, with the token that made the call. */
  function audit(
    request: FastifyRequest,
    storeId: string,
    event: AuditEvent,
    details: Record<string, string>,
    customerId: string | null = null,
  ): void {
    services.audit({
      storeId,
      event,
      customerId,
      clientAddress: request.ip,
      requestId: request.id,
      details: { by: 'admin', token: adminCallerOf(request).tokenId, ...details },
    });
  }

  /** This instance sees the change at once; the others on their next feed read. */
  async function changed(): Promise<void> {
    await services.store.refresh();
  }

  return { storeNamed, audit, changed };
}
