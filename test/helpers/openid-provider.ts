import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/**
 * A real OpenID provider for the tests: `oidc-provider` (the maintained, OpenID-certified Node.js
 * provider) on a spare loopback port, with its own signing keys, its development login and consent
 * pages, and accounts the test names. Nothing of it is mocked: discovery, the JWKS, the
 * authorization and token endpoints and the ID token are the library's own.
 */

export interface ProviderAccount {
  /** The provider makes the login name the subject (its development login pages do); keep them equal. */
  sub: string;
  email?: string;
  /** Absent: the provider asserts nothing about it. */
  email_verified?: boolean;
  name?: string;
}

export interface TestClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

export interface OpenIdProviderOptions {
  clients: TestClient[];
  /** By login name, as typed on the provider's login page. */
  accounts: Record<string, ProviderAccount>;
  /** The port to listen on (a restart on the same issuer); default a spare one. */
  port?: number;
  /** Signing keys (a JWKS with private parts); default a fresh RSA key under kid "signing-key". */
  jwks?: { keys: object[] };
  /** ID tokens live this long. */
  idTokenSeconds?: number;
}

export interface TestOpenIdProvider {
  issuer: string;
  port: number;
  provider: Provider;
  /**
   * Makes the provider misbehave as a compromised or confused one would: sign ID tokens for
   * another audience. Everything else stays the library's own.
   */
  misbehave(change: { audience?: string | undefined }): void;
  close(): Promise<void>;
}

/** A JWKS of one fresh RSA signing key, as oidc-provider takes it (private parts included). */
export function signingKeys(kid = 'signing-key'): { keys: object[] } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { keys: [{ ...privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' }] };
}

export async function startOpenIdProvider(options: OpenIdProviderOptions): Promise<TestOpenIdProvider> {
  const port = options.port ?? 0;
  // The issuer must be known before listening; a spare port is found by listening on 0 first.
  const chosen = port === 0 ? await sparePort() : port;
  const issuer = `http://127.0.0.1:${chosen}`;
  const wrongAudience: { value: string | undefined } = { value: undefined };
  const provider = new Provider(issuer, {
    clients: options.clients.map((client) => ({
      ...client,
      response_types: ['code'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    jwks: options.jwks ?? signingKeys(),
    cookies: { keys: [randomUUID()] },
    async findAccount(_ctx, id) {
      const account = options.accounts[id];
      if (account === undefined) return undefined;
      return {
        accountId: id,
        async claims() {
          return { ...account };
        },
      };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The email in the ID token itself, as Google and Apple put it.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    ttl: { IdToken: options.idTokenSeconds ?? 3600 },
  });
  const originalIssue = provider.IdToken.prototype.issue;
  provider.IdToken.prototype.issue = async function issue(this: { client: { clientId: string } }, ...args) {
    if (wrongAudience.value !== undefined) {
      const audience = wrongAudience.value;
      this.client = Object.create(this.client, { clientId: { value: audience } }) as { clientId: string };
    }
    return originalIssue.apply(this, args);
  };
  // Every answer closes its connection: a provider restarted on the same port (a key rotation, a
  // forger under the same issuer) must not be called over a kept-alive socket its predecessor
  // closed, which fails the call before it reaches either.
  const server: Server = provider.listen(chosen);
  server.prependListener('request', (_request, response) => response.setHeader('connection', 'close'));
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return {
    issuer,
    port: chosen,
    provider,
    misbehave(change) {
      wrongAudience.value = change.audience;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function sparePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Where the provider sent the browser back: a URL (query mode), or a form it posts (form_post). */
export type ProviderAnswer =
  { kind: 'redirect'; url: URL } | { kind: 'form_post'; action: URL; fields: Record<string, string> };

/**
 * What a shopper's browser does at the provider: follows the authorization URL, signs in on the
 * development login page as `login`, consents, and is sent back. The provider's cookies are kept
 * in a jar of this walk's own. Returns the answer meant for the service's callback, unsent.
 */
export async function consentAt(authorizationUrl: string, login: string): Promise<ProviderAnswer> {
  const jar = new Map<string, string>();
  const cookieHeader = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const keep = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
  };
  const origin = new URL(authorizationUrl).origin;
  let url = authorizationUrl;
  let method = 'GET';
  let body: string | undefined;
  for (let step = 0; step < 20; step += 1) {
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: cookieHeader(),
        ...(body !== undefined && { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      ...(body !== undefined && { body }),
    });
    keep(response);
    const location = response.headers.get('location');
    if (location !== null) {
      const next = new URL(location, url);
      if (next.origin !== origin) return { kind: 'redirect', url: next };
      url = next.href;
      method = 'GET';
      body = undefined;
      continue;
    }
    const html = await response.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
    if (form === null) throw new Error(`the provider answered ${response.status} with no form: ${html.slice(0, 300)}`);
    const action = new URL(form[1]!.replaceAll('&amp;', '&'), url);
    const fields: Record<string, string> = {};
    for (const input of form[2]!.matchAll(/<input[^>]*>/g)) {
      const name = /name="([^"]+)"/.exec(input[0])?.[1];
      const value = /value="([^"]*)"/.exec(input[0])?.[1] ?? '';
      if (name !== undefined) fields[name] = value.replaceAll('&amp;', '&').replaceAll('&quot;', '"');
    }
    if (action.origin !== origin) return { kind: 'form_post', action, fields };
    if (fields['prompt'] === 'login' || 'login' in fields) Object.assign(fields, { login, password: 'any' });
    url = action.href;
    method = 'POST';
    body = new URLSearchParams(fields).toString();
  }
  throw new Error('the provider walk did not end');
}
