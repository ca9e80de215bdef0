import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  addWebhookEndpoint,
  changeWebhookEndpoint,
  findWebhookEndpoint,
  listWebhookEndpoints,
  removeWebhookEndpoint,
  rotateWebhookSecret,
  type EndpointErrors,
} from '../../hooks/webhook-endpoints.js';
import { listDeliveries, recordTestEvent, retryDelivery } from '../../hooks/webhook-outbox.js';
import { forStore } from '../../storage/database.js';
import type { Edge } from '../edge.js';
import { ProblemError } from '../problems.js';
import { adminStoreKit, countAdminCalls, route, StoreParams, storeProblems, withBody } from './admin-kit.js';
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
  const rules = services.config.webhooks;
  const { storeNamed, audit } = adminStoreKit(services);

  return async (app) => {
    countAdminCalls(app, limiter);

    app.post(
      '/stores/:id/webhooks',
      route(
        'addWebhook',
        'Add a webhook endpoint',
        "The store's events of the types named are POSTed to the URL from now on, signed with the secret answered here (and only here). A store has 20 endpoints at most. Recorded as `store.changed` with `webhook_added`.",
        { params: StoreParams, body: NewWebhookBody },
        [...withBody, ...storeProblems, 'webhook_limit'],
        { 201: WebhookEndpointWithSecret },
      ),
      async (request, reply) => {
        const store = await storeNamed(request.params.id);
        const result = await addWebhookEndpoint(forStore(db, store.id), { clock, keys, rules }, request.body);
        if (!result.ok) throw 'full' in result ? new ProblemError('webhook_limit') : refused(result.errors);
        audit(request, store.id, 'store.changed', { webhook_added: result.endpoint.id });
        return reply.code(201).send({ ...result.endpoint, secret: result.secret });
      },
    );

    app.get(
      '/stores/:id/webhooks',
      route(
        'listWebhooks',
        "A store's webhook endpoints",
        'Oldest first, without their secrets.',
        { params: StoreParams },
        storeProblems,
        {
          200: Type.Object({ webhooks: Type.Array(WebhookEndpoint) }),
        },
      ),
      async (request) => {
        const store = await storeNamed(request.params.id);
        return { webhooks: await listWebhookEndpoints(forStore(db, store.id), clock) };
      },
    );

    app.get(
      '/stores/:id/webhooks/:webhook_id',
      route(
        'getWebhook',
        'A webhook endpoint',
        'Without its secret.',
        { params: WebhookParams },
        [...storeProblems, 'not_found'],
        {
          200: WebhookEndpoint,
        },
      ),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const endpoint = await findWebhookEndpoint(forStore(db, store.id), clock, request.params.webhook_id);
        if (endpoint === null) throw noEndpoint();
        return endpoint;
      },
    );

    app.patch(
      '/stores/:id/webhooks/:webhook_id',
      route(
        'changeWebhook',
        'Change a webhook endpoint',
        'A merge patch of `url`, `events`, `description` and `enabled`. Recorded as `store.changed` with `webhook_changed`.',
        { params: WebhookParams, body: WebhookPatchBody },
        [...withBody, ...storeProblems, 'not_found'],
        { 200: WebhookEndpoint },
      ),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const result = await changeWebhookEndpoint(
          forStore(db, store.id),
          { clock, rules },
          request.params.webhook_id,
          request.body,
        );
        if (!result.ok) throw 'missing' in result ? noEndpoint() : refused(result.errors);
        audit(request, store.id, 'store.changed', { webhook_changed: result.endpoint.id });
        // Turned back on: what waited for it may go now.
        if (request.body.enabled === true) services.webhooks.nudge();
        return result.endpoint;
      },
    );

    app.delete(
      '/stores/:id/webhooks/:webhook_id',
      route(
        'removeWebhook',
        'Remove a webhook endpoint',
        'Its deliveries go with it, sent or not. Recorded as `store.changed` with `webhook_removed`.',
        { params: WebhookParams },
        [...storeProblems, 'not_found'],
        { 200: Removed },
      ),
      async (request) => {
        const store = await storeNamed(request.params.id);
        if (!(await removeWebhookEndpoint(forStore(db, store.id), request.params.webhook_id))) throw noEndpoint();
        audit(request, store.id, 'store.changed', { webhook_removed: request.params.webhook_id });
        return { status: 'removed' as const };
      },
    );

    app.post(
      '/stores/:id/webhooks/:webhook_id/rotate-secret',
      route(
        'rotateWebhookSecret',
        "Rotate a webhook endpoint's secret",
        'Answers the new secret (only here). For 24 hours every delivery carries two signatures, the new secret’s and the old one’s, so the receiver can switch at its pace. Recorded as `store.changed` with `webhook_secret_rotated`.',
        { params: WebhookParams },
        [...storeProblems, 'not_found'],
        { 200: WebhookEndpointWithSecret },
      ),
      async (request) => {
        const store = await storeNamed(request.params.id);
        const rotated = await rotateWebhookSecret(forStore(db, store.id), { clock, keys }, request.params.webhook_id);
        if (rotated === null) throw noEndpoint();
        audit(request, store.id, 'store.changed', { webhook_secret_rotated: rotated.endpoint.id });
        return { ...rotated.endpoint, secret: rotated.secret };
      },
    );

    app.post(
      '/stores/:id/webhooks/:webhook_id/test',
      route(
        'testWebhook',
        'Send a test event',
        'Queues a `webhook.test` to this endpoint, whatever it asked for; its delivery shows in the deliveries like any other. A disabled endpoint is `404`.',
        { params: WebhookParams },
        [...storeProblems, 'not_found'],
        { 202: Queued },
      ),
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
      route(
        'listWebhookDeliveries',
        "A webhook endpoint's deliveries",
        'Newest first, each with its last attempts (time, status or error, duration). Kept as long as the outbox keeps messages (MESSAGE_RETENTION_DAYS, failed ones FAILED_MESSAGE_RETENTION_DAYS).',
        { params: WebhookParams, querystring: DeliveriesQuery },
        [...storeProblems, 'not_found', 'validation_failed'],
        { 200: DeliveryList },
      ),
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
      route(
        'retryWebhookDelivery',
        'Send a delivery again',
        'A failed, sent or waiting delivery is sent again now with a fresh schedule of retries, under the same `webhook-id`. Not one whose customer was deleted since (`409 delivery_erased`).',
        { params: DeliveryParams },
        [...storeProblems, 'not_found', 'delivery_erased'],
        { 202: Queued },
      ),
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
