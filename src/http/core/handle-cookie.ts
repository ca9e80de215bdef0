import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * A cookie that binds something begun on the server (a passkey ceremony, a sign-in waiting for its
 * second step) to the browser that began it: a random handle naming its row, signed so a made-up
 * value is refused before any lookup. HttpOnly (no script needs it), SameSite=Strict, host-only,
 * and sent only to the paths that finish it.
 */
export interface HandleCookie {
  name: string;
  set(reply: FastifyReply, key: Buffer, handle: string, secure: boolean): void;
  /** The handle of the request's cookie when one of `keys` signed it, else undefined. */
  handleOf(request: FastifyRequest, keys: readonly Buffer[]): string | undefined;
  clear(reply: FastifyReply, secure: boolean): void;
}

/** `label` keeps one cookie's signature from standing for another's, or for any other value of the key. */
export function handleCookie(name: string, path: string, label: string, maxAgeSeconds: number): HandleCookie {
  const mac = (key: Buffer, handle: string) =>
    createHmac('sha256', key).update(`${label}.${handle}`).digest('base64url');
  const options = (secure: boolean) => ({ httpOnly: true, sameSite: 'strict', path, secure }) as const;
  return {
    name,
    set(reply, key, handle, secure) {
      reply.setCookie(name, `${handle}.${mac(key, handle)}`, { ...options(secure), maxAge: maxAgeSeconds });
    },
    handleOf(request, keys) {
      const value = request.cookies[name];
      const [handle, given, extra] = value?.split('.') ?? [];
      if (handle === undefined || given === undefined || extra !== undefined) return undefined;
      const givenBytes = Buffer.from(given);
      let genuine = false;
      for (const key of keys) {
        const expected = Buffer.from(mac(key, handle));
        genuine = (expected.length === givenBytes.length && timingSafeEqual(expected, givenBytes)) || genuine;
      }
      return genuine ? handle : undefined;
    },
    clear(reply, secure) {
      reply.clearCookie(name, options(secure));
    },
  };
}
