import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { addProvider, deleteProvider } from '../../platform/providers.js';
import { listProviders } from '../../providers/configured.js';
import { forStore } from '../../storage/database.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError } from '../core/problems.js';
import {
  actorOf,
  adminCaller,
  adminPlatform,
  adminStoreKit,
  countAdminCalls,
  StoreParams,
  storeProblems,
  withBody,
} from './admin-kit.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'config' | 'keys' | 'store' | 'limiter' | 'audit'>;

const time = Type.String({ format: 'date-time' });
export const Provider = Type.Object({
  id: Type.String(),
  name: Type.String({ description: 'The "Continue with …" button says this.' }),
  preset: Type.Union([Type.Literal('google'), Type.Literal('apple'), Type.Literal('microsoft'), Type.Null()]),
  issuer: Type.String(),
  client_id: Type.String(),
  secret: Type.Union([Type.Literal('client_secret'), Type.Literal('private_key')], {
    description: 'How the client proves itself; the secret itself is never answered.',
  }),
  scopes: Type.String(),
  response_mode: Type.Union([Type.Literal('query'), Type.Literal('form_post')]),
  created_at: time,
  updated_at: time,
});
const text = (maxLength: number, description: string) => Type.Optional(Type.String({ maxLength, description }));
export const ProviderBody = Type.Object(
  {
    id: Type.String({
      maxLength: 32,
      description: 'google, apple, microsoft or any 1 to 32 of a-z, 0-9 and -: the path of its start and callback.',
    }),
    preset: Type.Optional(
      Type.Union([Type.Literal('google'), Type.Literal('apple'), Type.Literal('microsoft')], {
        description: 'Their issuer, scopes and quirks.',
      }),
    ),
    issuer: text(2048, 'The issuer URL (https://; http:// only on a loopback address); a preset gives it.'),
    client_id: Type.String({ maxLength: 512 }),
    client_secret: text(4096, 'The client secret; or, for Apple, `private_key`, `key_id` and `team_id`.'),
    private_key: text(8192, "Apple's .p8 key (PEM, P-256), from which a client secret is made for each call."),
    key_id: text(64, 'The key id of `private_key`.'),
    team_id: text(64, 'The team id of `private_key`.'),
    name: text(64, "The button's name; the preset's, or the id, by default."),
    scopes: text(512, 'Space-separated; the preset\'s, or "openid email profile", by default. Must include openid.'),
  },
  { additionalProperties: false },
);
const ProviderParams = Type.Composite([StoreParams, Type.Object({ provider: Type.String({ maxLength: 32 }) })]);
const ProviderList = Type.Object({ providers: Type.Array(Provider) });
const RemovedProvider = Type.Object({ id: Type.String(), status: Type.Literal('removed') });

/**
 * A store's sign-in providers, on the admin listener: what `store providers add|remove|list` does
 * on the command line. A secret goes in and is sealed; it never comes back out.
 */
export function providerAdminRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, keys, limiter } = services;
  const { storeNamed } = adminStoreKit(services);
  const platform = adminPlatform(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.post(
      '/stores/:id/providers',
      declareRoute({
        operationId: 'addStoreProvider',
        summary: 'Add a sign-in provider to a store',
        description:
          "Adds an OpenID Connect provider (201), or replaces the store's provider of that id (200), for a new secret, say. The store's shoppers see it on their next `GET /providers`. Register `https://<store host>/api/v1/customer/auth/providers/{id}/callback` as its redirect URI at the provider. Recorded as `store.changed` with `provider_added` or `provider_replaced`.",
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        body: ProviderBody,
        problems: [...withBody, ...storeProblems, 'phone_store'],
        answer: Provider,
        status: 201,
        answers: { 200: Provider },
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const result = await addProvider({ ...platform, keys }, actorOf(request), store, request.body);
        if (!result.ok) {
          if (result.error === 'phone_store') throw new ProblemError('phone_store');
          throw new ProblemError('validation_failed', { errors: result.errors! });
        }
        return reply.code(result.value.outcome === 'added' ? 201 : 200).send(result.value.provider);
      },
    );

    app.get(
      '/stores/:id/providers',
      declareRoute({
        operationId: 'listStoreProviders',
        summary: "A store's sign-in providers",
        description: 'By id, without their secrets.',
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        problems: storeProblems,
        answer: ProviderList,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        return { providers: await listProviders(forStore(db, store.id)) };
      },
    );

    app.delete(
      '/stores/:id/providers/:provider',
      declareRoute({
        operationId: 'removeStoreProvider',
        summary: 'Remove a sign-in provider from a store',
        description:
          'Shoppers can no longer start or finish signing in with it. The links customers made with it stay (their export still lists them), and sign in again if a provider of the same issuer comes back. Recorded as `store.changed` with `provider_removed`.',
        tag: 'stores',
        bearer: adminCaller,
        params: ProviderParams,
        problems: [...storeProblems, 'not_found'],
        answer: RemovedProvider,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const result = await deleteProvider(platform, actorOf(request), store, request.params.provider);
        if (!result.ok) throw new ProblemError('not_found', {}, {}, 'The store has no such provider.');
        return { id: request.params.provider, status: 'removed' as const };
      },
    );
  };
}
