/**
 * For a shop's backend: asks the service's admin listener whether a shopper's request carries a
 * live session, and whose, and verifies the webhooks the service sends. Its own entry point (`@storefront-auth/client/backend`), so a storefront
 * bundle never ships it, and it holds a token that must never reach a browser.
 */
import type { Customer } from './api-types.js';
import { answerOf, fetchAnswer } from './answers.js';

export { StorefrontAuthError } from './answers.js';
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions } from './webhooks.js';

/** A live session: its customer, its public handle and times, and the store's status (reported, not judged). */
export interface ActiveSession {
  active: true;
  customer: Customer;
  session: { id: string; created_at: string; expires_at: string };
  store: { id: string; status: 'active' | 'paused' | 'closed' };
}

/** No live session: unknown, signed out, revoked, expired, or no session cookie in the header. */
export interface InactiveSession {
  active: false;
}

export interface IntrospectionClientOptions {
  /** The admin listener, e.g. `http://127.0.0.1:3001` (ADMIN_HOST, ADMIN_PORT); never the customer port. */
  baseUrl: string | URL;
  /** One of INTROSPECTION_TOKENS (or ADMIN_TOKENS). */
  token: string;
  /** Defaults to the global `fetch`. */
  fetch?: typeof globalThis.fetch;
}

export interface IntrospectionClient {
  /** The shopper's whole `Cookie` header (undefined or empty: inactive, without a call). */
  introspect(cookie: string | undefined): Promise<ActiveSession | InactiveSession>;
  /** The session cookie's value alone. */
  introspectSession(session: string): Promise<ActiveSession | InactiveSession>;
}

export function createIntrospectionClient(options: IntrospectionClientOptions): IntrospectionClient {
  const url = `${new URL(options.baseUrl).href.replace(/\/+$/, '')}/admin/v1/sessions/introspect`;
  const fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  async function ask(body: { cookie: string } | { session: string }): Promise<ActiveSession | InactiveSession> {
    const { response, text } = await fetchAnswer(fetch, url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${options.token}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify(body),
      redirect: 'manual',
    });
    return answerOf<ActiveSession | InactiveSession>(response, text);
  }
  return {
    introspect: async (cookie) => (cookie === undefined || cookie === '' ? { active: false } : ask({ cookie })),
    introspectSession: (session) => ask({ session }),
  };
}
