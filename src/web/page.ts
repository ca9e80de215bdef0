import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';
import type { Edge } from '../http/edge.js';
import { hostOf } from '../http/scopes.js';

// public/ sits at the package root, two levels above this file in both src/ and dist/.
const publicDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../public');

const assets = {
  '/app.js': 'text/javascript; charset=utf-8',
  // The account area, imported by app.js.
  '/account.js': 'text/javascript; charset=utf-8',
  // Passkeys on the page, imported by app.js.
  '/passkeys.js': 'text/javascript; charset=utf-8',
  // Sign-in providers on the page ("Continue with …"), imported by app.js.
  '/providers.js': 'text/javascript; charset=utf-8',
  '/app.css': 'text/css; charset=utf-8',
  // Linked from the page, so browsers ask for it rather than for a missing /favicon.ico.
  '/favicon.svg': 'image/svg+xml',
} as const;

/**
 * @simplewebauthn/browser's UMD bundle (it defines `SimpleWebAuthnBrowser`), served by the service
 * itself so the page's CSP stays `script-src 'self'`: no CDN. Found from the package's own entry
 * point, wherever npm installed it.
 */
export const webauthnBundleUrl = '/vendor/simplewebauthn-browser.js';
function webauthnBundlePath(): string {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
  return path.join(path.dirname(entry), '../dist/bundle/index.umd.min.js');
}

// The page loads only its own script and style; nothing inline, no framing, no foreign origins.
const pageCsp =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const unknownStorePage = 'No store answers on this host.\n';

/** The sign-in page at `/`: plain HTML and a small script (four modules) that uses the public API like a storefront. */
export function signInPage(services: Pick<Edge, 'store'>): FastifyPluginAsync {
  return async (app) => {
    const read = (name: string) => fs.readFileSync(path.join(publicDir, name), 'utf8');
    const template = read('index.html');
    const files: Record<string, string> = Object.fromEntries(
      Object.keys(assets).map((url) => [url, read(url.slice(1))]),
    );
    files[webauthnBundleUrl] = fs.readFileSync(webauthnBundlePath(), 'utf8');
    const served: Record<string, string> = { ...assets, [webauthnBundleUrl]: 'text/javascript; charset=utf-8' };

    app.get('/', { schema: { hide: true } }, async (request, reply) => {
      const store = await services.store.resolve(hostOf(request));
      reply.header('content-security-policy', pageCsp).header('cache-control', 'no-store');
      // A host that names no store gets a page that says so, nothing of any store.
      if (store === null) return reply.code(404).type('text/plain; charset=utf-8').send(unknownStorePage);
      // The page learns the store's name, identity mode and whether it offers sign-in codes and
      // passkeys from attributes on <body>.
      const html = template
        .replaceAll('{{STORE_NAME}}', escapeAttribute(store.name))
        .replaceAll('{{IDENTITY_MODE}}', store.identityMode)
        .replaceAll('{{SIGN_IN_WITH_CODE}}', String(store.signInWithCode))
        .replaceAll('{{PASSKEYS}}', String(store.passkeys));
      reply.type('text/html; charset=utf-8');
      return html;
    });

    for (const [url, type] of Object.entries(served)) {
      app.get(url, { schema: { hide: true } }, async (_request, reply) => {
        // Revalidated on every load, so a fresh page never runs an old cached script after a deploy.
        reply.header('content-security-policy', pageCsp).header('cache-control', 'no-cache').type(type);
        return files[url];
      });
    }
  };
}
