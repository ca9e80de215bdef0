import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { packageVersion } from '../../version.js';
import { acceptJsonOnly, createServiceFastify, handleError, setCommonHeaders } from '../core/common.js';
import { edgeOf } from '../core/edge.js';
import { addRequestLog } from '../core/request-log.js';
import { unknownPathAnswer } from '../core/scopes.js';
import { customerTransferRoutes } from './customer-transfer.js';
import { introspectionRoutes } from './introspect.js';
import { passwordHookRoutes } from './password-hook.js';
import { templateRoutes } from './templates.js';
import { logoRoutes } from './logo.js';
import { providerAdminRoutes } from './providers.js';
import { storeRecordRoutes } from './store-records.js';
import { customerRoutes } from './customers.js';
import { storeRoutes } from './stores.js';
import { webhookCatalogue } from './webhook-schemas.js';
import { webhookRoutes } from './webhooks.js';
import { adminGuard, AdminTokens } from './tokens.js';

/** Where every admin route lives, on the admin listener only. */
export const adminPrefix = '/admin/v1';

/**
 * The admin listener's app: a Fastify instance of its own, listening apart from the customer app
 * (ADMIN_PORT, ADMIN_HOST), so no route of it is ever reachable where shoppers are. It shares the
 * customer app's wire format (http/core/common.ts) and services, not its scopes: no store gate, no
 * CSRF (a bearer token is no ambient credential), no per-address limit, no CORS.
 */
export async function buildAdminApp(built: Services): Promise<FastifyInstance> {
  const listener = built.config.admin;
  if (listener === undefined) throw new Error('the admin app needs ADMIN_TOKENS or INTROSPECTION_TOKENS');
  const services = edgeOf(built);
  // Backends reach it directly, not through the shoppers' proxy: X-Forwarded-For is nobody's word here.
  const app = createServiceFastify(services.logger, { trustProxy: false });
  app.decorateRequest('adminCaller', null);
  // Operators read English: the admin listener's problems are never translated (see answerLanguages).
  app.decorateRequest('answerLanguages', null);
  // A PATCH of a store is a JSON merge patch (RFC 7396), which may say so by its media type.
  acceptJsonOnly(app, ['application/merge-patch+json']);
  const unknownPath = unknownPathAnswer(app);

  app.addHook('onRequest', adminGuard(new AdminTokens(listener)));
  app.addHook('onSend', async (request, reply) => {
    setCommonHeaders(request, reply);
    // Answers about customers and about the service's own surface: no cache keeps them.
    reply.header('cache-control', 'no-store');
  });
  // The customer app's request line, naming the listener and the token by its id, never the token.
  addRequestLog(app, services.metrics, {
    fields: (request) => ({ listener: 'admin', token: request.adminCaller?.tokenId ?? null }),
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(unknownPath);

  await registerAdminOpenApi(app);
  await app.register(introspectionRoutes(services), { prefix: adminPrefix });
  await app.register(storeRoutes(services), { prefix: adminPrefix });
  await app.register(customerRoutes(services), { prefix: adminPrefix });
  await app.register(customerTransferRoutes(services), { prefix: adminPrefix });
  await app.register(providerAdminRoutes(services), { prefix: adminPrefix });
  await app.register(passwordHookRoutes(services), { prefix: adminPrefix });
  await app.register(templateRoutes(services), { prefix: adminPrefix });
  await app.register(logoRoutes(services), { prefix: adminPrefix });
  await app.register(webhookRoutes(services), { prefix: adminPrefix });
  await app.register(storeRecordRoutes(services), { prefix: adminPrefix });
  // Any token may read the document: the backends that introspect are who it is written for.
  app.get(`${adminPrefix}/openapi.json`, { config: { introspectionTokens: true }, schema: { hide: true } }, async () =>
    app.swagger(),
  );
  return app;
}

/** The admin API's own OpenAPI 3.1 document, apart from the customer one: registered before the routes. */
async function registerAdminOpenApi(app: ReturnType<typeof createServiceFastify>): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Storefront Auth admin API',
        version: packageVersion,
        description:
          'Served only on the admin listener (ADMIN_PORT, ADMIN_HOST), never on the customer port. Every call needs `Authorization: Bearer <token>` with a token of ADMIN_TOKENS (every call) or INTROSPECTION_TOKENS (the introspection and this document); without one the answer is `401 unauthenticated`, and an introspection token on any other call is `403 forbidden`. Every failure is an RFC 9457 problem document with a stable `code`, as on the customer API.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/', description: "this deployment's admin listener" }],
      tags: [
        { name: 'sessions', description: "Shoppers' sessions, as a backend asks about them" },
        {
          name: 'stores',
          description: "The deployment's stores and their hosts, as the platform's backend manages them",
        },
        { name: 'customers', description: "A store's customers, as the platform's support finds and signs them out" },
        {
          name: 'webhooks',
          description:
            "Where a store's events go (its endpoints, their deliveries), and the events themselves (this document's `webhooks`)",
        },
      ],
      webhooks: webhookCatalogue(),
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'A token of ADMIN_TOKENS or INTROSPECTION_TOKENS.',
          },
        },
      },
      security: [{ bearer: [] }],
    },
  });
}
