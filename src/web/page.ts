import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../services.js';

// public/ sits at the package root, two levels above this file in both src/ and dist/.
const publicDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../public');

const assets = {
  '/app.js': 'text/javascript; charset=utf-8',
  // The account area, imported by app.js.
  '/account.js': 'text/javascript; charset=utf-8',
  '/app.css': 'text/css; charset=utf-8',
  // Linked from the page, so browsers ask for it rather than for a missing /favicon.ico.
  '/favicon.svg': 'image/svg+xml',
} as const;

// The page loads only its own script and style; nothing inline, no framing, no foreign origins.
const pageCsp =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The sign-in page at `/`: plain HTML and a small script (two modules) that uses the public API like a storefront. */
export function signInPage(services: Services): FastifyPluginAsync {
  return async (app) => {
    const read = (name: string) => fs.readFileSync(path.join(publicDir, name), 'utf8');
    const template = read('index.html');
    const files = Object.fromEntries(Object.keys(assets).map((url) => [url, read(url.slice(1))]));

    app.get('/', { schema: { hide: true } }, async (_request, reply) => {
      const store = await services.store.get();
      // The page learns the store's name, identity mode and whether it offers sign-in codes from
      // attributes on <body>.
      const html = template
        .replaceAll('{{STORE_NAME}}', escapeAttribute(store.name))
        .replaceAll('{{IDENTITY_MODE}}', store.identityMode)
        .replaceAll('{{SIGN_IN_WITH_CODE}}', String(store.signInWithCode));
      reply
        .header('content-security-policy', pageCsp)
        .header('cache-control', 'no-store')
        .type('text/html; charset=utf-8');
      return html;
    });

    for (const [url, type] of Object.entries(assets)) {
      app.get(url, { schema: { hide: true } }, async (_request, reply) => {
        // Revalidated on every load, so a fresh page never runs an old cached script after a deploy.
        reply.header('content-security-policy', pageCsp).header('cache-control', 'no-cache').type(type);
        return files[url];
      });
    }
  };
}
