import { SignJWT, importPKCS8 } from 'jose';
import * as oidc from 'openid-client';
import type { Clock } from '../clock.js';
import type { ProviderConfig } from './configured.js';

/**
 * The relying party of every store's providers, on openid-client (an OpenID-certified library):
 * discovery, PKCE, the authorization response's checks (state, `iss` against mix-up, RFC 9207),
 * the ID token's (signature against the provider's JWKS, refreshed on an unknown key; issuer,
 * audience, expiry, nonce). Nothing here is hand-written token checking.
 */

/** How long a call to a provider may take (discovery, keys, the token exchange). */
export const providerTimeoutSeconds = 5;

/** Discovery answers and key sets are kept this long, so a provider's rotation reaches us in time. */
const metadataLifetimeMs = 60 * 60 * 1000;

/** A provider whose discovery failed is not asked again for this long. */
const failureMemoryMs = 10 * 1000;

/** What a start hands the browser's cookie, for the callback to check the answer with. */
export interface PendingSignIn {
  state: string;
  nonce: string;
  codeVerifier: string;
  redirectUri: string;
}

/** Who the provider says the shopper is, from a checked ID token. */
export interface ProviderIdentity {
  providerId: string;
  issuer: string;
  subject: string;
  /** Lowercased; null when the provider gave none. */
  email: string | null;
  /** Only an explicit `true` (or Apple's "true") counts. */
  emailVerified: boolean;
  name: string | null;
}

export type ProviderFailure = 'provider_refused' | 'provider_error';
export type FinishResult =
  { ok: true; identity: ProviderIdentity } | { ok: false; error: ProviderFailure; reason: string };

interface CachedProvider {
  updatedAt: string;
  madeAt: number;
  metadata: oidc.ServerMetadata;
  jwks?: ReturnType<typeof oidc.getJwksCache>;
}

export interface RelyingPartyOptions {
  clock: Clock;
  timeoutSeconds?: number | undefined;
  /** Providers whose discovery is kept; the least recently used goes first. */
  maxEntries?: number;
}

export class RelyingParties {
  private readonly cache = new Map<string, CachedProvider>();
  private readonly discovering = new Map<string, Promise<CachedProvider>>();
  private readonly failures = new Map<string, { updatedAt: string; until: number; error: unknown }>();
  private readonly timeoutSeconds: number;
  private readonly maxEntries: number;

  constructor(private readonly options: RelyingPartyOptions) {
    this.timeoutSeconds = options.timeoutSeconds ?? providerTimeoutSeconds;
    this.maxEntries = options.maxEntries ?? 10_000;
  }

  /** The provider's authorization URL for a new sign-in, and what the callback will check. */
  async begin(
    storeId: string,
    provider: ProviderConfig,
    redirectUri: string,
  ): Promise<{ url: URL; pending: PendingSignIn }> {
    const config = await this.configuration(storeId, provider);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const pending = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier, redirectUri };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: provider.scopes,
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
      ...(provider.responseMode === 'form_post' && { response_mode: 'form_post' }),
    });
    return { url, pending };
  }

  /**
   * Checks the provider's answer (the callback's parameters) against the pending sign-in and
   * exchanges the code: the identity from a checked ID token, or why not. `provider_refused` is
   * the provider's own refusal (the shopper declined, say); anything else is `provider_error`,
   * with the cause for the audit trail only.
   */
  async finish(
    storeId: string,
    provider: ProviderConfig,
    pending: PendingSignIn,
    parameters: URLSearchParams,
  ): Promise<FinishResult> {
    try {
      const config = await this.configuration(storeId, provider);
      const answer = new URL(pending.redirectUri);
      for (const name of ['code', 'state', 'iss', 'error', 'error_description', 'session_state']) {
        const value = parameters.get(name);
        if (value !== null) answer.searchParams.set(name, value);
      }
      const tokens = await oidc.authorizationCodeGrant(config, answer, {
        pkceCodeVerifier: pending.codeVerifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      this.keepKeys(storeId, provider, config);
      const claims = tokens.claims();
      if (claims === undefined) return { ok: false, error: 'provider_error', reason: 'no_id_token' };
      return { ok: true, identity: identityOf(provider, claims, parameters.get('user')) };
    } catch (error) {
      return failureOf(error);
    }
  }

  private key(storeId: string, provider: ProviderConfig): string {
    return `${storeId}\u0000${provider.id}`;
  }

  /**
   * A configuration for one call: the provider's discovered metadata and keys come from the cache
   * (discovered again once stale or changed); the clock is the service's (tests move it), and
   * Apple's client secret is made afresh.
   */
  private async configuration(storeId: string, provider: ProviderConfig): Promise<oidc.Configuration> {
    const key = this.key(storeId, provider);
    let cached = this.cache.get(key);
    const now = Date.now();
    if (cached === undefined || cached.updatedAt !== provider.updatedAt || now - cached.madeAt > metadataLifetimeMs) {
      cached = await this.discover(key, provider);
    }
    // Least recently used goes first: a hit moves to the end.
    this.cache.delete(key);
    this.cache.set(key, cached);
    if (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value!);

    const skewSeconds = Math.round((this.options.clock.now().getTime() - now) / 1000);
    const config = new oidc.Configuration(
      cached.metadata,
      provider.clientId,
      { [oidc.clockSkew]: skewSeconds },
      oidc.ClientSecretPost(await clientSecretOf(provider, this.options.clock)),
    );
    config.timeout = this.timeoutSeconds;
    if (insecure(provider)) oidc.allowInsecureRequests(config);
    // openid-client trusts the token endpoint's TLS and leaves the ID token's signature unchecked
    // unless told otherwise: checked here against the provider's JWKS, which the cache keeps.
    oidc.enableNonRepudiationChecks(config);
    if (cached.jwks !== undefined) oidc.setJwksCache(config, cached.jwks);
    return config;
  }

  /**
   * The provider's metadata, discovered once however many requests ask at the same time. A
   * failure is remembered for a few seconds: while a provider is down, starts come back at once
   * instead of each holding a connection for the whole timeout.
   */
  private discover(key: string, provider: ProviderConfig): Promise<CachedProvider> {
    const failed = this.failures.get(key);
    if (failed !== undefined && failed.updatedAt === provider.updatedAt && Date.now() < failed.until)
      return Promise.reject(failed.error);
    const pending = this.discovering.get(key);
    if (pending !== undefined) return pending;
    const discovery = oidc
      .discovery(new URL(provider.issuer), provider.clientId, undefined, oidc.None(), {
        timeout: this.timeoutSeconds,
        ...(insecure(provider) && { execute: [oidc.allowInsecureRequests] }),
      })
      .then(
        (discovered) => {
          this.failures.delete(key);
          return { updatedAt: provider.updatedAt, madeAt: Date.now(), metadata: discovered.serverMetadata() };
        },
        (error: unknown) => {
          this.failures.set(key, { updatedAt: provider.updatedAt, until: Date.now() + failureMemoryMs, error });
          if (this.failures.size > this.maxEntries) this.failures.delete(this.failures.keys().next().value!);
          throw error;
        },
      )
      .finally(() => this.discovering.delete(key));
    this.discovering.set(key, discovery);
    return discovery;
  }

  /** Keeps the key set a call fetched, so the next call does not fetch it again. */
  private keepKeys(storeId: string, provider: ProviderConfig, config: oidc.Configuration): void {
    const cached = this.cache.get(this.key(storeId, provider));
    const jwks = oidc.getJwksCache(config);
    if (cached !== undefined && jwks !== undefined) cached.jwks = jwks;
  }
}

/** http:// issuers are only ever loopback ones (see issuerProblem), for local testing. */
function insecure(provider: ProviderConfig): boolean {
  return provider.issuer.startsWith('http://');
}

/** Apple's client secret: a JWT of the team, signed with its private key, good for an hour. */
export async function clientSecretOf(provider: ProviderConfig, clock: Clock): Promise<string> {
  const { secret } = provider;
  if (secret.kind === 'client_secret') return secret.value;
  const now = Math.floor(clock.now().getTime() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: secret.keyId })
    .setIssuer(secret.teamId)
    .setSubject(provider.clientId)
    .setAudience(provider.issuer)
    .setIssuedAt(now)
    .setExpirationTime(now + 60 * 60)
    .sign(await importPKCS8(secret.privateKey, 'ES256'));
}

/**
 * Printable ASCII, nothing else: the address must already be in the form the store keeps, up to
 * letter case. Case folding or trimming anything wider could make another address of it (the
 * Kelvin sign U+212A lowercases to "k"; a no-break space trims away).
 */
const plainAddress = /^[\x21-\x7e]+$/;

function identityOf(provider: ProviderConfig, claims: oidc.IDToken, appleUser: string | null): ProviderIdentity {
  const given = claims['email'];
  const email = typeof given === 'string' && plainAddress.test(given) ? given.toLowerCase() : null;
  const verified = claims['email_verified'];
  return {
    providerId: provider.id,
    issuer: claims.iss,
    subject: claims.sub,
    email,
    emailVerified: verified === true || verified === 'true',
    name: nameOf(claims) ?? (provider.responseMode === 'form_post' ? appleName(appleUser) : null),
  };
}

function nameOf(claims: oidc.IDToken): string | null {
  const name = claims['name'];
  if (typeof name === 'string' && name.trim() !== '') return name.trim();
  const parts = [claims['given_name'], claims['family_name']].filter((part) => typeof part === 'string' && part !== '');
  return parts.length > 0 ? parts.join(' ') : null;
}

/** Apple sends the name once, on the first sign-in, as JSON in the form's `user` field. */
function appleName(user: string | null): string | null {
  if (user === null) return null;
  try {
    const parsed = JSON.parse(user) as { name?: { firstName?: unknown; lastName?: unknown } };
    const parts = [parsed.name?.firstName, parsed.name?.lastName].filter(
      (part): part is string => typeof part === 'string' && part.trim() !== '',
    );
    return parts.length > 0 ? parts.join(' ') : null;
  } catch {
    return null;
  }
}

/** What went wrong, for the audit trail: the library's code and the claim or parameter at fault. */
function failureOf(error: unknown): { ok: false; error: ProviderFailure; reason: string } {
  if (error instanceof oidc.AuthorizationResponseError) {
    return { ok: false, error: 'provider_refused', reason: `provider:${errorCode(error.error)}` };
  }
  if (error instanceof oidc.ResponseBodyError) {
    return { ok: false, error: 'provider_error', reason: `token_endpoint:${errorCode(error.error)}` };
  }
  const coded = error as { code?: unknown; name?: unknown };
  const detail = faultOf(error);
  const code = typeof coded.code === 'string' ? coded.code : typeof coded.name === 'string' ? coded.name : 'unknown';
  return { ok: false, error: 'provider_error', reason: typeof detail === 'string' ? `${code}:${detail}` : code };
}

/** An OAuth error code as the audit trail keeps it: whoever sent the answer chose it, so short and plain. */
function errorCode(code: string): string {
  return /^[a-z0-9_.-]{1,64}$/i.test(code) ? code : 'other';
}

/**
 * The claim or parameter a check names, in the error or a cause of it: openid-client wraps the
 * checking library's error, whose own cause names it.
 */
function faultOf(error: unknown): string | undefined {
  let current = error as { cause?: unknown; claim?: unknown; parameter?: unknown } | undefined;
  for (let depth = 0; depth < 3 && typeof current === 'object' && current !== null; depth += 1) {
    const detail = current.claim ?? current.parameter;
    if (typeof detail === 'string') return detail;
    current = current.cause as typeof current;
  }
  return undefined;
}
