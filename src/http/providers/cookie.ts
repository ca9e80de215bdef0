import type { FastifyReply, FastifyRequest } from 'fastify';
import { seal, unseal } from '../../keys.js';
import type { PendingSignIn } from '../../providers/relying-party.js';

/**
 * The cookies of a provider sign-in, sealed (AES-GCM under a key of their own, which nothing else
 * is sealed with), HttpOnly, SameSite=Lax (they must come back on a top-level navigation) and sent
 * only to that provider's callback path. With secure cookies their names carry the `__Secure-`
 * prefix, so a page on plain http cannot plant one.
 *
 * - The start binds the sign-in to the browser that started it: the state, nonce and PKCE verifier
 *   the callback checks the provider's answer with, where to go back to, and whether it links to
 *   a signed-in customer; the browser can neither read the verifier nor change where it goes back
 *   to. Single use: the callback spends the state (spendProviderState).
 * - The answer holds a form-posted answer (Apple's) for the one GET that follows it, so the code
 *   and the shopper's name never travel in a URL, a log line or the browser's history.
 */
export const providerStartLifetimeSeconds = 10 * 60;
const answerLifetimeSeconds = 60;

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

interface CookieSettings {
  key: Buffer;
  /** Every key a cookie may have been sealed with, the current one first. */
  keys: readonly Buffer[];
  secure: boolean;
}

export function providerCookies({ key, keys, secure }: CookieSettings) {
  const prefix = secure ? '__Secure-' : '';
  const startName = `${prefix}storefront_provider_start`;
  const answerName = `${prefix}storefront_provider_answer`;
  const options = (providerId: string) =>
    ({ httpOnly: true, sameSite: 'lax', path: providerCallbackPath(providerId), secure }) as const;

  /** The sealed JSON of a cookie, when an accepted key sealed it; else undefined. */
  function opened<T>(request: FastifyRequest, name: string): T | undefined {
    const value = request.cookies[name];
    const text = value === undefined ? undefined : unseal(keys, value)?.text;
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as T;
    } catch {
      return undefined;
    }
  }

  return {
    setStart(reply: FastifyReply, start: ProviderStart): void {
      reply.setCookie(startName, seal(key, JSON.stringify(start)), {
        ...options(start.providerId),
        maxAge: providerStartLifetimeSeconds,
      });
    },

    /**
     * The start this browser's cookie holds for the provider of this callback, when it was sealed
     * for this store and provider and has not expired; else undefined.
     */
    startOf(request: FastifyRequest, expected: { storeId: string; providerId: string; now: Date }) {
      const start = opened<ProviderStart>(request, startName);
      const fits =
        start !== undefined &&
        start.storeId === expected.storeId &&
        start.providerId === expected.providerId &&
        start.expiresAt > expected.now.getTime();
      return fits ? start : undefined;
    },

    hasStart: (request: FastifyRequest) => request.cookies[startName] !== undefined,

    /** Ends the start: its state is spent. */
    clearStart(reply: FastifyReply, providerId: string): void {
      reply.clearCookie(startName, options(providerId));
    },

    /** Keeps a form-posted answer for the GET that follows it, for a minute. */
    setAnswer(reply: FastifyReply, providerId: string, answer: URLSearchParams): void {
      reply.setCookie(answerName, seal(key, answer.toString()), {
        ...options(providerId),
        maxAge: answerLifetimeSeconds,
      });
    },

    /** The answer a form post left, once: it is cleared as it is read. */
    takeAnswer(request: FastifyRequest, reply: FastifyReply, providerId: string): URLSearchParams | undefined {
      const value = request.cookies[answerName];
      if (value === undefined) return undefined;
      reply.clearCookie(answerName, options(providerId));
      const text = unseal(keys, value)?.text;
      return text === undefined ? undefined : new URLSearchParams(text);
    },
  };
}

export type ProviderCookies = ReturnType<typeof providerCookies>;
