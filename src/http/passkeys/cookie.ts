import type { FastifyReply, FastifyRequest } from 'fastify';
import { passkeyChallengeLifetimeSeconds } from '../../auth/tables/passkey-challenges.js';
import { handleCookie } from '../core/handle-cookie.js';

/** The cookie that binds a passkey ceremony to the browser that asked for it (see handleCookie). */
export const passkeyCookiePath = '/api/v1/customer/auth/passkeys';
// The CSRF key signs it, under a label of its own so neither value can stand for the other.
const passkeyCookie = handleCookie(
  'storefront_passkey_challenge',
  passkeyCookiePath,
  'passkey-challenge',
  passkeyChallengeLifetimeSeconds,
);
export const passkeyCookieName = passkeyCookie.name;

export function setPasskeyCookie(reply: FastifyReply, key: Buffer, handle: string, secure: boolean): void {
  passkeyCookie.set(reply, key, handle, secure);
}

/** The handle of the request's cookie when one of `keys` signed it, else undefined. */
export function passkeyHandle(request: FastifyRequest, keys: readonly Buffer[]): string | undefined {
  return passkeyCookie.handleOf(request, keys);
}

/** Every ceremony's answer ends the cookie: its challenge is spent, whatever the outcome. */
export function clearPasskeyCookie(reply: FastifyReply, secure: boolean): void {
  passkeyCookie.clear(reply, secure);
}
