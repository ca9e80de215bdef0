import assert from 'node:assert/strict';
import { checkProvider, saveProvider, type ProviderInput } from '../../src/providers/configured.js';
import { firstStoreId } from '../../src/store/store.js';
import { forStore } from '../../src/storage/database.js';
import { auth, registeredCustomer, toReply, useHarness, type Reply, type TestApp } from './harness.js';
import { perDescribe } from './per-describe.js';
import { verifyIdentity } from './passkeys.js';
import {
  consentAt,
  startOpenIdProvider,
  type OpenIdProviderOptions,
  type ProviderAccount,
  type ProviderAnswer,
  type TestOpenIdProvider,
} from './openid-provider.js';

/**
 * Signing in with an OpenID provider as a browser does it, against the real provider of
 * openid-provider.ts: the store's provider saved as an operator saves it, the start, the walk
 * through the provider's pages, and the way back with the start's cookie.
 */

export const shopHost = 'shop.example';
export const startCookieName = 'storefront_provider_start';
export const sessionCookieName = 'storefront_session';
export const clientId = 'shop';
export const clientSecret = 'shop-secret';

/** The provider's accounts most tests sign in as, by login name (which is also the subject). */
export const accounts: Record<string, ProviderAccount> = {
  ada: { sub: 'ada', email: 'ada@example.com', email_verified: true, name: 'Ada Provider' },
  grace: { sub: 'grace', email: 'Grace@Example.com', email_verified: true, name: 'Grace Hopper' },
  mallory: { sub: 'mallory', email: 'ada@example.com', email_verified: false, name: 'Mallory' },
  silent: { sub: 'silent', email: 'ada@example.com', name: 'No Assertion' },
  // Verified addresses that only case folding or trimming would turn into kim@example.com.
  kelvin: { sub: 'kelvin', email: '\u212Aim@example.com', email_verified: true, name: 'Kelvin Sign' },
  spaced: { sub: 'spaced', email: 'kim@example.com\u00A0', email_verified: true, name: 'No-Break Space' },
};

/** The redirect URI the service sends for a provider of a store on `host`. */
export function callbackUri(id: string, host = shopHost): string {
  return `http://${host}${auth}/providers/${id}/callback`;
}

/** A real provider whose one client (`shop`) may come back to each provider id on each host. */
export async function startProvider(
  options: Partial<OpenIdProviderOptions> & { ids?: string[]; hosts?: string[] } = {},
): Promise<TestOpenIdProvider> {
  const { ids = ['google', 'apple'], hosts = [shopHost], ...rest } = options;
  return startOpenIdProvider({
    accounts,
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: ids.flatMap((id) => hosts.map((host) => callbackUri(id, host))),
      },
    ],
    ...rest,
  });
}

/** Saves a provider in the store as the admin API would (the fields must pass its checks). */
export async function addTestProvider(
  t: TestApp,
  op: Pick<TestOpenIdProvider, 'issuer'>,
  fields: ProviderInput = {},
  storeId = firstStoreId,
): Promise<void> {
  const checked = checkProvider({
    id: 'google',
    preset: 'google',
    issuer: op.issuer,
    client_id: clientId,
    client_secret: clientSecret,
    ...fields,
  });
  assert.ok(checked.ok, JSON.stringify(checked));
  await saveProvider(forStore(t.db, storeId), t.clock, t.services.keys, checked.provider);
}

export function cookieOf(reply: Reply, name: string): string | undefined {
  return reply.cookies.find((cookie) => cookie.name === name)?.value;
}

/** A Cookie header from name/value pairs, leaving out those not set. */
export function cookieHeader(values: Record<string, string | undefined>): Record<string, string> {
  const pairs = Object.entries(values).filter(([, value]) => value !== undefined);
  return pairs.length === 0 ? {} : { cookie: pairs.map(([name, value]) => `${name}=${value}`).join('; ') };
}

export interface StartOptions {
  host?: string;
  returnTo?: string;
  link?: boolean;
  /** The browser's session cookie, for a link. */
  session?: string | undefined;
  /**
   * A link's CSRF token; by default the one the CSRF cookie route hands this session, as the
   * page reads it. null: none.
   */
  xsrf?: string | null;
}

/** The XSRF-TOKEN the CSRF cookie route gives the browser's session, as a storefront reads it. */
async function csrfTokenOf(t: TestApp, options: StartOptions): Promise<string> {
  const reply = await t.get('/api/v1/csrf-cookie', {
    host: options.host ?? shopHost,
    ...cookieHeader({ [sessionCookieName]: options.session }),
  });
  return String(reply.headers['x-xsrf-token']);
}

/** The start as a browser navigates to it: the answer, where it sends the browser, and the cookie. */
export async function startAt(t: TestApp, id: string, options: StartOptions = {}) {
  const query = new URLSearchParams();
  if (options.returnTo !== undefined) query.set('return_to', options.returnTo);
  if (options.link === true) {
    query.set('link', '1');
    const token = options.xsrf === undefined ? await csrfTokenOf(t, options) : options.xsrf;
    if (token !== null) query.set('xsrf_token', token);
  }
  const search = query.size === 0 ? '' : `?${query}`;
  const reply = await t.get(`${auth}/providers/${id}/start${search}`, {
    host: options.host ?? shopHost,
    ...cookieHeader({ [sessionCookieName]: options.session }),
  });
  return { reply, location: String(reply.headers.location ?? ''), cookie: cookieOf(reply, startCookieName) };
}

/** Where the provider's answer is to be sent: the callback path with its query. */
export function answerPath(answer: ProviderAnswer): string {
  assert.equal(answer.kind, 'redirect', 'a query-mode answer');
  return `${answer.url.pathname}${answer.url.search}`;
}

/** The browser coming back: a GET of the answer's URL, or the provider's form posted; with the cookies given. */
export async function comeBack(
  t: TestApp,
  answer: ProviderAnswer,
  cookies: Record<string, string | undefined>,
  host = shopHost,
): Promise<Reply> {
  if (answer.kind === 'redirect') return t.get(answerPath(answer), { host, ...cookieHeader(cookies) });
  return toReply(
    await t.app.inject({
      method: 'POST',
      url: `${answer.action.pathname}${answer.action.search}`,
      headers: { host, 'content-type': 'application/x-www-form-urlencoded', ...cookieHeader(cookies) },
      payload: new URLSearchParams(answer.fields).toString(),
    }),
  );
}

/**
 * The whole walk: start, sign in at the provider as `login`, come back with the start's cookie.
 * The callback's answer, with the session cookie it set (if any).
 */
export async function signInWith(t: TestApp, id: string, login: string, options: StartOptions = {}) {
  const start = await startAt(t, id, options);
  assert.equal(start.reply.status, 302, JSON.stringify(start.reply.body));
  assert.ok(start.cookie, 'the start sets its cookie');
  const answer = await consentAt(start.location, login);
  const reply = await comeBack(
    t,
    answer,
    { [startCookieName]: start.cookie, [sessionCookieName]: options.session },
    options.host,
  );
  return {
    start,
    answer,
    reply,
    session: cookieOf(reply, sessionCookieName),
    location: String(reply.headers.location),
  };
}

/** A walk that must end signed in: the session cookie and the customer it opens. */
export async function signedInWith(t: TestApp, id: string, login: string, options: StartOptions = {}) {
  const walk = await signInWith(t, id, login, options);
  assert.equal(walk.reply.status, 303, JSON.stringify(walk.reply.body));
  assert.ok(walk.session, `signed in, not sent to ${walk.location}`);
  const session = await t.get(`${auth}/session`, {
    host: options.host ?? shopHost,
    ...cookieHeader({ [sessionCookieName]: walk.session }),
  });
  assert.equal(session.status, 200, JSON.stringify(session.body));
  return { ...walk, session: walk.session, customer: session.body.customer as { id: string; name: string } };
}

/** The provider links in the database, oldest first. */
export async function linkRows(t: TestApp) {
  return t.db.query<{
    store_id: string;
    customer_id: string;
    provider_id: string;
    subject: string;
    email: string | null;
  }>(
    'SELECT store_id, customer_id::text AS customer_id, provider_id, subject, email FROM provider_links ORDER BY linked_at, subject',
  );
}

/** The session cookie on the shop's host. */
export function withSession(session: string): Record<string, string> {
  return { host: shopHost, ...cookieHeader({ [sessionCookieName]: session }) };
}

export function login(t: TestApp, identity: string, password: string): Promise<Reply> {
  return t.post(`${auth}/login`, { identity, password }, { host: shopHost });
}

export async function customerRow(t: TestApp, id: string) {
  const [row] = await t.db.query<{ name: string; password_hash: string | null; identity_value: string }>(
    'SELECT name, password_hash, identity_value FROM customers WHERE id = $1',
    [id],
  );
  assert.ok(row);
  return row;
}

/** A registered, proven customer signed in with the password on the shop's host. */
export async function provenAndSignedIn(t: TestApp, email: string) {
  const customer = await registeredCustomer(t, { email });
  await verifyIdentity(t, customer.identity);
  const reply = await login(t, customer.identity, customer.password);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const session = cookieOf(reply, sessionCookieName);
  assert.ok(session);
  return { ...customer, session };
}

/**
 * A describe's provider and service: one real provider for the whole describe, a fresh service per
 * test (its clock at real time, as the provider signs), and `setup` adding the providers it needs.
 */
export function useProviderSuite<T>(
  setup: (t: TestApp, op: TestOpenIdProvider) => Promise<T>,
  options: Parameters<typeof startProvider>[0] = {},
) {
  const harness = useHarness();
  const op = perDescribe(
    () => startProvider(options),
    (provider) => provider.close(),
    'the provider',
  );
  return {
    op,
    async begin(): Promise<{ t: TestApp } & T> {
      const t = await harness.start({ clockAt: Date.now() });
      return { t, ...(await setup(t, op())) };
    },
  };
}
