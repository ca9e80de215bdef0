import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { passkeyChallengeLifetimeSeconds } from '../auth/tables/passkey-challenges.js';

/**
 * The cookie that binds a passkey ceremony to the browser that asked for it: a random handle
 * naming the challenge row, signed so a made-up value is refused before any lookup. HttpOnly
 * (no script needs it), SameSite=Strict and sent only to the passkey paths.
 */
export const passkeyCookieName = 'storefront_passkey_challenge';
export const passkeyCookiePath = '/api/v1/customer/auth/passkeys';

// The CSRF key signs it, under a label of its own so neither value can stand for the other.
function mac(key: Buffer, handle: string): string {
  return createHmac('sha256', key).update(`passkey-challenge.${handle}`).digest('base64url');
}

export function setPasskeyCookie(reply: FastifyReply, key: Buffer, handle: string, secure: boolean): void {
  reply.setCookie(passkeyCookieName, `${handle}.${mac(key, handle)}`, {
    httpOnly: true,
    sameSite: 'strict',
    path: passkeyCookiePath,
    secure,
    maxAge: passkeyChallengeLifetimeSeconds,
  });
}

/** The handle of the request's cookie when one of `keys` signed it, else undefined. */
export function passkeyHandle(request: FastifyRequest, keys: readonly Buffer[]): string | undefined {
  const value = request.cookies[passkeyCookieName];
  const [handle, given, extra] = value?.split('.') ?? [];
  if (handle === undefined || given === undefined || extra !== undefined) return undefined;
  const givenBytes = Buffer.from(given);
  let genuine = false;
  for (const key of keys) {
    const expected = Buffer.from(mac(key, handle));
    genuine = (expected.length === givenBytes.length && timingSafeEqual(expected, givenBytes)) || genuine;
  }
  return genuine ? handle : undefined;
}

/** Every ceremony's answer ends the cookie: its challenge is spent, whatever the outcome. */
export function clearPasskeyCookie(reply: FastifyReply, secure: boolean): void {
  reply.clearCookie(passkeyCookieName, { httpOnly: true, sameSite: 'strict', path: passkeyCookiePath, secure });
}
