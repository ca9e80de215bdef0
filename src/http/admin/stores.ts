import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { countCustomers } from '../../auth/tables/customers.js';
import { countStorePasskeys } from '../../auth/tables/passkeys.js';
import {
  defaultLanguageRefusal,
  describeStore,
  relyingPartyInUse,
  storeChangeDetails,
  strandedPasskeysWarning,
} from '../../store/fields.js';
import { requestHash, runOnce } from '../../store/idempotency.js';
import {
  addStoreHost,
  createStore,
  insertStore,
  listStores,
  markStoreDeleted,
  onlyStore,
  removeStoreHost,
  updateStore,
  type StoreContext,
} from '../../store/store.js';
import type { Edge } from '../edge.js';
import { ProblemError } from '../problems.js';
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
  FieldErrors,
  hostOf,
  hostUnderCookieDomain,
  newStoreOf,
  refusedCookieDomain,
  refusedCreate,
  slugAfter,
  storeChangesOf,
} from './store-input.js';
import {
  adminStoreKit,
  countAdminCalls,
  IdempotencyHeaders,
  pageSize,
  route,
  StoreParams,
  storeNotFound,
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

const passkeyCounts = { countPasskeys: countStorePasskeys };

/**
 * The platform's calls about stores, hosts and customers, on the admin listener only: made for a
 * backend that creates a store when a merchant signs up and retries what it is not sure went
 * through. Every change is on the change feed at once, so each instance follows within its next
 * feed read (a second), this one at once.
 */
export function storeRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, config, limiter } = services;

  const { storeNamed, audit, changed } = adminStoreKit(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.post(
      '/stores',
      route(
        'createStore',
        'Create a store',
        "Makes a store, and answers it as `GET /stores/{id}` does. With an `Idempotency-Key`, a retry of the same call within 24 hours answers the first answer again and makes nothing: send one whenever the call may be retried. The only store of a deployment answers on every host while it has none; once a second store exists it answers only on its own hosts, and the answer warns when that changed. Recorded in the new store's audit trail (`store.created`) with the token's id.",
        { headers: IdempotencyHeaders, body: CreateStoreBody },
        [...withBody, 'slug_taken', 'host_taken', 'cookie_domain_shared', 'idempotency_key_reused'],
        { 201: CreatedStore },
        { attachValidation: true },
      ),
      async (request, reply) => {
        const store = newStoreOf(request.body, FieldErrors.of(request), config, services.keys);
        const before = await onlyStore(db);
        const unhosted = before.ok && before.store.hosts.length === 0 ? before.store.slug : undefined;
        const answer = (made: StoreContext) => ({
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
        const result =
          key === undefined
            ? await createStore(db, clock, store).then((made) => {
                if (!made.ok) throw refusedCreate(made, store);
                return { ...answer(made.store), replayed: false };
              })
            : await runOnce(db, clock, key, requestHash('POST /stores', request.body), async (tx) => {
                const made = await insertStore(tx, clock, store);
                if (!made.ok) throw refusedCreate(made, store);
                return answer(made.store);
              });
        if ('mismatch' in result) throw new ProblemError('idempotency_key_reused');
        if (result.replayed) {
          reply.header('idempotency-replayed', 'true');
        } else {
          const id = (result.body as { id: string }).id;
          audit(request, id, 'store.created', { slug: store.slug });
          await changed();
        }
        return reply.code(result.status).send(result.body);
      },
    );

    app.get(
      '/stores',
      route(
        'listStores',
        'List stores',
        'Live stores by slug, a page at a time: pass `next_cursor` as `cursor` until it is null. A store created or deleted meanwhile may or may not be on a later page; none is listed twice.',
        { querystring: ListQuery },
        ['validation_failed'],
        { 200: StoreList },
      ),
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
      route('getStore', 'Read a store', 'A live store by id or slug.', { params: StoreParams }, storeProblems, {
        200: Store,
      }),
      async (request) => describeStore(await storeNamed(request.params.id)),
    );

    app.patch(
      '/stores/:id',
      route(
        'changeStore',
        'Change a store',
        "A JSON merge patch (RFC 7396; `application/merge-patch+json` or `application/json`) of the store's fields and settings; answers the store as changed. An empty patch changes nothing. Recorded in the store's audit trail (`store.changed`, naming the fields) with the token's id.",
        { params: StoreParams, querystring: PatchQuery, body: StorePatch },
        [...withBody, ...storeProblems, 'identity_mode_in_use', 'cookie_domain_shared'],
        { 200: ChangedStore },
        { attachValidation: true },
      ),
      async (request) => {
        const fields = FieldErrors.of(request);
        const changes = storeChangesOf(request.body, fields, services.keys);
        checkTransport(fields, config, changes.identityMode);
        fields.throwIfAny();
        const store = await storeNamed(request.params.id);
        if (Object.keys(changes).length === 0) return describeStore(store);
        const force = request.query.force === 'true';
        const options = { store: store.id, force, countCustomers, ...passkeyCounts };
        const result = await updateStore(db, clock, changes, options);
        if (!result.ok) {
          if (result.reason === 'identity_mode_in_use') throw new ProblemError('identity_mode_in_use');
          if (result.reason === 'cookie_domain_off_hosts' || result.reason === 'cookie_domain_shared')
            throw refusedCookieDomain(result, changes.cookieDomain!, store.hosts);
          if (result.reason === 'default_language_not_spoken') {
            fields.note('default_language', defaultLanguageRefusal(result.current, changes.languages!));
            fields.throwIfAny();
          }
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        }
        audit(request, store.id, 'store.changed', storeChangeDetails(changes));
        await changed();
        const { strandedPasskeys } = result;
        return {
          ...describeStore(result.store),
          ...(strandedPasskeys > 0 && { warnings: [strandedPasskeysWarning(strandedPasskeys, store.webauthnRpId)] }),
        };
      },
    );

    app.delete(
      '/stores/:id',
      route(
        'deleteStore',
        'Delete a store',
        "At once the store stops answering (its shoppers' next call is `404 store_not_found`) and its slug and hosts are free for another store. Everything it held (customers, sessions, codes, passkeys, messages, audit trail) is then erased in the background, in batches, resuming after a restart. Its audit trail goes with it, so the deletion is in the service's log with the token's id.",
        { params: StoreParams },
        storeProblems,
        { 202: DeletedStore },
      ),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        if (!(await markStoreDeleted(db, clock, store.id)))
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        request.log.info({ store: store.id, slug: store.slug, token: adminCallerOf(request).tokenId }, 'store deleted');
        services.janitor.wake();
        await changed();
        return reply.code(202).send({ id: store.id, slug: store.slug, status: 'deleted' as const });
      },
    );

    app.post(
      '/stores/:id/hosts',
      route(
        'addStoreHost',
        'Add a host to a store',
        "The store answers on the host too, from every instance's next feed read (a second). Point the host's DNS at the deployment before or after. A host the store has already is no change. Recorded as `store.changed` with `host_added`.",
        { params: StoreParams, body: HostBody },
        [...withBody, ...storeProblems, 'host_taken', 'cookie_domain_shared'],
        { 201: Store },
      ),
      async (request, reply) => {
        const host = hostOf(request.body.host);
        const store = await storeNamed(request.params.id);
        const options = { ...passkeyCounts, deploymentRpId: config.webauthn.rpId };
        const result = await addStoreHost(db, clock, store.id, host, options);
        if (!result.ok) {
          if (result.reason === 'host_taken') throw new ProblemError('host_taken');
          if (result.reason === 'host_under_cookie_domain') throw hostUnderCookieDomain(host);
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        }
        audit(request, store.id, 'store.changed', { host_added: host });
        await changed();
        return reply.code(201).send(describeStore(result.store));
      },
    );

    app.delete(
      '/stores/:id/hosts/:host',
      route(
        'removeStoreHost',
        'Remove a host from a store',
        "The store stops answering on the host, and another store may take it. The store's passkeys are bound to its relying party ID: removing the last host on it is `409 relying_party_in_use` while the store has passkeys (`?force=true` removes it anyway, and they stop signing in); without passkeys the relying party ID moves to the first host left. Recorded as `store.changed` with `host_removed`.",
        { params: HostParams, querystring: HostRemovalQuery },
        [...storeProblems, 'not_found', 'validation_failed', 'relying_party_in_use'],
        { 200: Store },
      ),
      async (request) => {
        const host = hostOf(request.params.host);
        const store = await storeNamed(request.params.id);
        const options = { ...passkeyCounts, force: request.query.force === 'true' };
        const result = await removeStoreHost(db, clock, store.id, host, options);
        if (!result.ok) {
          if (result.reason === 'no_such_host')
            throw new ProblemError('not_found', {}, {}, 'The store has no such host.');
          if (result.reason === 'relying_party_in_use')
            throw new ProblemError(
              'relying_party_in_use',
              {},
              {},
              relyingPartyInUse(host, store.webauthnRpId, result.passkeys, '?force=true'),
            );
          throw new ProblemError('store_not_found', {}, {}, storeNotFound);
        }
        audit(request, store.id, 'store.changed', { host_removed: host });
        await changed();
        return describeStore(result.store);
      },
    );
  };
}
