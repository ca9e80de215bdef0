// The settings browsers and callers see: cookies, allowed origins, passkeys, and the admin
// listener's tokens, with the rules that tie them together.
import net from 'node:net';
import { minSecretLength, maxPreviousSecrets } from './declaration.js';
import { ConfigError, flag, isSet, list, number, text, type Env } from './read.js';
import type { Config, WebAuthnSettings } from './types.js';

/** APP_SECRET_PREVIOUS: the secrets APP_SECRET replaces, still accepted when checking, never used to make. */
export function readPreviousSecrets(env: Env, current: string | undefined): string[] {
  const name = 'APP_SECRET_PREVIOUS';
  const value = list(env, name);
  if (value === undefined) return [];
  const secrets = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (secrets.length > maxPreviousSecrets) {
    throw new ConfigError(name, `at most ${maxPreviousSecrets} comma-separated secrets, got ${secrets.length}`);
  }
  // Errors name an entry by its place, never by its value: it is a secret.
  secrets.forEach((secret, index) => {
    const which = `secret ${index + 1} of ${secrets.length}`;
    if (secret.length < minSecretLength) {
      throw new ConfigError(name, `${which} must be at least ${minSecretLength} characters, like APP_SECRET`);
    }
    if (secret === current) {
      throw new ConfigError(name, `${which} is APP_SECRET itself; list only the secrets it replaces`);
    }
  });
  return secrets;
}

export function readOrigins(env: Env, name: 'CORS_ALLOWED_ORIGINS' | 'WEBAUTHN_ORIGINS'): string[] {
  const value = list(env, name);
  if (value === undefined) return [];
  return value.split(',').map((entry) => {
    const trimmed = entry.trim();
    let url: URL;
    try {
      url = new URL(trimmed);
    } catch {
      throw new ConfigError(name, `"${trimmed}" is not an origin such as https://shop.example`);
    }
    if (url.origin !== trimmed.replace(/\/$/, '')) {
      throw new ConfigError(name, `"${trimmed}" is not an origin such as https://shop.example`);
    }
    return url.origin;
  });
}

/** Whether `hostname` is the RP ID or one of its subdomains: where a browser lets a page use its passkeys. */
export function isOnRpId(hostname: string, rpId: string): boolean {
  return hostname === rpId || hostname.endsWith(`.${rpId}`);
}

/** Browsers run WebAuthn in secure contexts only: https, or plain http on localhost. */
function isSecureContextOrigin(url: URL): boolean {
  return (
    url.protocol === 'https:' ||
    (url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname.endsWith('.localhost')))
  );
}

const domainNamePattern =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function readWebAuthn(env: Env, corsOrigins: string[]): WebAuthnSettings {
  const given = text(env, 'WEBAUTHN_RP_ID');
  // An IP address cannot be an RP ID, so an allowed origin named by address gives no default.
  const fromCors = corsOrigins
    .map((origin) => new URL(origin).hostname)
    .find((host) => net.isIP(host.replace(/^\[|\]$/g, '')) === 0);
  const rpId = given ?? fromCors ?? 'localhost';
  if (given !== undefined && (!domainNamePattern.test(given) || net.isIP(given) !== 0)) {
    throw new ConfigError(
      'WEBAUTHN_RP_ID',
      `expected a lowercase domain name such as shop.example (no scheme, port or IP address), got "${given}"`,
    );
  }
  if (!isSet(env, 'WEBAUTHN_ORIGINS')) {
    // Only the allowed origins a browser would let use passkeys of this RP ID: others (another
    // domain, plain http) could never complete a ceremony, and must not stop a start that does not use passkeys.
    const usable = corsOrigins.filter((origin) => {
      const url = new URL(origin);
      return isOnRpId(url.hostname, rpId) && isSecureContextOrigin(url);
    });
    return { rpId, origins: usable, includeOwnOrigin: true };
  }
  const origins = readOrigins(env, 'WEBAUTHN_ORIGINS');
  for (const origin of origins) {
    const url = new URL(origin);
    if (!isOnRpId(url.hostname, rpId)) {
      throw new ConfigError(
        'WEBAUTHN_ORIGINS',
        `"${origin}" is not on the RP ID ${rpId} (WEBAUTHN_RP_ID): its host must be ${rpId} or a subdomain of it`,
      );
    }
    if (!isSecureContextOrigin(url)) {
      throw new ConfigError(
        'WEBAUTHN_ORIGINS',
        `"${origin}" is plain http: browsers offer passkeys only to https origins and http://localhost`,
      );
    }
  }
  return { rpId, origins, includeOwnOrigin: false };
}

/**
 * A comma-separated list of bearer tokens, several so one can be rotated out. Each is a secret at
 * least as long as APP_SECRET, in the characters an `Authorization: Bearer` header carries (RFC
 * 6750's token68); errors name a token by its place, never by its value.
 */
function readTokens(env: Env, name: 'ADMIN_TOKENS' | 'INTROSPECTION_TOKENS'): string[] {
  const value = list(env, name);
  if (value === undefined) return [];
  const tokens = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  tokens.forEach((token, index) => {
    const which = `token ${index + 1} of ${tokens.length}`;
    if (token.length < minSecretLength) {
      throw new ConfigError(name, `${which} must be at least ${minSecretLength} characters`);
    }
    if (!/^[A-Za-z0-9._~+/-]+=*$/.test(token)) {
      throw new ConfigError(name, `${which} may hold only letters, digits and -._~+/ (and = at its end)`);
    }
  });
  return tokens;
}

/**
 * The admin listener, started only when a token may call it. Its address is read even without
 * one, so a mistyped port stops the start before the day tokens are added; set without any token,
 * it is a mistake, since nothing would listen there.
 */
export function readAdminListener(env: Env, servicePort: number, metrics: Config['metrics']): Config['admin'] {
  const port = number(env, 'ADMIN_PORT');
  const host = text(env, 'ADMIN_HOST');
  const adminTokens = readTokens(env, 'ADMIN_TOKENS');
  const introspectionTokens = readTokens(env, 'INTROSPECTION_TOKENS');
  if (adminTokens.length === 0 && introspectionTokens.length === 0) {
    for (const name of ['ADMIN_PORT', 'ADMIN_HOST'] as const) {
      if (isSet(env, name)) {
        throw new ConfigError(
          name,
          'is set, but the admin listener starts only with ADMIN_TOKENS or INTROSPECTION_TOKENS',
        );
      }
    }
    return undefined;
  }
  // A token in both lists would have two roles; the narrower one would be a promise not kept.
  const both = introspectionTokens.findIndex((token) => adminTokens.includes(token));
  if (both >= 0) {
    throw new ConfigError(
      'INTROSPECTION_TOKENS',
      `token ${both + 1} is also in ADMIN_TOKENS: give each token one role`,
    );
  }
  // The admin routes are never served where shoppers reach the service (0 is a free port each).
  if (port !== 0 && port === servicePort) {
    throw new ConfigError(
      'ADMIN_PORT',
      `is the customer port (PORT=${port}): the admin listener needs a port of its own`,
    );
  }
  if (port !== 0 && port === metrics?.port) {
    throw new ConfigError('ADMIN_PORT', `is the metrics port (METRICS_PORT=${port}): choose another`);
  }
  return { port, host, adminTokens, introspectionTokens };
}

export function readSessionCookie(
  env: Env,
  production: boolean,
): Pick<Config, 'cookieSecure' | 'cookieDomain' | 'sessionCookieName'> {
  const cookieSecure = flag(env, 'COOKIE_SECURE', production);
  const cookieDomain = readCookieDomain(env);
  // A __Host- cookie may not name a Domain, so a cookie for a parent domain is __Secure- instead.
  const securePrefix = cookieDomain === undefined ? '__Host-' : '__Secure-';
  const sessionCookieName =
    text(env, 'SESSION_COOKIE_NAME') ?? (cookieSecure ? `${securePrefix}storefront_session` : 'storefront_session');
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(sessionCookieName)) {
    throw new ConfigError('SESSION_COOKIE_NAME', 'is not a valid cookie name');
  }
  // Browsers match the prefixes whatever their case, and drop a cookie that breaks their rules.
  if (/^__(host|secure)-/i.test(sessionCookieName) && !cookieSecure) {
    throw new ConfigError('SESSION_COOKIE_NAME', 'a __Host- or __Secure- cookie needs COOKIE_SECURE=true');
  }
  if (/^__host-/i.test(sessionCookieName) && cookieDomain !== undefined) {
    throw new ConfigError(
      'SESSION_COOKIE_NAME',
      'a __Host- cookie cannot be set for COOKIE_DOMAIN; use a __Secure- name',
    );
  }
  return { cookieSecure, cookieDomain, sessionCookieName };
}

/** A host name such as shop.example (a leading dot is dropped): no scheme, port, path or wildcard. */
function readCookieDomain(env: Env): string | undefined {
  const value = text(env, 'COOKIE_DOMAIN')?.toLowerCase().replace(/^\./, '');
  if (value === undefined) return undefined;
  const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
  if (value.length > 253 || !new RegExp(`^${label}(?:\\.${label})*$`).test(value)) {
    throw new ConfigError(
      'COOKIE_DOMAIN',
      'must be a domain of at least two labels such as shop.example, without scheme, port or path',
    );
  }
  // Browsers refuse a cookie whose Domain is a single label, so every sign-in would quietly fail.
  if (!value.includes('.')) {
    throw new ConfigError(
      'COOKIE_DOMAIN',
      `must be a domain of at least two labels such as shop.example; browsers refuse a cookie Domain of a single label like ${value} (locally: COOKIE_DOMAIN=shop.localhost, the service on auth.shop.localhost)`,
    );
  }
  // A browser keeps a Domain cookie only for a name, never for an address.
  if (/^[\d.]+$/.test(value)) throw new ConfigError('COOKIE_DOMAIN', 'must be a domain name, not an IP address');
  return value;
}
