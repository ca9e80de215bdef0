import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findPasswordHook, removePasswordHook, savePasswordHook } from '../../hooks/password-hooks.js';
import { forStore } from '../../storage/database.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { ProblemError } from '../core/problems.js';
import { adminCaller, adminStoreKit, countAdminCalls, StoreParams, storeProblems, withBody } from './admin-kit.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'keys' | 'store' | 'limiter' | 'audit'>;

const time = Type.String({ format: 'date-time' });
const PasswordHook = Type.Object({
  url: Type.String(),
  created_at: time,
  updated_at: time,
});
const PasswordHookBody = Type.Object(
  {
    url: Type.String({
      maxLength: 2048,
      description: 'Where the question is POSTed: https:// (http:// only on a loopback address, for testing).',
    }),
    secret: Type.String({
      maxLength: 128,
      description:
        'A Standard Webhooks secret (`whsec_` and the base64 of 24 to 64 random bytes) that the old system verifies each question with. Sealed; never answered.',
    }),
  },
  { additionalProperties: false },
);
const RemovedHook = Type.Object({ status: Type.Literal('removed') });

const noHook = () => new ProblemError('not_found', {}, {}, 'The store has no password migration hook.');

/**
 * The store's password migration hook, on the admin listener: the old system a store moved from,
 * asked whether a password is right for an imported account that came without a hash.
 */
export function passwordHookRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, keys, limiter } = services;
  const { storeNamed, audit } = adminStoreKit(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.put(
      '/stores/:id/password-hook',
      declareRoute({
        operationId: 'setPasswordHook',
        summary: "Set a store's password migration hook",
        description:
          'When a customer an import brought without a password hash signs in with a password, the service POSTs `{ "identity", "password", "external_id" }` to this URL, signed as Standard Webhooks sign (`webhook-id`, `webhook-timestamp`, `webhook-signature`), 5 s at most, redirects not followed. Only `200 {"valid": true}` accepts the password: it is then hashed with argon2id, and the hook is never asked about that customer again. The hook is never called for an identity without an account. Adding answers 201, replacing 200. Recorded as `store.changed` with `password_hook_added` or `password_hook_replaced`.',
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        body: PasswordHookBody,
        problems: [...withBody, ...storeProblems],
        answer: PasswordHook,
        status: 201,
        answers: { 200: PasswordHook },
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const result = await savePasswordHook(forStore(db, store.id), clock, keys, request.body);
        if (!result.ok) throw new ProblemError('validation_failed', { errors: result.errors });
        audit(request, store.id, 'store.changed', { [`password_hook_${result.outcome}`]: result.hook.url });
        return reply.code(result.outcome === 'added' ? 201 : 200).send(result.hook);
      },
    );

    app.get(
      '/stores/:id/password-hook',
      declareRoute({
        operationId: 'getPasswordHook',
        summary: "A store's password migration hook",
        description: 'Its URL, without the secret.',
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        problems: [...storeProblems, 'not_found'],
        answer: PasswordHook,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const hook = await findPasswordHook(forStore(db, store.id));
        if (hook === null) throw noHook();
        return hook;
      },
    );

    app.delete(
      '/stores/:id/password-hook',
      declareRoute({
        operationId: 'removePasswordHook',
        summary: "Remove a store's password migration hook",
        description:
          'Imported customers without a password hash then set one with a reset code (or an invitation), or sign in with a code. Recorded as `store.changed` with `password_hook_removed`.',
        tag: 'stores',
        bearer: adminCaller,
        params: StoreParams,
        problems: [...storeProblems, 'not_found'],
        answer: RemovedHook,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        if (!(await removePasswordHook(forStore(db, store.id)))) throw noHook();
        audit(request, store.id, 'store.changed', { password_hook_removed: store.slug });
        return { status: 'removed' as const };
      },
    );
  };
}
