import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RelyingParty } from '../../auth/rules/relying-party.js';
import { isOnRpId } from '../../config.js';
import { acceptedKeys } from '../../keys.js';
import type { Edge } from '../core/edge.js';
import { ownOrigin } from '../core/csrf.js';
import { setPasskeyCookie } from './cookie.js';
import { limits } from '../core/rate-limit.js';

/**
 * The relying party of this request: configured RP ID and origins, the store's name, and, when
 * WEBAUTHN_ORIGINS is not set, the origin the request was addressed to if its host is on the RP ID.
 */
export function relyingParty(services: Pick<Edge, 'config'>, request: FastifyRequest): RelyingParty {
  const { store } = request;
  const configured = services.config.webauthn;
  // A store with hosts is its own relying party: its RP ID (fixed when it got its first host, so
  // adding hosts never moves it), and its storefronts as origins, so a passkey made for one store
  // never signs in on another.
  const rpId = store.webauthnRpId ?? configured.rpId;
  const storeOrigins = [...store.hosts.map((host) => `https://${host}`), ...store.allowedOrigins];
  const onRpId = storeOrigins.filter((origin) => isOnRpId(new URL(origin).hostname, rpId));
  const origins = [...new Set([...configured.origins, ...onRpId])];
  const own = configured.includeOwnOrigin ? ownOrigin(request) : undefined;
  const ownUsable = own !== undefined && isOnRpId(new URL(own).hostname, rpId) && !origins.includes(own);
  return { id: rpId, name: store.name, origins: ownUsable ? [...origins, own] : origins };
}

/** What both passkey route modules share: the options calls and the challenge cookie. */
export function passkeyRouteSupport(services: Pick<Edge, 'config' | 'keys' | 'limiter' | 'audit'>) {
  const { keys, limiter } = services;
  const secure = services.config.cookieSecure;

  /** Counts an options call, starts its ceremony and gives the browser the cookie naming the challenge. */
  async function ceremonyOptions<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    start: (rp: RelyingParty) => Promise<{ options: T; handle: string }>,
  ): Promise<T> {
    await limiter.consume(request, [[limits.passkeyChallenges, request.clientKey]], request.store.id);
    const { options, handle } = await start(relyingParty(services, request));
    setPasskeyCookie(reply, keys.csrf, handle, secure);
    return options;
  }

  return {
    ceremonyOptions,
    /** Keys that may have signed a challenge cookie, the current one first. */
    cookieKeys: acceptedKeys(keys, 'csrf'),
    secure,
  };
}
