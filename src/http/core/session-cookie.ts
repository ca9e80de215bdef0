import type { FastifyReply, FastifyRequest } from 'fastify';
import { sessionAbsoluteLifetimeSeconds } from '../../auth/tables/sessions.js';
import type { FastifyBaseLogger } from 'fastify';
import type { SignInNotice } from '../../auth/rules/sign-in.js';
import type { Metrics } from '../../metrics.js';
import {
  cookieScope,
  expireHostOnly,
  setCsrfCookie,
  soleCookie,
  storeCookies,
  type StoreCookieSettings,
} from './csrf.js';

/** The cookies of the request's store (after the store gate): its cookie domain, else the deployment's. */
export function requestCookies(deployment: StoreCookieSettings, request: FastifyRequest): StoreCookieSettings {
  return storeCookies(deployment, request.store);
}

/**
 * Hands a newly opened session to the browser: the session cookie and a fresh XSRF-TOKEN bound to
 * it. Every way of signing in goes through here, so their cookies cannot drift apart.
 */
export function startSessionCookies(
  reply: FastifyReply,
  settings: StoreCookieSettings,
  csrfKey: Buffer,
  sessionId: string,
): void {
  const options = sessionCookieOptions(settings);
  reply.setCookie(settings.sessionCookieName, sessionId, { ...options, maxAge: sessionAbsoluteLifetimeSeconds });
  expireHostOnly(reply, settings.sessionCookieName, settings, options);
  setCsrfCookie(reply, csrfKey, sessionId, settings);
}

/** Ends the browser's session: the cookie expired, and a fresh XSRF-TOKEN bound to no session. */
export function endSessionCookies(reply: FastifyReply, settings: StoreCookieSettings, csrfKey: Buffer): void {
  const options = sessionCookieOptions(settings);
  reply.clearCookie(settings.sessionCookieName, options);
  expireHostOnly(reply, settings.sessionCookieName, settings, options);
  setCsrfCookie(reply, csrfKey, undefined, settings);
}

/**
 * The request's session cookie, under the name its store's cookies have (after the store gate);
 * none when the browser sent the name twice (see soleCookie).
 */
export function sessionCookieOf(request: FastifyRequest, deployment: StoreCookieSettings) {
  return soleCookie(request.headers.cookie, requestCookies(deployment, request).sessionCookieName);
}

/** What setting and clearing the session cookie share: a browser clears only a cookie of the same path and domain. */
function sessionCookieOptions(settings: StoreCookieSettings) {
  return { httpOnly: true, sameSite: 'lax', ...cookieScope(settings) } as const;
}

/** Counts what became of a sign-in's new-device notice; a failure to queue it is logged, the sign-in stands. */
export function reportSignInNotice(
  log: FastifyBaseLogger,
  metrics: Pick<Metrics, 'signInNotices'>,
  notice: SignInNotice | { failed: unknown },
): void {
  if (typeof notice === 'object') log.warn({ err: notice.failed }, 'the new sign-in notice could not be queued');
  metrics.signInNotices.inc({ outcome: typeof notice === 'object' ? 'failed' : notice });
}
