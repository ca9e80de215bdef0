import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { describeStore, relyingPartyInUse, strandedPasskeysWarning } from '../../store/fields.js';
import { changeHost, changeStore, createStore, deleteStore } from '../../platform/stores.js';
import { requestHash } from '../../store/idempotency.js';
import { listStores, type StoreContext } from '../../store/store.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError } from '../core/problems.js';
import {
  ChangedStore,
  CreatedStore,
  CreateStoreBody,
  DeletedStore,
  HostBody,
  Store,
  StoreList,
  StorePatch,
} from './store-schemas.js';
import { adminCallerOf } from './tokens.js';
import {
  checkTransport,
  cursorOf,
  FieldChecker,
  hostOf,
  newStoreOf,
  slugAfter,
  storeChangesOf,
  storeRefusal,
} from './store-input.js';
import {
  actorOf,
  adminCaller,
  adminPlatform,
  adminStoreKit,
  countAdminCalls,
  IdempotencyHeaders,
  pageSize,
  StoreParams,
  storeProblems,
  withBody,
} from './admin-kit.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'config' | 'keys' | 'store' | 'limiter' | 'audit' | 'janitor' | 'webhooks'>;

const HostParams = Type.Composite([StoreParams, Type.Object({ host: Type.String({ minLength: 1, maxLength: 253 }) })]);
const ListQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ maxLength: 200, description: "A page's `next_cursor`." })),
    limit: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,3}$', description: 'Stores per page, 1 to 500 (default 100).' }),
    ),
  },
  { additionalProperties: false },
);
const HostRemovalQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: "Remove the host even when it is the last on the relying party ID of the store's passkeys.",
      }),
    ),
  },
  { additionalProperties: false },
);
const PatchQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description: 'Switch `identity_mode` even while customers are registered by the current one.',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * The platform's calls about stores, hosts and customers, on the admin listener only: made for a
 * backend that creates a store when a merchant signs up and retries what it is not sure went
 * through. Every change is on the change feed at once, so each instance follows within its next
 * feed read (a second), this one at once.
 */
export function storeRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, config, limiter } = services;

  const { storeNamed } = adminStoreKit(services);
  const platform = adminPlatform(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.post(
      '/stores',
      declareRoute({
        operationId: 'createStore',
        summary: 'Create a store',
        description:
          "Makes a store, and answers it as `GET /stores/{id}` does. With an `Idempotency-Key`, a retry of the same call within 24 hours answers the first answer again and makes nothing: send one whenever the call may be retried. The only store of a deployment answers on every host while it has none; once a second store exists it answers only on its own hosts, and the answer warns when that changed. Recorded in the new store's audit trail (`store.created`) with the token's id.",
        tag: 'stores',
        bearer: adminCaller,
        headers: IdempotencyHeaders,
        body: CreateStoreBody,
        problems: [...withBody, 'slug_taken', 'host_taken', 'cookie_domain_shared', 'idempotency_key_reused'],
        answer: CreatedStore,
        status: 201,
        ownValidation: true,
      }),
      async (request, reply) => {
        const store = newStoreOf(request.body, FieldChecker.of(request), config, services.keys);
        const answer = ({ store: made, unhosted }: { store: StoreContext; unhosted: string | undefined }) => ({
          status: 201,
          body: {
            ...describeStore(made),
            ...(unhosted !== undefined && {
              warnings: [
                `The store ${unhosted} has no host: it answered on every host as the only store, and now answers on none. Give it one with POST /admin/v1/stores/${unhosted}/hosts.`,
              ],
            }),
          },
        });
        const key = request.headers['idempotency-key'];
        const once = key === undefined ? undefined : { key, hash: requestHash('POST /stores', request.body), answer };
        const result = await createStore(platform, actorOf(request), store, once);
        if (!result.ok) throw storeRefusal(result, store);
        if (result.value.replayed) reply.header('idempotency-replayed', 'true');
        const { status, body } = result.value.replayed ? result.value.kept : answer(result.value);
        return reply.code(status).send(body);
      },
    );

    app.get(
      '/stores',
      declareRoute({
        operationId: 'listStores',
        summary: 'List stores',
        description:
          'Live stores by slug, a page at a time: pass `next_cursor` as `cursor` until it is null. A store created or deleted meanwhile may or may not be on a later page; none is listed twice.',
        tag: 'stores',
        bearer: adminCaller,
        query: ListQuery,
        problems: ['validation_failed'],
        answer: StoreList,
      }),
      async (request) => {
        const size = pageSize(request.query.limit);
        // One more than the page: whether a next page exists, without a count.
        const found = await listStores(db, { afterSlug: slugAfter(request.query.cursor), limit: size + 1 });
        const page = found.slice(0, size);
        return {
          stores: page.map(describeStore),
          next_cursor: found.length > size ? cursorOf(page.at(-1)!.slug) : null,
        };
      },
    );

    app.get(
      '/stores/:id',
      declareRoute({
        operationId: 'getStore',
        summary: 'Read a store',
        description: 'A live store by id or slug.',
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        problems: storeProblems,
        answer: Store,
      }),
      async (request) => describeStore(await storeNamed(request.params.id)),
    );

    app.patch(
      '/stores/:id',
      declareRoute({
        operationId: 'changeStore',
        summary: 'Change a store',
        description:
          "A JSON merge patch (RFC 7396; `application/merge-patch+json` or `application/json`) of the store's fields and settings; answers the store as changed. An empty patch changes nothing. Recorded in the store's audit trail (`store.changed`, naming the fields) with the token's id.",
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        query: PatchQuery,
        body: StorePatch,
        problems: [...withBody, ...storeProblems, 'identity_mode_in_use', 'cookie_domain_shared'],
        answer: ChangedStore,
        ownValidation: true,
      }),
      async (request) => {
        const fields = FieldChecker.of(request);
        const changes = storeChangesOf(request.body, fields, services.keys);
        checkTransport(fields, config, changes.identityMode);
        fields.throwIfAny();
        const store = await storeNamed(request.params.id);
        if (Object.keys(changes).length === 0) return describeStore(store);
        const result = await changeStore(platform, actorOf(request), store, changes, request.query.force === 'true');
        if (!result.ok) {
          throw storeRefusal(result, { ...changes, hosts: store.hosts });
        }
        const { strandedPasskeys } = result.value;
        return {
          ...describeStore(result.value.store),
          ...(strandedPasskeys > 0 && { warnings: [strandedPasskeysWarning(strandedPasskeys, store.webauthnRpId)] }),
        };
      },
    );

    app.delete(
      '/stores/:id',
      declareRoute({
        operationId: 'deleteStore',
        summary: 'Delete a store',
        description:
          "At once the store stops answering (its shoppers' next call is `404 store_not_found`) and its slug and hosts are free for another store. Everything it held (customers, sessions, codes, passkeys, messages, audit trail) is then erased in the background, in batches, resuming after a restart. Its audit trail goes with it, so the deletion is in the service's log with the token's id.",
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        problems: storeProblems,
        answer: DeletedStore,
        status: 202,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const result = await deleteStore(platform, store);
        if (!result.ok) throw storeRefusal(result);
        request.log.info({ store: store.id, slug: store.slug, token: adminCallerOf(request).tokenId }, 'store deleted');
        services.janitor.wake();
        return reply.code(202).send({ id: store.id, slug: store.slug, status: 'deleted' as const });
      },
    );

    app.post(
      '/stores/:id/hosts',
      declareRoute({
        operationId: 'addStoreHost',
        summary: 'Add a host to a store',
        description:
          "The store answers on the host too, from every instance's next feed read (a second). Point the host's DNS at the deployment before or after. A host the store has already is no change. Recorded as `store.changed` with `host_added`.",
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        body: HostBody,
        problems: [...withBody, ...storeProblems, 'host_taken', 'cookie_domain_shared'],
        answer: Store,
        status: 201,
      }),
      async (request, reply) => {
        const host = hostOf(request.body.host);
        const store = await storeNamed(request.params.id);
        const result = await changeHost(platform, actorOf(request), store, { add: host });
        if (!result.ok) throw storeRefusal(result);
        return reply.code(201).send(describeStore(result.value));
      },
    );

    app.delete(
      '/stores/:id/hosts/:host',
      declareRoute({
        operationId: 'removeStoreHost',
        summary: 'Remove a host from a store',
        description:
          "The store stops answering on the host, and another store may take it. The store's passkeys are bound to its relying party ID: removing the last host on it is `409 relying_party_in_use` while the store has passkeys (`?force=true` removes it anyway, and they stop signing in); without passkeys the relying party ID moves to the first host left. Recorded as `store.changed` with `host_removed`.",
        tag: 'stores',
        bearer: adminCaller,
        params: HostParams,
        query: HostRemovalQuery,
        problems: [...storeProblems, 'not_found', 'validation_failed', 'relying_party_in_use'],
        answer: Store,
      }),
      async (request) => {
        const host = hostOf(request.params.host);
        const store = await storeNamed(request.params.id);
        const result = await changeHost(platform, actorOf(request), store, {
          remove: host,
          force: request.query.force === 'true',
        });
        if (!result.ok) {
          if (result.error === 'relying_party_in_use')
            throw new ProblemError(
              'relying_party_in_use',
              {},
              {},
              relyingPartyInUse(host, store.webauthnRpId, result.passkeys!, '?force=true'),
            );
          throw storeRefusal(result);
        }
        return describeStore(result.value);
      },
    );
  };
}
