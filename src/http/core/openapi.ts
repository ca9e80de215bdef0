import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';

// public/ sits at the package root, two levels above this file's folder in both src/ and dist/.
const publicDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../public');

/** What public/docs-csrf.js defines on the docs page; read by the interceptors below. */
interface DocsPage {
  storefrontAuthDocs: {
    requestInterceptor(request: unknown): Promise<unknown>;
    responseInterceptor(response: unknown): unknown;
  };
}

/**
 * The docs page's CSP: its own scripts only, none inline. Swagger UI's bundle inserts one fixed
 * <style> element, allowed by its hash (a new Swagger UI version with another one fails the docs
 * browser test). No upgrade-insecure-requests: reached over plain HTTP (other than on localhost)
 * it would ask for the page's own scripts over HTTPS, and the page would stay blank.
 */
const docsCsp = [
  "default-src 'self'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
  "form-action 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='",
].join('; ');

/**
 * The OpenAPI 3.1 document is generated from the same route schemas that validate requests; this
 * must be registered on the root before the routes so it sees every scope's.
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
          'plus platform metadata and health probes. Every failure is an RFC 9457 problem document with a stable `code`; ' +
          "its `title`, `detail` and field messages are in the language the `Accept-Language` request header asks for among the store's languages " +
          "(`ar-EG` asks for `ar`), else in the store's default language, and its `Content-Language` header names it. " +
          'Browsers first call `GET /api/v1/csrf-cookie` and echo the `XSRF-TOKEN` cookie in `X-XSRF-TOKEN` on every POST.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/', description: 'this deployment' }],
      tags: [
        { name: 'auth', description: 'Customer authentication' },
        { name: 'account', description: "The signed-in customer's own account" },
        { name: 'platform', description: 'Metadata and health probes' },
      ],
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: config.sessionCookieName, description: 'Set by login.' },
        },
      },
    },
  });
}

/** The documents' pages: Swagger UI at /docs and the raw document at /api/v1/openapi.json. */
export async function openApiPages(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: docsCsp,
    // The page's own script, served as a file so the CSP needs no inline script.
    theme: {
      js: [{ filename: 'docs-csrf.js', content: fs.readFileSync(path.join(publicDir, 'docs-csrf.js'), 'utf8') }],
    },
    uiConfig: {
      docExpansion: 'list',
      deepLinking: true,
      tryItOutEnabled: true,
      // These run in the browser: Swagger UI's initializer holds their source text, so they can
      // only name what docs-csrf.js put on the page, never anything from this module.
      requestInterceptor: (request) =>
        (globalThis as unknown as DocsPage).storefrontAuthDocs.requestInterceptor(request) as never,
      responseInterceptor: (response) =>
        (globalThis as unknown as DocsPage).storefrontAuthDocs.responseInterceptor(response) as never,
    },
  });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
