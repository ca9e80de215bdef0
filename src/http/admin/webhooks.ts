import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findWebhookEndpoint, listWebhookEndpoints, type EndpointErrors } from '../../hooks/webhook-endpoints.js';
import { addWebhook, changeWebhook, removeWebhook, rotateWebhook } from '../../platform/webhooks.js';
import { listDeliveries, recordTestEvent, retryDelivery } from '../../hooks/webhook-outbox.js';
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
import {
  DeliveriesQuery,
  DeliveryList,
  NewWebhookBody,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookPatchBody,
} from './webhook-schemas.js';

type Deps = Pick<Edge, 'db' | 'clock' | 'keys' | 'config' | 'store' | 'limiter' | 'audit' | 'webhooks'>;

const WebhookParams = Type.Composite([StoreParams, Type.Object({ webhook_id: Type.String({ maxLength: 100 }) })]);
const DeliveryParams = Type.Composite([WebhookParams, Type.Object({ delivery_id: Type.String({ maxLength: 100 }) })]);
const Removed = Type.Object({ status: Type.Literal('removed') });
const Queued = Type.Object({ status: Type.Literal('queued') });

const noEndpoint = () => new ProblemError('not_found', {}, {}, 'The store has no webhook endpoint with this id.');
const refused = (errors: EndpointErrors) => new ProblemError('validation_failed', { errors });

/**
 * A store's webhook endpoints on the admin listener: where its customers' events go (Standard
 * Webhooks), their deliveries, and a retry. The events themselves are written by the domain.
 */
export function webhookRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { db, clock, keys, limiter } = services;
  const { storeNamed } = adminStoreKit(services);
  const platform = adminPlatform(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.post(
      '/stores/:id/webhooks',
      declareRoute({
        operationId: 'addWebhook',
        summary: 'Add a webhook endpoint',
        description:
          "The store's events of the types named are POSTed to the URL from now on, signed with the secret answered here (and only here). A store has 20 endpoints at most. Recorded as `store.changed` with `webhook_added`.",
        tag: 'webhooks',
        bearer: adminCaller,
        params: StoreParams,
        body: NewWebhookBody,
        problems: [...withBody, ...storeProblems, 'webhook_limit'],
        answer: WebhookEndpointWithSecret,
        status: 201,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const result = await addWebhook({ ...platform, keys }, actorOf(request), store, request.body);
        if (!result.ok)
          throw result.error === 'webhook_limit' ? new ProblemError('webhook_limit') : refused(result.errors!);
        return reply.code(201).send({ ...result.value.endpoint, secret: result.value.secret });
      },
    );

    app.get(
      '/stores/:id/webhooks',
      declareRoute({
        operationId: 'listWebhooks',
        summary: "A store's webhook endpoints",
        description: 'Oldest first, without their secrets.',
        tag: 'webhooks',
        bearer: adminCaller,
        params: StoreParams,
        problems: storeProblems,
        answer: Type.Object({ webhooks: Type.Array(WebhookEndpoint) }),
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        return { webhooks: await listWebhookEndpoints(forStore(db, store.id), clock) };
      },
    );

    app.get(
      '/stores/:id/webhooks/:webhook_id',
      declareRoute({
        operationId: 'getWebhook',
        summary: 'A webhook endpoint',
        description: 'Without its secret.',
        tag: 'webhooks',
        bearer: adminCaller,
        params: WebhookParams,
        problems: [...storeProblems, 'not_found'],
        answer: WebhookEndpoint,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const endpoint = await findWebhookEndpoint(forStore(db, store.id), clock, request.params.webhook_id);
        if (endpoint === null) throw noEndpoint();
        return endpoint;
      },
    );

    app.patch(
      '/stores/:id/webhooks/:webhook_id',
      declareRoute({
        operationId: 'changeWebhook',
        summary: 'Change a webhook endpoint',
        description:
          'A merge patch of `url`, `events`, `description` and `enabled`. Recorded as `store.changed` with `webhook_changed`.',
        tag: 'webhooks',
        bearer: adminCaller,
        params: WebhookParams,
        body: WebhookPatchBody,
        problems: [...withBody, ...storeProblems, 'not_found'],
        answer: WebhookEndpoint,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const result = await changeWebhook(platform, actorOf(request), store, request.params.webhook_id, request.body);
        if (!result.ok) throw result.error === 'no_such_endpoint' ? noEndpoint() : refused(result.errors!);
        // Turned back on: what waited for it may go now.
        if (request.body.enabled === true) services.webhooks.nudge();
        return result.value;
      },
    );

    app.delete(
      '/stores/:id/webhooks/:webhook_id',
      declareRoute({
        operationId: 'removeWebhook',
        summary: 'Remove a webhook endpoint',
        description: 'Its deliveries go with it, sent or not. Recorded as `store.changed` with `webhook_removed`.',
        tag: 'webhooks',
        bearer: adminCaller,
        params: WebhookParams,
        problems: [...storeProblems, 'not_found'],
        answer: Removed,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const result = await removeWebhook(platform, actorOf(request), store, request.params.webhook_id);
        if (!result.ok) throw noEndpoint();
        return { status: 'removed' as const };
      },
    );

    app.post(
      '/stores/:id/webhooks/:webhook_id/rotate-secret',
      declareRoute({
        operationId: 'rotateWebhookSecret',
        summary: "Rotate a webhook endpoint's secret",
        description:
          'Answers the new secret (only here). For 24 hours every delivery carries two signatures, the new secret’s and the old one’s, so the receiver can switch at its pace. Recorded as `store.changed` with `webhook_secret_rotated`.',
        tag: 'webhooks',
        bearer: adminCaller,
        params: WebhookParams,
        problems: [...storeProblems, 'not_found'],
        answer: WebhookEndpointWithSecret,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const rotated = await rotateWebhook({ ...platform, keys }, actorOf(request), store, request.params.webhook_id);
        if (!rotated.ok) throw noEndpoint();
        return { ...rotated.value.endpoint, secret: rotated.value.secret };
      },
    );

    app.post(
      '/stores/:id/webhooks/:webhook_id/test',
      declareRoute({
        operationId: 'testWebhook',
        summary: 'Send a test event',
        description:
          'Queues a `webhook.test` to this endpoint, whatever it asked for; its delivery shows in the deliveries like any other. A disabled endpoint is `404`.',
        tag: 'webhooks',
        bearer: adminCaller,
        params: WebhookParams,
        problems: [...storeProblems, 'not_found'],
        answer: Queued,
        status: 202,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const endpointId = request.params.webhook_id;
        const sdb = forStore(db, store.id);
        if (
          (await findWebhookEndpoint(sdb, clock, endpointId)) === null ||
          !(await recordTestEvent(sdb, clock, endpointId))
        )
          throw noEndpoint();
        services.webhooks.nudge();
        return reply.code(202).send({ status: 'queued' as const });
      },
    );

    app.get(
      '/stores/:id/webhooks/:webhook_id/deliveries',
      declareRoute({
        operationId: 'listWebhookDeliveries',
        summary: "A webhook endpoint's deliveries",
        description:
          'Newest first, each with its last attempts (time, status or error, duration). Kept as long as the outbox keeps messages (MESSAGE_RETENTION_DAYS, failed ones FAILED_MESSAGE_RETENTION_DAYS).',
        tag: 'webhooks',
        bearer: adminCaller,
        params: WebhookParams,
        query: DeliveriesQuery,
        problems: [...storeProblems, 'not_found', 'validation_failed'],
        answer: DeliveryList,
      }),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const sdb = forStore(db, store.id);
        const endpointId = request.params.webhook_id;
        if ((await findWebhookEndpoint(sdb, clock, endpointId)) === null) throw noEndpoint();
        const limit = Number(request.query.limit ?? 50);
        const deliveries = await listDeliveries(sdb, endpointId, { cursor: request.query.cursor, limit });
        const last = deliveries.length === limit ? deliveries[deliveries.length - 1]!.id : null;
        return { deliveries, next_cursor: last };
      },
    );

    app.post(
      '/stores/:id/webhooks/:webhook_id/deliveries/:delivery_id/retry',
      declareRoute({
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again',
        description:
          'A failed, sent or waiting delivery is sent again now with a fresh schedule of retries, under the same `webhook-id`. Not one whose customer was deleted since (`409 delivery_erased`).',
        tag: 'webhooks',
        bearer: adminCaller,
        params: DeliveryParams,
        problems: [...storeProblems, 'not_found', 'delivery_erased'],
        answer: Queued,
        status: 202,
      }),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const { webhook_id: endpointId, delivery_id: deliveryId } = request.params;
        const result = await retryDelivery(forStore(db, store.id), clock, endpointId, deliveryId);
        if (result === 'not_found')
          throw new ProblemError('not_found', {}, {}, 'The endpoint has no delivery with this id.');
        if (result === 'erased') throw new ProblemError('delivery_erased');
        services.webhooks.nudge();
        return reply.code(202).send({ status: 'queued' as const });
      },
    );
  };
}
