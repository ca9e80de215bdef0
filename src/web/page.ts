import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';
import type { Edge } from '../http/core/edge.js';
import { setLanguageHeaders } from '../http/core/language-headers.js';
import { hostOf } from '../http/core/scopes.js';
import { negotiate } from '../i18n/negotiate.js';
import { catalogue, type Params } from '../i18n/strings.js';
import type { BotCheckProvider, Branding, StoreContext } from '../store/store.js';
import { findLogo, uploadedLogoPath } from '../store/logos.js';

// public/ sits at the package root, two levels above this file in both src/ and dist/.
const publicDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../public');

const assets = {
  '/app.js': 'text/javascript; charset=utf-8',
  // The page's strings (embedded in the page as data) and t(), imported by every module.
  '/strings.js': 'text/javascript; charset=utf-8',
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

/**
 * What each bot check provider's widget needs beyond the page's own origin: its script (rendering
 * every element of its class), and the origins its script, frames and calls come from. Allowed
 * in the CSP only on the pages of a store that has the check.
 */
const botCheckWidgets: Record<BotCheckProvider, { script: string; className: string; origins: string }> = {
  turnstile: {
    script: 'https://challenges.cloudflare.com/turnstile/v0/api.js',
    className: 'cf-turnstile',
    origins: 'https://challenges.cloudflare.com',
  },
  hcaptcha: {
    script: 'https://js.hcaptcha.com/1/api.js',
    className: 'h-captcha',
    origins: 'https://hcaptcha.com https://*.hcaptcha.com',
  },
  recaptcha: {
    script: 'https://www.google.com/recaptcha/api.js',
    className: 'g-recaptcha',
    origins: 'https://www.google.com https://www.gstatic.com',
  },
};

/**
 * The page's CSP: its own, plus the widget's origins when the store has a bot check, the hash of the
 * store's colours (its one inline style) and its logo's origin when it has them.
 */
export function pageCspOf(store: Pick<StoreContext, 'botCheck' | 'branding'>): string {
  const widget = store.botCheck === null ? '' : ` ${botCheckWidgets[store.botCheck.provider].origins}`;
  const style = brandStyle(store.branding);
  const styleHash =
    style === '' ? '' : ` 'sha256-${createHash('sha256').update(styleText(store.branding)).digest('base64')}'`;
  // An uploaded logo is the page's own origin ('self'); a linked one adds its origin.
  const { logoUrl } = store.branding;
  const logo = logoUrl === null || logoUrl.startsWith('/') ? '' : ` ${new URL(logoUrl).origin}`;
  const frames = widget === '' ? '' : ` frame-src${widget};`;
  return `default-src 'none'; script-src 'self'${widget}; style-src 'self'${widget}${styleHash}; connect-src 'self'${widget};${frames} img-src 'self' data:${logo}; form-action 'none'; base-uri 'none'; frame-ancestors 'none'`;
}

/** The store's colours as the page's custom properties (app.css falls back to its own). */
function styleText(branding: Branding): string {
  const properties = [
    branding.primaryColour === null ? '' : `--brand-primary:${branding.primaryColour};`,
    branding.accentColour === null ? '' : `--brand-accent:${branding.accentColour};`,
  ].join('');
  return properties === '' ? '' : `:root{${properties}}`;
}

function brandStyle(branding: Branding): string {
  const text = styleText(branding);
  return text === '' ? '' : `<style>${text}</style>`;
}

/** The logo (the store's name as its text) and the support link, when the store has them. */
function brandParts(
  store: Pick<StoreContext, 'branding' | 'name'>,
  language: string,
): { logo: string; support: string } {
  const { logoUrl, supportUrl } = store.branding;
  return {
    logo:
      logoUrl === null
        ? ''
        : `<img class="brand-logo" src="${escapeAttribute(logoUrl)}" alt="${escapeAttribute(store.name)}" />`,
    support:
      supportUrl === null
        ? ''
        : `<p class="support"><a href="${escapeAttribute(supportUrl)}" rel="noopener">${escapeAttribute(catalogue.text(language, 'page.brand.support', { store: store.name }))}</a></p>`,
  };
}

/** The widget's script and its container, which the page's script reads the token from; none without a check. */
function botCheckParts(store: Pick<StoreContext, 'botCheck'>): { script: string; widget: string } {
  if (store.botCheck === null) return { script: '', widget: '' };
  const { script, className } = botCheckWidgets[store.botCheck.provider];
  return {
    script: `<script src="${script}" async defer></script>`,
    widget: `<div id="bot-check" class="${className}" data-sitekey="${escapeAttribute(store.botCheck.siteKey)}" data-provider="${store.botCheck.provider}" data-on="${escapeAttribute(store.botCheck.on.join(' '))}"></div>`,
  };
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const unknownStorePage = 'No store answers on this host.\n';

/**
 * The page's language: a `?lang=` naming one of the store's languages (the language switch's
 * links) wins, then the browser's `Accept-Language` among them, then the store's default.
 */
export function pageLanguage(
  query: unknown,
  acceptLanguage: string | undefined,
  store: Pick<StoreContext, 'languages' | 'defaultLanguage'>,
): string {
  const asked = (query as { lang?: unknown } | undefined)?.lang;
  if (typeof asked === 'string' && store.languages.includes(asked)) return asked;
  return negotiate(acceptLanguage, store);
}

/**
 * index.html with its `{{NAME}}` values and its `{{t:page.a.b}}` texts (escaped) filled in one pass,
 * so nothing filled in (a store's name) is read again as a placeholder. `page.identity.*` names the
 * store's identity mode's texts (`page.email.*` or `page.phone.*`): the sentence around the noun
 * differs by language, so each mode has whole sentences rather than a noun to insert.
 */
function fillTemplate(
  template: string,
  values: Record<string, string>,
  language: string,
  mode: 'email' | 'phone',
  params: Params,
): string {
  return template.replace(/\{\{(?:t:(page\.[\w.]+)|([A-Z_]+))\}\}/g, (whole, key?: string, name?: string) => {
    if (key !== undefined)
      return escapeAttribute(catalogue.text(language, key.replace(/^page\.identity\./, `page.${mode}.`), params));
    return values[name!] ?? whole;
  });
}

/** Links to the page in each of the store's languages, each named in its own; none for one language. */
function languageSwitch(store: Pick<StoreContext, 'languages'>, language: string): string {
  const offered = store.languages.filter((tag) => catalogue.has(tag));
  if (offered.length < 2) return '';
  const links = offered.map((tag) => {
    const current = tag === language ? ' aria-current="true"' : '';
    const name = escapeAttribute(catalogue.text(tag, 'meta.name'));
    const attributes = `href="?lang=${encodeURIComponent(tag)}" hreflang="${escapeAttribute(tag)}" lang="${escapeAttribute(tag)}" dir="${catalogue.direction(tag)}"`;
    return `<li><a ${attributes}${current}>${name}</a></li>`;
  });
  const label = escapeAttribute(catalogue.text(language, 'page.languages.label'));
  return `<nav id="languages" aria-label="${label}"><ul>${links.join('')}</ul></nav>`;
}

/**
 * The page's own strings for its scripts, as a JSON data block: the browser never runs it, so the
 * CSP stays `script-src 'self'`. `<` is written as \u003c so no text can close the element.
 */
function stringsBlock(language: string): string {
  return JSON.stringify(catalogue.section(language, 'page'))
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026');
}

/** The sign-in page at `/`: plain HTML and a small script (four modules) that uses the public API like a storefront. */
export function signInPage(services: Pick<Edge, 'store' | 'db'>): FastifyPluginAsync {
  return async (app) => {
    const read = (name: string) => fs.readFileSync(path.join(publicDir, name), 'utf8');
    const template = read('index.html');
    // Every text the page names exists in English (and so in every language, by the strings check):
    // a wrong key stops the start rather than one page view.
    for (const mode of ['email', 'phone'] as const) fillTemplate(template, {}, 'en', mode, { store: '' });
    const files: Record<string, string> = Object.fromEntries(
      Object.keys(assets).map((url) => [url, read(url.slice(1))]),
    );
    files[webauthnBundleUrl] = fs.readFileSync(webauthnBundlePath(), 'utf8');
    const served: Record<string, string> = { ...assets, [webauthnBundleUrl]: 'text/javascript; charset=utf-8' };

    app.get('/', { schema: { hide: true } }, async (request, reply) => {
      const store = await services.store.resolve(hostOf(request));
      reply
        .header('content-security-policy', store === null ? pageCsp : pageCspOf(store))
        .header('cache-control', 'no-store');
      // A host that names no store gets a page that says so, nothing of any store.
      if (store === null) return reply.code(404).type('text/plain; charset=utf-8').send(unknownStorePage);
      const botCheck = botCheckParts(store);
      const language = pageLanguage(request.query, request.headers['accept-language'], store);
      const brand = brandParts(store, language);
      setLanguageHeaders(reply, language);
      // The page learns the store's name, identity mode and whether it offers sign-in codes and
      // passkeys from attributes on <body>; its language from <html lang>.
      const html = fillTemplate(
        template,
        {
          LANG: language,
          DIR: catalogue.direction(language),
          LANGUAGES: languageSwitch(store, language),
          STRINGS: stringsBlock(language),
          STORE_NAME: escapeAttribute(store.name),
          IDENTITY_MODE: store.identityMode,
          SIGN_IN_WITH_CODE: String(store.signInWithCode),
          PASSKEYS: String(store.passkeys),
          TWO_FACTOR: store.twoFactor,
          BOT_CHECK_SCRIPT: botCheck.script,
          BOT_CHECK_WIDGET: botCheck.widget,
          BRAND_STYLE: brandStyle(store.branding),
          BRAND_LOGO: brand.logo,
          SUPPORT_LINK: brand.support,
        },
        language,
        store.identityMode,
        { store: store.name },
      );
      reply.type('text/html; charset=utf-8');
      return html;
    });

    // A store's uploaded logo, on its own hosts: versioned by its digest (`?v=`), so kept for good.
    app.get(uploadedLogoPath, { schema: { hide: true } }, async (request, reply) => {
      const store = await services.store.resolve(hostOf(request));
      const logo = store === null ? null : await findLogo(services.db, store.id);
      reply
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('x-content-type-options', 'nosniff');
      if (logo === null) return reply.code(404).type('text/plain; charset=utf-8').send('No logo.\n');
      reply.header('cache-control', 'public, max-age=31536000, immutable').type(logo.contentType);
      return logo.image;
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
