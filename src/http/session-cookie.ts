import type { FastifyReply } from 'fastify';
import { sessionAbsoluteLifetimeSeconds } from '../auth/sessions.js';
import type { Config } from '../config.js';
import { setCsrfCookie } from './csrf.js';

/**
 * Hands the browser a session: the HttpOnly session cookie and a CSRF token bound to it. Every
 * session id is new, so the token of the one before stops working with it.
 */
export function issueSessionCookies(
  reply: FastifyReply,
  settings: Pick<Config, 'sessionCookieName' | 'cookieSecure'>,
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
