import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AdminListenerConfig } from '../../config.js';
import { ProblemError } from '../core/problems.js';
import { loggedUrl } from '../core/request-log.js';

/** ADMIN_TOKENS may call every admin route; INTROSPECTION_TOKENS only those that let them in. */
export type AdminRole = 'admin' | 'introspection';

/** Who called the admin listener: the token's role, and its id for logs and counters. */
export interface AdminCaller {
  role: AdminRole;
  tokenId: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An INTROSPECTION_TOKENS token may call this admin route too; without it, only ADMIN_TOKENS may. */
    introspectionTokens?: boolean;
  }
  interface FastifyRequest {
    /** The admin listener's caller, set by its guard (`adminGuard`); null on the customer listener. */
    adminCaller: AdminCaller | null;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** A token's id in logs and counters: 12 hex characters of its SHA-256, which open nothing. */
export function tokenIdOf(token: string): string {
  return sha256(token).toString('hex').slice(0, 12);
}

/** The tokens the configuration lists, kept only as their SHA-256 digests. */
export class AdminTokens {
  private readonly known: ReadonlyArray<{ digest: Buffer; caller: AdminCaller }>;

  constructor(config: Pick<AdminListenerConfig, 'adminTokens' | 'introspectionTokens'>) {
    const entry = (role: AdminRole) => (token: string) => ({
      digest: sha256(token),
      caller: { role, tokenId: tokenIdOf(token) },
    });
    this.known = [...config.adminTokens.map(entry('admin')), ...config.introspectionTokens.map(entry('introspection'))];
  }

  /**
   * The caller a presented token belongs to, or undefined. Both sides are hashed first, so each
   * comparison is of 32 bytes whatever the lengths, and every known token is compared, matched or
   * not: the time taken tells neither how much of a token was right nor which one matched.
   */
  identify(presented: string): AdminCaller | undefined {
    const digest = sha256(presented);
    let found: AdminCaller | undefined;
    for (const { digest: known, caller } of this.known) {
      const equal = timingSafeEqual(known, digest);
      if (equal && found === undefined) found = caller;
    }
    return found;
  }
}

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case), or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header ?? '')?.[1];
}

const realm = 'Bearer realm="storefront-auth admin"';

/** The detail of the admin listener's 401: the customer API's ("Sign in to continue.") fits no backend. */
export const missingTokenDetail =
  'Send a token of ADMIN_TOKENS or INTROSPECTION_TOKENS as Authorization: Bearer <token>.';

/**
 * The admin listener's first check, before anything is read or routed: a known bearer token or
 * `401 unauthenticated`, then its role: `403 forbidden` for an introspection token on a route that
 * does not let it in. A path no route has answers 404 (or 405) to any known token.
 */
export function adminGuard(tokens: AdminTokens) {
  return async (request: FastifyRequest): Promise<void> => {
    const presented = bearerToken(request.headers.authorization);
    const caller = presented === undefined ? undefined : tokens.identify(presented);
    if (caller === undefined) {
      throw new ProblemError(
        'unauthenticated',
        {},
        { 'www-authenticate': presented === undefined ? realm : `${realm}, error="invalid_token"` },
        missingTokenDetail,
      );
    }
    request.adminCaller = caller;
    if (caller.role !== 'admin' && !request.is404 && request.routeOptions.config.introspectionTokens !== true) {
      throw new ProblemError('forbidden');
    }
  };
}

/** The caller of an admin route, which the guard has set; reading it elsewhere is a bug. */
export function adminCallerOf(request: FastifyRequest): AdminCaller {
  if (request.adminCaller === null) throw new Error(`${loggedUrl(request)} was not guarded by adminGuard`);
  return request.adminCaller;
}
