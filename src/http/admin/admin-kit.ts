import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../../audit.js';
import type { Actor, PlatformDeps } from '../../platform/actor.js';
import { findStoreNamed, type StoreContext } from '../../store/store.js';
import type { BearerCaller } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError, type AnyProblemCode } from '../core/problems.js';
import { limits } from '../core/rate-limit.js';
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

/** Every admin route's caller: a bearer token, and what any admin call can answer besides its own. */
export const adminCaller: BearerCaller = { problems: common, examples };

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

/** The platform's operations as this listener runs them: its trail, and this instance told at once. */
export function adminPlatform(services: Pick<Edge, 'db' | 'clock' | 'config' | 'store' | 'audit'>): PlatformDeps {
  return {
    db: services.db,
    clock: services.clock,
    config: services.config,
    audit: services.audit,
    announce: async () => {
      await services.store.refresh();
    },
  };
}

/** The token that made the call, from where. */
export function actorOf(request: FastifyRequest): Actor {
  return { by: 'admin', token: adminCallerOf(request).tokenId, clientAddress: request.ip, requestId: request.id };
}
