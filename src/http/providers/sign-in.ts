import { requestedLanguage } from '../../i18n/negotiate.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  answersStart,
  finishProviderCallback,
  type ProviderCallbackFailure,
} from '../../auth/flows/provider-sign-in.js';
import { acceptedKeys } from '../../keys.js';
import { listProviders, loadProvider } from '../../providers/configured.js';
import { storeOrigins, type StoreContext } from '../../store/store.js';
import { isGenuineCsrfToken, ownOrigin, storeCsrfKey } from '../core/csrf.js';
import { declareRoute } from '../core/declare.js';
import type { Edge } from '../core/edge.js';
import { findLiveSession } from '../../auth/tables/sessions.js';
import { routeKit, storeDbOf, type KitSource } from '../core/kit.js';
import { ProblemError } from '../core/problems.js';
import { providerCallbackPath, providerCookies, providerStartLifetimeSeconds } from './cookie.js';
import { ProviderCallbackParameters, ProviderList, ProviderParams, ProviderStartQuery, Redirect } from './schemas.js';
import { limits } from '../core/rate-limit.js';
import { sessionCookieOf } from '../core/session-cookie.js';

/**
 * Signing in with a store's OpenID Connect providers: the list for the buttons, the start (a
 * redirect to the provider, bound to this browser by a sealed cookie) and the way back. Every
 * failure after the start goes back to `return_to` with `?error=<code>`, never a page of the
 * provider's text.
 */

/** What the way back can say went wrong, in `?error=`. */
export type ProviderErrorCode =
  | 'provider_refused'
  | 'provider_error'
  | 'email_unverified'
  | 'account_blocked'
  | 'store_unavailable'
  | 'identity_unverified'
  | 'provider_in_use'
  | 'unauthenticated'
  | 'reauthentication_required'
  | 'csrf_token_mismatch';

/** Linking a provider asks for a sign-in this recent: what a password change asks of the password. */
export const linkSignInWindowSeconds = 15 * 60;

const listRoute = declareRoute({
  operationId: 'listProviders',
  summary: "The store's sign-in providers",
  description:
    'The providers this store offers ("Continue with …" buttons), by id and display name. Empty when the store has none, and on a store whose customers sign in with a phone number.',
  answer: ProviderList,
});

const startRoute = declareRoute({
  operationId: 'startProviderSignIn',
  summary: 'Sign in with a provider (navigate here)',
  description:
    "A browser navigation, not a fetch: redirects (302) to the provider, with a sealed, HttpOnly cookie binding the state, nonce and PKCE verifier to this browser (single use, 10 minutes). `return_to` is where the browser comes back to, signed in or with `?error=`; it must be a path of this host or a URL on one of the store's origins, else `/` is used. With `link=1` the provider's account is linked to the signed-in customer instead, and `xsrf_token` must carry the session's XSRF-TOKEN (a navigation sends no header); the browser goes straight back with `?error=unauthenticated` without a session, `csrf_token_mismatch` without the token, `identity_unverified` while the account's email is unproven, and `reauthentication_required` when the session was opened more than 15 minutes ago (sign in again to link). When the provider cannot be reached within 5 seconds the browser goes straight back with `?error=provider_error`. 404 not_found for a provider the store does not have.",
  params: ProviderParams,
  query: ProviderStartQuery,
  answer: Redirect,
  status: 302,
  problems: ['not_found'],
});

const callbackDescription =
  "The provider's way back (register `https://<store host>/api/v1/customer/auth/providers/{id}/callback` at the provider). Checks the state against this browser's cookie (spent once an answer of that state came; an answer of another state is refused and spends nothing), the issuer (with the `iss` parameter, against mix-up), and the ID token's signature, audience, expiry and nonce; then signs in (a session cookie and a fresh XSRF-TOKEN, as a login) or links, and redirects (303) to `return_to`. Matching: a linked account signs in; else a verified email no account holds makes a new account; a verified email of a proven account is linked (the identity gets a notice); a verified email of an unproven account is its first proof of control (what was set up before it ends, the password too); an email the provider does not assert verified creates and links nothing. Failures come back as `?error=`: provider_refused (the provider said no, the shopper declined), provider_error (anything else: a replayed or foreign state, a bad token, a provider too slow), email_unverified (also an email that is not plain ASCII), account_blocked (the account is blocked; nothing was linked), store_unavailable, identity_unverified and provider_in_use (linking).";

const callbackRoute = declareRoute({
  operationId: 'providerCallback',
  summary: "The provider's way back",
  description: callbackDescription,
  params: ProviderParams,
  query: ProviderCallbackParameters,
  answer: Redirect,
  status: 303,
  providerCallback: true,
});

const formCallbackRoute = declareRoute({
  operationId: 'providerFormCallback',
  summary: "The provider's way back, as a form post (Apple)",
  description: `${callbackDescription} A form post that arrives without the cookie (a cross-site post does not carry a SameSite=Lax cookie) leaves its answer in a sealed cookie for a minute and is sent once more to the same path as a GET (303), which a top-level navigation carries both cookies on; the code never travels in a URL.`,
  params: ProviderParams,
  answer: Redirect,
  status: 303,
  providerCallback: true,
});

/** The parameters the way back reads, whether they came in the query or in a form post. */
const answerParameters = ['code', 'state', 'iss', 'error', 'error_description', 'user'] as const;

function answerOf(given: Record<string, unknown>): URLSearchParams {
  const answer = new URLSearchParams();
  for (const name of answerParameters) {
    const value = given[name];
    if (typeof value === 'string') answer.set(name, value);
  }
  return answer;
}

/** `return_to` when it stays on this host or the store's origins; `/` otherwise. */
function safeReturnTo(request: FastifyRequest, store: StoreContext, trusted: readonly string[], raw?: string): string {
  if (raw === undefined || raw === '') return '/';
  try {
    if (raw.startsWith('/')) {
      const url = new URL(raw, 'http://path.invalid');
      const path = `${url.pathname}${url.search}${url.hash}`;
      // Judged after the parser has resolved it: `/.//evil.example` becomes `//evil.example`, which
      // a browser reads as another host.
      return url.origin === 'http://path.invalid' && !/^\/[/\\]/.test(path) ? path : '/';
    }
    const url = new URL(raw);
    const origins = [ownOrigin(request), ...storeOrigins(store), ...trusted];
    return origins.includes(url.origin) ? url.href : '/';
  } catch {
    return '/';
  }
}

/** `return_to` with one more query parameter: `error`, or `two_factor` when a second step waits. */
function withParameter(returnTo: string, name: 'error' | 'two_factor', value: string): string {
  const relative = returnTo.startsWith('/');
  const url = new URL(returnTo, 'http://path.invalid');
  url.searchParams.set(name, value);
  return relative ? `${url.pathname}${url.search}${url.hash}` : url.href;
}

function withError(returnTo: string, error: ProviderErrorCode): string {
  return withParameter(returnTo, 'error', error);
}

/** The way back's failures, each as its `?error=` (the audit trail keeps the flow's own reason). */
const callbackErrors: Record<ProviderCallbackFailure, ProviderErrorCode> = {
  no_start: 'provider_error',
  state_mismatch: 'provider_error',
  state_spent: 'provider_error',
  provider_removed: 'provider_error',
  provider_refused: 'provider_refused',
  provider_error: 'provider_error',
  session_changed: 'provider_error',
  identity_unverified: 'identity_unverified',
  linked_elsewhere: 'provider_in_use',
  gone: 'provider_error',
  email_unverified: 'email_unverified',
  blocked: 'account_blocked',
};

type Deps = KitSource & Pick<Edge, 'providers'>;

export function providerSignInRoutes(services: Deps): FastifyPluginAsyncTypebox {
  const { config, clock, keys, metrics, providers } = services;
  const { depsOf, audit, limit, signInSucceeded } = routeKit(services);
  const cookies = providerCookies({
    key: keys.providerCookies,
    keys: acceptedKeys(keys, 'providerCookies'),
    secure: config.cookieSecure,
  });

  /** The store's provider of this path, or 404 as if there were none: phone stores have none. */
  async function providerOf(request: FastifyRequest, id: string) {
    const provider =
      request.store.identityMode === 'email' ? await loadProvider(storeDbOf(services, request), keys, id) : null;
    if (provider === null) throw new ProblemError('not_found');
    return provider;
  }

  return async (app) => {
    // The provider's form post (Apple) is the one body this service reads that is not JSON.
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });

    app.get('/providers', listRoute, async (request) => {
      if (request.store.identityMode !== 'email') return { providers: [] };
      const all = await listProviders(storeDbOf(services, request));
      return { providers: all.map(({ id, name }) => ({ id, name })) };
    });

    /**
     * Who a link is for: the signed-in customer, proven (an unproven account takes no lasting way
     * in), who signed in within the last 15 minutes (a stolen session alone cannot plant one), or
     * why not, for the way back's `?error=`.
     */
    async function linkRefusal(
      request: FastifyRequest,
      token: string | undefined,
    ): Promise<ProviderErrorCode | { customerId: string }> {
      const sessionId = sessionCookieOf(request, config);
      const session =
        sessionId === undefined ? null : await findLiveSession(storeDbOf(services, request), clock, sessionId);
      if (session === null) return 'unauthenticated';
      // The start is a GET, which the session cookie (SameSite=Lax) follows from any site: without
      // the session's CSRF token, another site could link whatever provider account the browser
      // is signed in to at the provider.
      const csrfKeys = acceptedKeys(keys, 'csrf').map((key) => storeCsrfKey(key, request.store.id));
      if (token === undefined || !isGenuineCsrfToken(csrfKeys, token, sessionId)) return 'csrf_token_mismatch';
      if (session.customer.verified_at === null) return 'identity_unverified';
      if (clock.now().getTime() - session.createdAt.getTime() > linkSignInWindowSeconds * 1000)
        return 'reauthentication_required';
      return { customerId: session.customer.id };
    }

    app.get('/providers/:id/start', startRoute, async (request, reply) => {
      await limit(request, [[limits.providerStarts, request.clientKey]]);
      const { store } = request;
      const provider = await providerOf(request, request.params.id);
      const returnTo = safeReturnTo(request, store, config.corsAllowedOrigins, request.query.return_to);
      let linkTo: string | null = null;
      if (request.query.link !== undefined) {
        const refused = await linkRefusal(request, request.query.xsrf_token);
        if (typeof refused === 'string') return reply.redirect(withError(returnTo, refused), 302);
        linkTo = refused.customerId;
      }
      const redirectUri = `${request.protocol}://${request.host}${providerCallbackPath(provider.id)}`;
      let begun;
      try {
        begun = await providers.begin(store.id, provider, redirectUri);
      } catch (error) {
        request.log.warn({ err: error, provider: provider.id }, 'the sign-in provider could not be reached');
        return reply.redirect(withError(returnTo, 'provider_error'), 302);
      }
      const expiresAt = clock.now().getTime() + providerStartLifetimeSeconds * 1000;
      const start = { ...begun.pending, storeId: store.id, providerId: provider.id, returnTo, linkTo, expiresAt };
      cookies.setStart(reply, start);
      return reply.redirect(begun.url.href, 302);
    });

    /** The way back, with the provider's answer however it came: the flow's answer as cookies and a redirect. */
    async function callback(request: FastifyRequest, reply: FastifyReply, id: string, answer: URLSearchParams) {
      const { store } = request;
      const start = cookies.startOf(request, { storeId: store.id, providerId: id, now: clock.now() });
      // An answer of another state (a forced navigation, say) leaves the sign-in under way alone.
      if (answersStart(start, answer)) cookies.clearStart(reply, id);
      const returnTo = start?.returnTo ?? '/';
      if (store.status !== 'active') return reply.redirect(withError(returnTo, 'store_unavailable'), 303);
      await limit(request, [[limits.loginAttempts, request.clientKey]], () =>
        metrics.logins.inc({ outcome: 'throttled', store: request.storeLabel }),
      );
      const result = await finishProviderCallback(
        { ...depsOf(request), providers },
        {
          store,
          providerId: id,
          start,
          answer,
          client: { userAgent: request.headers['user-agent'], address: request.ip },
          sessionId: sessionCookieOf(request, config),
          locale: requestedLanguage(request.headers['accept-language'], store.languages),
        },
      );
      if (!result.ok) {
        const { error, reason, customerId } = result;
        audit(request, 'login.failed', customerId, { method: 'provider', provider: id, reason });
        metrics.logins.inc({ outcome: reason === 'blocked' ? 'blocked' : 'failure', store: request.storeLabel });
        return reply.redirect(withError(returnTo, callbackErrors[error]), 303);
      }
      if (result.value.kind === 'linked') {
        const { customerId, providerId } = result.value;
        audit(request, 'provider.linked', customerId, { provider: providerId, match: 'signed_in' });
        return reply.redirect(returnTo, 303);
      }
      const { match, signedIn } = result.value;
      const customerId = 'secondStep' in signedIn ? signedIn.customerId : signedIn.customer.id;
      if (match === 'created') audit(request, 'customer.registered', customerId, { method: 'provider', provider: id });
      if (match !== 'linked') audit(request, 'provider.linked', customerId, { provider: id, match });
      const outcome = signInSucceeded(request, reply, signedIn, 'provider', undefined, { provider: id, match });
      // The page finishes a sign-in that waits for its second step (`two-factor/verify`).
      const secondStep = outcome.auth_type === 'two_factor_required';
      return reply.redirect(secondStep ? withParameter(returnTo, 'two_factor', 'required') : returnTo, 303);
    }

    app.get('/providers/:id/callback', callbackRoute, async (request, reply) => {
      const { id } = request.params;
      // A form post's answer, kept for this GET (below); else the query's.
      const kept = cookies.takeAnswer(request, reply, id);
      return callback(request, reply, id, kept ?? answerOf(request.query as Record<string, unknown>));
    });

    app.post('/providers/:id/callback', formCallbackRoute, async (request, reply) => {
      const { id } = request.params;
      const answer = answerOf((request.body ?? {}) as Record<string, unknown>);
      // A cross-site form post does not carry the SameSite=Lax start cookie; a top-level GET does.
      // The answer waits in a cookie of its own for that GET, out of the URL and the logs.
      if (!cookies.hasStart(request)) {
        cookies.setAnswer(reply, id, answer);
        return reply.redirect(providerCallbackPath(id), 303);
      }
      return callback(request, reply, id, answer);
    });
  };
}
