import type { FastifyReply, FastifyRequest } from 'fastify';
import { seal, unseal } from '../keys.js';
import type { PendingSignIn } from '../providers/relying-party.js';

/**
 * The cookie that binds a provider sign-in to the browser that started it: the state, nonce and
 * PKCE verifier the callback checks the provider's answer with, where to go back to, and whether
 * it links to a signed-in customer. Sealed (AES-GCM under a key of its own), so the browser can
 * neither read the verifier nor change where it goes back to; HttpOnly, SameSite=Lax (it must
 * come back on the provider's top-level redirect) and sent only to that provider's callback.
 * Single use: the callback spends the state (spendProviderState) whatever the outcome.
 */
export const providerCookieName = 'storefront_provider_start';
export const providerStartLifetimeSeconds = 10 * 60;

export function providerCallbackPath(providerId: string): string {
  return `/api/v1/customer/auth/providers/${providerId}/callback`;
}

export interface ProviderStart extends PendingSignIn {
  storeId: string;
  providerId: string;
  returnTo: string;
  /** The signed-in customer the provider's account is to be linked to; null for a sign-in. */
  linkTo: string | null;
  /** Milliseconds since the epoch, by the service's clock. */
  expiresAt: number;
}

function cookieOptions(providerId: string, secure: boolean) {
  return { httpOnly: true, sameSite: 'lax', path: providerCallbackPath(providerId), secure } as const;
}

export function setProviderCookie(reply: FastifyReply, key: Buffer, start: ProviderStart, secure: boolean): void {
  reply.setCookie(providerCookieName, seal(key, JSON.stringify(start)), {
    ...cookieOptions(start.providerId, secure),
    maxAge: providerStartLifetimeSeconds,
  });
}

/**
 * The start this browser's cookie holds for the provider of this callback, when an accepted key
 * sealed it, for this store and provider, and it has not expired; else undefined.
 */
export function providerStartOf(
  request: FastifyRequest,
  keys: readonly Buffer[],
  expected: { storeId: string; providerId: string; now: Date },
): ProviderStart | undefined {
  const value = request.cookies[providerCookieName];
  const opened = value === undefined ? undefined : unseal(keys, value);
  if (opened === undefined) return undefined;
  const start = JSON.parse(opened.text) as ProviderStart;
  const fits =
    start.storeId === expected.storeId &&
    start.providerId === expected.providerId &&
    start.expiresAt > expected.now.getTime();
  return fits ? start : undefined;
}

/** The callback ends the cookie, whatever the outcome: its state is spent. */
export function clearProviderCookie(reply: FastifyReply, providerId: string, secure: boolean): void {
  reply.clearCookie(providerCookieName, cookieOptions(providerId, secure));
}
