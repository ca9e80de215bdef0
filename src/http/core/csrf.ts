import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashSessionId } from '../../auth/tables/sessions.js';
import { storeOrigins, type StoreContext } from '../../store/store.js';
import { ProblemError } from './problems.js';

export const csrfCookieName = 'XSRF-TOKEN';
export const csrfHeaderName = 'x-xsrf-token';

const unsafeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function tokenMac(key: Buffer, nonce: string, sessionId: string | undefined): string {
  const binding = sessionId === undefined ? '' : hashSessionId(sessionId);
  return createHmac('sha256', key).update(`${nonce}.${binding}`).digest('base64url');
}

/**
 * The key a store's tokens are signed with, derived from the deployment's: a token issued for one
 * store is not genuine in another, even on a shared parent domain. None outside every store.
 */
export function storeCsrfKey(key: Buffer, storeId: string | undefined): Buffer {
  return storeId === undefined ? key : createHmac('sha256', key).update(`csrf-store:${storeId}`).digest();
}

/**
 * A signed double-submit token: random nonce plus its HMAC, bound to the session cookie when there
 * is one. The server keeps no state for it, and a token from one session is worthless in another.
 */
export function issueCsrfToken(key: Buffer, sessionId: string | undefined): string {
  const nonce = randomBytes(18).toString('base64url');
  return `${nonce}.${tokenMac(key, nonce, sessionId)}`;
}

/**
 * Whether the token was signed by one of `keys` (the current key first, then those of
 * APP_SECRET_PREVIOUS, so tokens issued before a rotation keep working). Every key is tried.
 */
export function isGenuineCsrfToken(keys: readonly Buffer[], token: string, sessionId: string | undefined): boolean {
  const [nonce, mac, extra] = token.split('.');
  if (nonce === undefined || mac === undefined || extra !== undefined) return false;
  const given = Buffer.from(mac);
  let genuine = false;
  for (const key of keys) {
    const expected = Buffer.from(tokenMac(key, nonce, sessionId));
    genuine = (expected.length === given.length && timingSafeEqual(expected, given)) || genuine;
  }
  return genuine;
}

export interface CsrfOptions {
  /** Accepted keys, the current one first; new tokens are signed with the current one only. */
  keys: readonly Buffer[];
  allowedOrigins: ReadonlySet<string>;
  /** The deployment's cookies, which a store's cookie domain may change (storeCookies). */
  cookies: StoreCookieSettings;
}

/**
 * The origin the browser addressed: scheme, host and port. The scheme is the connection's own, or
 * the one the trusted proxy forwarded (Fastify reads X-Forwarded-Proto only with TRUST_PROXY on).
 */
export function ownOrigin(request: FastifyRequest): string | undefined {
  const host = request.headers.host;
  if (host === undefined) return undefined;
  try {
    return new URL(`${request.protocol}://${host}`).origin;
  } catch {
    return undefined;
  }
}

function originIsTrusted(origin: string, request: FastifyRequest, allowed: ReadonlySet<string>): boolean {
  if (allowed.has(origin)) return true;
  const own = ownOrigin(request);
  if (own === undefined) return false;
  try {
    // The whole origin, scheme included: a page served over http must not act on an https
    // service of the same host (an attacker on the network can write that page), nor the reverse.
    // Parsed so "shop.test:443" and "shop.test" compare equal over https.
    return new URL(origin).origin === own;
  } catch {
    return false; // unparseable
  }
}

/** docs/reference/sessions-and-cookies.md, CSRF: the origin check, then the token check, for browser requests with unsafe methods. */
export function checkCsrf(
  options: CsrfOptions,
  request: FastifyRequest,
  store?: Pick<StoreContext, 'id' | 'hosts' | 'allowedOrigins' | 'cookieDomain'>,
): void {
  if (!unsafeMethods.has(request.method)) return;
  // Only browsers can be tricked cross-site.
  if (!fromBrowser(request)) return;
  const origin = request.headers.origin;
  const fetchSite = request.headers['sec-fetch-site'];

  const sameOrigin = fetchSite === 'same-origin' || fetchSite === 'none';
  const trusted = (candidate: string) =>
    originIsTrusted(candidate, request, options.allowedOrigins) ||
    (store !== undefined && storeOrigins(store).includes(candidate));
  if (!sameOrigin && !(origin !== undefined && trusted(origin))) {
    throw new ProblemError('untrusted_origin');
  }

  const header = request.headers[csrfHeaderName];
  // Any of the XSRF-TOKEN cookies the browser sent: with COOKIE_DOMAIN a stale host-only one (or
  // another site's on the parent domain) may come first, and the header echoes the service's.
  const cookies = cookieValues(request.headers.cookie, csrfCookieName);
  const settings = store === undefined ? options.cookies : storeCookies(options.cookies, store);
  const sessionId = soleCookie(request.headers.cookie, settings.sessionCookieName);
  if (
    typeof header !== 'string' ||
    !cookies.includes(header) ||
    !isGenuineCsrfToken(
      options.keys.map((key) => storeCsrfKey(key, store?.id)),
      header,
      sessionId,
    )
  ) {
    throw new ProblemError('csrf_token_mismatch');
  }
}

/** Every value a Cookie header gives `name`, in order (a browser may send one name several times). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (header === undefined) return [];
  const values: string[] = [];
  for (const pair of header.split(';')) {
    const equals = pair.indexOf('=');
    if (equals === -1 || pair.slice(0, equals).trim() !== name) continue;
    let value = pair.slice(equals + 1).trim();
    if (value.length > 1 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      values.push(decodeURIComponent(value));
    } catch {
      values.push(value);
    }
  }
  return values;
}

/**
 * The value of a cookie the header gives exactly once. Twice is none: a cookie planted for the
 * parent domain by another host under it must not choose which session a request acts in.
 */
export function soleCookie(header: string | undefined, name: string): string | undefined {
  const values = cookieValues(header, name);
  return values.length === 1 ? values[0] : undefined;
}

/** Where the service's cookies go: `Secure`, and for COOKIE_DOMAIN's hosts or this host only. */
export interface CookieSettings {
  cookieSecure: boolean;
  cookieDomain: string | undefined;
}

/** Where the session cookie goes, and its name. */
export interface StoreCookieSettings extends CookieSettings {
  sessionCookieName: string;
}

/**
 * A store's cookies: for its own cookie domain when it has one, else as the deployment sets them
 * (COOKIE_DOMAIN, or host-only). A `__Host-` cookie may not name a Domain, so with a store's
 * domain the session cookie is `__Secure-` instead.
 */
export function storeCookies(
  deployment: StoreCookieSettings,
  store: Pick<StoreContext, 'cookieDomain'>,
): StoreCookieSettings {
  if (store.cookieDomain === null) return deployment;
  return {
    cookieSecure: deployment.cookieSecure,
    cookieDomain: store.cookieDomain,
    sessionCookieName: deployment.sessionCookieName.replace(/^__host-/i, '__Secure-'),
  };
}

/** The path, domain and `Secure` flag every cookie the service sets shares (not the passkey challenge's). */
export function cookieScope(settings: CookieSettings) {
  return { path: '/', secure: settings.cookieSecure, ...(settings.cookieDomain && { domain: settings.cookieDomain }) };
}

/**
 * Sets a fresh XSRF-TOKEN cookie and returns the token. With COOKIE_DOMAIN the cookie is the
 * parent domain's, so a storefront's script on a sibling host can read it.
 */
export function setCsrfCookie(
  reply: FastifyReply,
  key: Buffer,
  sessionId: string | undefined,
  settings: CookieSettings,
): string {
  const token = issueCsrfToken(key, sessionId);
  // httpOnly off: the storefront's script reads it and echoes it in X-XSRF-TOKEN.
  const options = { httpOnly: false, sameSite: 'lax', ...cookieScope(settings) } as const;
  reply.setCookie(csrfCookieName, token, options);
  expireHostOnly(reply, csrfCookieName, settings, options);
  // Also as a header (exposed to the allowed origins): a frontend that cannot read the cookie, or
  // reads a stale one first, takes the token from the answer that set it.
  reply.header(csrfHeaderName, token);
  return token;
}

/**
 * With COOKIE_DOMAIN, expires the host-only cookie of the same name that this host may have set
 * before the domain was configured: the browser would send both, and keep the stale one.
 */
export function expireHostOnly(
  reply: FastifyReply,
  name: string,
  settings: CookieSettings,
  options: { path: string; domain?: string },
): void {
  if (settings.cookieDomain === undefined) return;
  const { domain: _domain, ...hostOnly } = options;
  reply.clearCookie(name, hostOnly);
}

/** Without an Origin or a Sec-Fetch-Site header the caller is not a browser. */
function fromBrowser(request: FastifyRequest): boolean {
  return request.headers.origin !== undefined || request.headers['sec-fetch-site'] !== undefined;
}

/**
 * Whether a browser came to a host the cookies can be set for: with COOKIE_DOMAIN, that domain or
 * a host under it (a browser drops a cookie whose Domain does not cover the host that set it). A
 * server calling on an internal address passes: it relays the cookies to the browser, whose host
 * is the storefront's.
 */
export function onCookieDomain(settings: CookieSettings, request: FastifyRequest): boolean {
  const domain = settings.cookieDomain;
  if (domain === undefined || !fromBrowser(request)) return true;
  const host = request.hostname.toLowerCase();
  return host === domain || host.endsWith(`.${domain}`);
}
