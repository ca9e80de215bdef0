import type { FastifyReply } from 'fastify';
import { sessionAbsoluteLifetimeSeconds } from '../auth/sessions.js';
import type { FastifyBaseLogger } from 'fastify';
import type { SignInNotice } from '../auth/sign-in-notice.js';
import type { Metrics } from '../metrics.js';
import { setCsrfCookie } from './csrf.js';

export interface SessionCookieSettings {
  sessionCookieName: string;
  cookieSecure: boolean;
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
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: settings.cookieSecure,
    maxAge: sessionAbsoluteLifetimeSeconds,
  });
  setCsrfCookie(reply, csrfKey, sessionId, settings.cookieSecure);
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
