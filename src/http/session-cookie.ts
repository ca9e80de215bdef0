import type { FastifyReply } from 'fastify';
import { sessionAbsoluteLifetimeSeconds } from '../auth/sessions.js';
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
