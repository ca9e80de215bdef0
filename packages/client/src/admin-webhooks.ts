/**
 * A store's webhook endpoints through the admin listener: where its customers' events go, signed as
 * Standard Webhooks sign (verify them with `verifyWebhook` of `@storefront-auth/client/backend`).
 * Part of the admin client (`@storefront-auth/client/admin`), which re-exports these types.
 */

export interface WebhookEndpoint {
  id: string;
  url: string;
  /** Event types of the catalogue, or `*` for every type but the loud `customer.signed_in`. */
  events: string[];
  description: string;
  enabled: boolean;
  /** An ISO 8601 date and time (UTC). */
  disabled_at: string | null;
  /** Why it stopped: it answered `410 Gone`, no delivery succeeded for 5 days, or the platform turned it off. */
  disabled_reason: string | null;
  /** When its current run of failed attempts began; null once an attempt succeeds. */
  failing_since: string | null;
  /** After a rotation: until when the previous secret still signs beside the new one. */
  previous_secret_until: string | null;
  created_at: string;
  updated_at: string;
}

/** An endpoint with its signing secret (`whsec_…`): answered when it is added or rotated, never again. */
export interface CreatedWebhook extends WebhookEndpoint {
  secret: string;
}

export interface NewWebhook {
  /**
   * `https://` (`http://` too outside production); private, loopback and link-local addresses are
   * refused unless the service runs with WEBHOOK_ALLOW_PRIVATE=true.
   */
  url: string;
  events: string[];
  description?: string;
}

/** A merge patch: fields left out keep their value. */
export interface WebhookPatch {
  url?: string;
  events?: string[];
  description?: string;
  /** `true` turns a disabled endpoint back on (what waited for it is sent); `false` holds its deliveries. */
  enabled?: boolean;
}

export interface WebhookDeliveryAttempt {
  at: string;
  /** The answer's status; null when none came. */
  status: number | null;
  /** Why no answer came (refused, timed out, a private address). */
  error: string | null;
  duration_ms: number;
}

export interface WebhookDelivery {
  /** For `retryWebhookDelivery`. */
  id: string;
  /** The `webhook-id` of every attempt. */
  event_id: string;
  type: string;
  status: 'pending' | 'sent' | 'failed';
  /** The last 20 attempts, oldest first. */
  attempts: WebhookDeliveryAttempt[];
  next_attempt_at: string | null;
  created_at: string;
  delivered_at: string | null;
}

export interface WebhookDeliveryList {
  /** Newest first. */
  deliveries: WebhookDelivery[];
  /** Pass as `cursor` for the next page; null on the last. */
  next_cursor: string | null;
}

export interface WebhookAdmin {
  /** Adds an endpoint (20 a store at most: `webhook_limit`); keep the answer's `secret`, it is not shown again. */
  addWebhook(store: string, webhook: NewWebhook): Promise<CreatedWebhook>;
  /** Oldest first, without their secrets. */
  listWebhooks(store: string): Promise<WebhookEndpoint[]>;
  getWebhook(store: string, id: string): Promise<WebhookEndpoint>;
  changeWebhook(store: string, id: string, patch: WebhookPatch): Promise<WebhookEndpoint>;
  /** Removes the endpoint and its deliveries, sent or not. */
  removeWebhook(store: string, id: string): Promise<void>;
  /** A new secret; for 24 hours every delivery is signed with the previous one too. */
  rotateWebhookSecret(store: string, id: string): Promise<CreatedWebhook>;
  /** Queues a `webhook.test` to this endpoint only; a disabled endpoint is `not_found`. */
  testWebhook(store: string, id: string): Promise<void>;
  /** One page of the endpoint's deliveries, newest first; pass the answer's `next_cursor` for the next. */
  listWebhookDeliveries(
    store: string,
    id: string,
    options?: { cursor?: string; limit?: number },
  ): Promise<WebhookDeliveryList>;
  /** Sends a delivery again now, under the same `webhook-id`; `delivery_erased` once its customer was deleted. */
  retryWebhookDelivery(store: string, id: string, deliveryId: string): Promise<void>;
}

/** One admin call: method, path under `/admin/v1`, and body. */
type Call = <T>(method: string, path: string, body?: unknown) => Promise<T>;

export function webhookAdmin(call: Call): WebhookAdmin {
  const part = encodeURIComponent;
  const endpoint = (store: string, id: string) => `/stores/${part(store)}/webhooks/${part(id)}`;
  return {
    addWebhook: (store, webhook) => call('POST', `/stores/${part(store)}/webhooks`, webhook),
    listWebhooks: async (store) =>
      (await call<{ webhooks: WebhookEndpoint[] }>('GET', `/stores/${part(store)}/webhooks`)).webhooks,
    getWebhook: (store, id) => call('GET', endpoint(store, id)),
    changeWebhook: (store, id, patch) => call('PATCH', endpoint(store, id), patch),
    removeWebhook: async (store, id) => {
      await call('DELETE', endpoint(store, id));
    },
    rotateWebhookSecret: (store, id) => call('POST', `${endpoint(store, id)}/rotate-secret`),
    testWebhook: async (store, id) => {
      await call('POST', `${endpoint(store, id)}/test`);
    },
    listWebhookDeliveries(store, id, { cursor, limit } = {}) {
      const query = new URLSearchParams();
      if (cursor !== undefined) query.set('cursor', cursor);
      if (limit !== undefined) query.set('limit', String(limit));
      const search = query.toString();
      return call('GET', `${endpoint(store, id)}/deliveries${search === '' ? '' : `?${search}`}`);
    },
    retryWebhookDelivery: async (store, id, deliveryId) => {
      await call('POST', `${endpoint(store, id)}/deliveries/${part(deliveryId)}/retry`);
    },
  };
}
