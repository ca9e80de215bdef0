import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';

/**
 * The OpenAPI 3.1 document is generated from the same route schemas that validate requests; this
 * must be registered before the routes so it sees them.
 */
export async function registerOpenApi(app: FastifyInstance, config: Config, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Storefront Auth',
        version,
        description:
          'Customer registration, verification, sign-in with a server-side session cookie, password recovery and sign-out, ' +
          'plus platform metadata and health probes. Every failure is an RFC 9457 problem document with a stable `code`. ' +
          'Browsers first call `GET /api/v1/csrf-cookie` and echo the `XSRF-TOKEN` cookie in `X-XSRF-TOKEN` on every POST.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/', description: 'this deployment' }],
      tags: [
        { name: 'auth', description: 'Customer authentication' },
        { name: 'platform', description: 'Metadata and health probes' },
      ],
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: config.sessionCookieName, description: 'Set by login.' },
        },
      },
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    uiConfig: { docExpansion: 'list', deepLinking: true, tryItOutEnabled: true },
  });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
