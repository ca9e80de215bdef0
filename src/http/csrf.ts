import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashSessionId } from '../auth/sessions.js';
import { ProblemError } from './problems.js';

export const csrfCookieName = 'XSRF-TOKEN';
export const csrfHeaderName = 'x-xsrf-token';

const unsafeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function tokenMac(key: Buffer, nonce: string, sessionId: string | undefined): string {
  const binding = sessionId === undefined ? '' : hashSessionId(sessionId);
  return createHmac('sha256', key).update(`${nonce}.${binding}`).digest('base64url');
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
  sessionCookieName: string;
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

/** docs/reference.md, CSRF: the origin check, then the token check, for browser requests with unsafe methods. */
export function checkCsrf(options: CsrfOptions, request: FastifyRequest): void {
  if (!unsafeMethods.has(request.method)) return;
  const origin = request.headers.origin;
  const fetchSite = request.headers['sec-fetch-site'];
  // Without either header the caller is not a browser, and only browsers can be tricked cross-site.
  if (origin === undefined && fetchSite === undefined) return;

  const sameOrigin = fetchSite === 'same-origin' || fetchSite === 'none';
  if (!sameOrigin && !(origin !== undefined && originIsTrusted(origin, request, options.allowedOrigins))) {
    throw new ProblemError('untrusted_origin');
  }

  const header = request.headers[csrfHeaderName];
  const cookie = request.cookies[csrfCookieName];
  const sessionId = request.cookies[options.sessionCookieName];
  if (
    typeof header !== 'string' ||
    cookie === undefined ||
    header !== cookie ||
    !isGenuineCsrfToken(options.keys, header, sessionId)
  ) {
    throw new ProblemError('csrf_token_mismatch');
  }
}

export function setCsrfCookie(reply: FastifyReply, key: Buffer, sessionId: string | undefined, secure: boolean): void {
  reply.setCookie(csrfCookieName, issueCsrfToken(key, sessionId), {
    httpOnly: false, // the storefront's script reads it and echoes it in X-XSRF-TOKEN
    sameSite: 'lax',
    path: '/',
    secure,
  });
}
