import type { FastifyReply } from 'fastify';
import { sessionAbsoluteLifetimeSeconds } from '../auth/tables/sessions.js';
import type { FastifyBaseLogger } from 'fastify';
import type { SignInNotice } from '../auth/rules/sign-in.js';
import type { Metrics } from '../metrics.js';
import { cookieScope, setCsrfCookie, type CookieSettings } from './csrf.js';

export interface SessionCookieSettings extends CookieSettings {
  sessionCookieName: string;
}

/**
 * Hands a newly opened session to the browser: the session cookie and a fresh XSRF-TOKEN bound to
 * it. Every way of signing in goes through here, so their cookies cannot drift apart.
 */
export function startSessionCookies(
  reply: FastifyReply,
  settings: SessionCookieSettings,
  csrfKey: Buffer,
  sessionId: string,
): void {
  reply.setCookie(settings.sessionCookieName, sessionId, {
    ...sessionCookieOptions(settings),
    maxAge: sessionAbsoluteLifetimeSeconds,
  });
  setCsrfCookie(reply, csrfKey, sessionId, settings);
}

/** Ends the browser's session: the cookie expired, and a fresh XSRF-TOKEN bound to no session. */
export function endSessionCookies(reply: FastifyReply, settings: SessionCookieSettings, csrfKey: Buffer): void {
  reply.clearCookie(settings.sessionCookieName, sessionCookieOptions(settings));
  setCsrfCookie(reply, csrfKey, undefined, settings);
}

/** What setting and clearing the session cookie share: a browser clears only a cookie of the same path and domain. */
function sessionCookieOptions(settings: SessionCookieSettings) {
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
