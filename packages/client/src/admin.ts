/**
 * For a store platform's backend: creates, changes and deletes the deployment's stores, their
 * hosts, sign-in providers and webhook endpoints, and finds and signs out their customers, through
 * the service's admin listener. Its own
 * entry point (`@storefront-auth/client/admin`), so a storefront bundle never ships it, and it
 * holds a token that must never reach a browser.
 */
import { customerAdmin, type CustomerAdmin } from './admin-customers.js';
import { recordsAdmin, type RecordsAdmin } from './admin-records.js';
import { webhookAdmin, type WebhookAdmin } from './admin-webhooks.js';
import { answerOf, fetchAnswer } from './answers.js';

export type {
  CustomerAdmin,
  CustomerList,
  CustomerPatch,
  CustomerSearch,
  CustomerStatus,
  ListedCustomer,
  NewCustomer,
  StaffCustomer,
} from './admin-customers.js';
export type {
  AuditPage,
  AuditRecord,
  OutboxEntry,
  OutboxPage,
  OutboxStatus,
  PageOptions,
  RecordsAdmin,
  RetriedMessage,
} from './admin-records.js';
export type {
  CreatedWebhook,
  NewWebhook,
  WebhookAdmin,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookPatch,
} from './admin-webhooks.js';
export { StorefrontAuthError } from './answers.js';

export type StoreStatus = 'active' | 'paused' | 'closed';
export type IdentityMode = 'email' | 'phone';

export type BotCheckProvider = 'turnstile' | 'hcaptcha' | 'recaptcha';
export type BotCheckOperation = 'register' | 'forgot' | 'resend' | 'code_request' | 'identity_change';

/** A store's bot check as answered: the secret is write-only. */
export interface BotCheck {
  provider: BotCheckProvider;
  site_key: string;
  on: BotCheckOperation[];
  /** The provider's siteverify address when null. */
  verify_url: string | null;
  secret_set: boolean;
}

/** A store's bot check as set, whole: its secret replaces the one set. */
export interface BotCheckInput {
  provider: BotCheckProvider;
  site_key: string;
  secret: string;
  on: BotCheckOperation[];
  verify_url?: string;
}

export interface StoreSettings {
  'auth.customer_verification_required': boolean;
  'auth.sign_in_with_code': boolean;
  'auth.sign_in_notices': boolean;
  'auth.passkeys': boolean;
  /** A second step (TOTP): offered to shoppers, required once set up, or neither. */
  'auth.two_factor': 'off' | 'optional' | 'required';
  /** ISO 3166 codes a phone store's numbers may be in; empty: any. */
  'auth.phone_countries': string[];
  'auth.bot_check': BotCheck | null;
}

/** The settings as a create or a patch gives them. */
export type StoreSettingsInput = Partial<
  Omit<StoreSettings, 'auth.bot_check'> & { 'auth.bot_check': BotCheckInput | null }
>;

/** How a store's page and emails look; null parts are the service's own. */
export interface Branding {
  /** An https:// image: on the page and in notices (not in code emails), the store's name as its text. */
  logo_url: string | null;
  /** `#RRGGBB`, at least 4.5:1 against white. */
  primary_colour: string | null;
  accent_colour: string | null;
  support_url: string | null;
}

export interface Store {
  id: string;
  slug: string;
  name: string;
  status: StoreStatus;
  identity_mode: IdentityMode;
  settings: StoreSettings;
  branding: Branding;
  /** Normalized: lowercase, punycode. */
  hosts: string[];
  allowed_origins: string[];
  mail_from: string | null;
  sms_sender: string | null;
  /** Fixed when the store got its first host; only naming another moves it. */
  webauthn_rp_id: string | null;
  /** The parent domain of the store's cookies; null: host-only (or the deployment's COOKIE_DOMAIN). */
  cookie_domain: string | null;
  /** Language tags the store speaks (`en`, `ar`); `["en"]` unless set. */
  languages: string[];
  /** One of `languages`. */
  default_language: string;
  updated_at: string;
}

/** The store made; `warnings` says what the creation changed besides (the first store losing every host). */
export interface CreatedStore extends Store {
  warnings?: string[];
}

/** The store as changed; `warnings` says what the change did besides (passkeys that stop signing in). */
export interface ChangedStore extends Store {
  warnings?: string[];
}

export interface NewStore {
  slug: string;
  name: string;
  identity_mode?: IdentityMode;
  status?: StoreStatus;
  hosts?: string[];
  settings?: StoreSettingsInput;
  /** Any of the parts; null ones go back to the service's own. */
  branding?: Partial<Branding>;
  allowed_origins?: string[];
  mail_from?: string | null;
  sms_sender?: string | null;
  webauthn_rp_id?: string | null;
  cookie_domain?: string | null;
  /** Default `["en"]`. */
  languages?: string[];
  /** One of `languages`; default the first of them. */
  default_language?: string;
}

/** A JSON merge patch: fields left out keep their value; null clears those that may be empty. */
export interface StorePatch {
  name?: string;
  identity_mode?: IdentityMode;
  status?: StoreStatus;
  settings?: StoreSettingsInput;
  /** Any of the parts; null ones go back to the service's own. */
  branding?: Partial<Branding>;
  allowed_origins?: string[] | null;
  mail_from?: string | null;
  sms_sender?: string | null;
  webauthn_rp_id?: string | null;
  cookie_domain?: string | null;
  /** Replaces the list; it must hold the default unless `default_language` comes with it. */
  languages?: string[];
  /** Alone, one of the store's current languages. */
  default_language?: string;
}

export interface StoreList {
  stores: Store[];
  /** Pass as `cursor` for the next page; null on the last. */
  next_cursor: string | null;
}

export interface DeletedStore {
  id: string;
  slug: string;
  status: 'deleted';
}

/** A store's sign-in provider, as the admin API answers it: never its secret. */
export interface Provider {
  id: string;
  name: string;
  preset: 'google' | 'apple' | 'microsoft' | null;
  issuer: string;
  client_id: string;
  secret: 'client_secret' | 'private_key';
  scopes: string;
  response_mode: 'query' | 'form_post';
  created_at: string;
  updated_at: string;
}

/** A provider to add: a `preset` or an `issuer`; a `client_secret`, or Apple's `private_key` with its ids. */
export interface NewProvider {
  id: string;
  preset?: 'google' | 'apple' | 'microsoft';
  issuer?: string;
  client_id: string;
  client_secret?: string;
  private_key?: string;
  key_id?: string;
  team_id?: string;
  name?: string;
  scopes?: string;
}

export interface AdminClientOptions {
  /** The admin listener, e.g. `http://127.0.0.1:3001` (ADMIN_HOST, ADMIN_PORT); never the customer port. */
  baseUrl: string | URL;
  /** One of ADMIN_TOKENS. */
  token: string;
  /** Defaults to the global `fetch`. */
  fetch?: typeof globalThis.fetch;
}

/**
 * The store calls here; a store's customers in CustomerAdmin (admin-customers.ts), the webhook
 * endpoint calls in WebhookAdmin (admin-webhooks.ts), a store's audit trail and outbox in
 * RecordsAdmin (admin-records.ts).
 */
export interface AdminClient extends CustomerAdmin, WebhookAdmin, RecordsAdmin {
  /**
   * Makes a store. Give an `idempotencyKey` whenever the call may be retried: within 24 hours a
   * retry with it answers the first answer again and makes nothing.
   */
  createStore(store: NewStore, options?: { idempotencyKey?: string }): Promise<CreatedStore>;
  /** One page of stores by slug; pass the answer's `next_cursor` for the next. */
  listStores(options?: { cursor?: string; limit?: number }): Promise<StoreList>;
  /** Every store, page after page. */
  allStores(options?: { pageSize?: number }): AsyncGenerator<Store>;
  /** A store by id or slug. */
  getStore(store: string): Promise<Store>;
  /** `warnings` says what the change did besides, such as passkeys that no longer sign in. */
  changeStore(store: string, patch: StorePatch, options?: { force?: boolean }): Promise<ChangedStore>;
  deleteStore(store: string): Promise<DeletedStore>;
  addHost(store: string, host: string): Promise<Store>;
  /** `force`: even when it is the last host on the relying party ID of the store's passkeys. */
  removeHost(store: string, host: string, options?: { force?: boolean }): Promise<Store>;
  /** Adds a sign-in provider, or replaces the store's provider of that id. */
  addProvider(store: string, provider: NewProvider): Promise<Provider>;
  listProviders(store: string): Promise<Provider[]>;
  removeProvider(store: string, id: string): Promise<void>;
  /** Which messages the store words itself, in which languages. */
  listTemplates(store: string): Promise<TemplateSummary[]>;
  /** The store's words for a message in a language (Mustache); a mistake is `validation_failed` naming part and line. */
  setTemplate(store: string, message: string, language: string, template: MessageTemplate): Promise<StoredTemplate>;
  getTemplate(store: string, message: string, language: string): Promise<StoredTemplate>;
  /** The built-in words return. */
  removeTemplate(store: string, message: string, language: string): Promise<void>;
  /** The template rendered with sample values, as a shopper would get it; nothing is saved. */
  previewTemplate(
    store: string,
    message: string,
    language: string,
    template: MessageTemplate,
  ): Promise<MessageTemplate>;
}

/** A store's own words for an email: Mustache, `{{variable}}` only. */
export interface MessageTemplate {
  subject: string;
  text: string;
  html: string;
}

export interface StoredTemplate extends MessageTemplate {
  message: string;
  language: string;
  updated_at: string;
}

export interface TemplateSummary {
  message: string;
  language: string;
  updated_at: string;
}

export function createAdminClient(options: AdminClientOptions): AdminClient {
  const base = `${new URL(options.baseUrl).href.replace(/\/+$/, '')}/admin/v1`;
  const fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const part = encodeURIComponent;

  async function call<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const { response, text } = await fetchAnswer(fetch, `${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${options.token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      redirect: 'manual',
    });
    return answerOf<T>(response, text);
  }

  const client: AdminClient = {
    createStore: (store, { idempotencyKey } = {}) =>
      call('POST', '/stores', store, idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
    listStores({ cursor, limit } = {}) {
      const query = new URLSearchParams();
      if (cursor !== undefined) query.set('cursor', cursor);
      if (limit !== undefined) query.set('limit', String(limit));
      const search = query.toString();
      return call('GET', `/stores${search === '' ? '' : `?${search}`}`);
    },
    async *allStores({ pageSize } = {}) {
      let cursor: string | undefined;
      do {
        const page = await client.listStores({ ...(cursor && { cursor }), ...(pageSize && { limit: pageSize }) });
        yield* page.stores;
        cursor = page.next_cursor ?? undefined;
      } while (cursor !== undefined);
    },
    getStore: (store) => call('GET', `/stores/${part(store)}`),
    changeStore: (store, patch, { force = false } = {}) =>
      call('PATCH', `/stores/${part(store)}${force ? '?force=true' : ''}`, patch),
    deleteStore: (store) => call('DELETE', `/stores/${part(store)}`),
    addHost: (store, host) => call('POST', `/stores/${part(store)}/hosts`, { host }),
    removeHost: (store, host, { force = false } = {}) =>
      call('DELETE', `/stores/${part(store)}/hosts/${part(host)}${force ? '?force=true' : ''}`),
    addProvider: (store, provider) => call('POST', `/stores/${part(store)}/providers`, provider),
    listProviders: async (store) =>
      (await call<{ providers: Provider[] }>('GET', `/stores/${part(store)}/providers`)).providers,
    removeProvider: async (store, id) => {
      await call('DELETE', `/stores/${part(store)}/providers/${part(id)}`);
    },
    listTemplates: async (store) =>
      (await call<{ templates: TemplateSummary[] }>('GET', `/stores/${part(store)}/templates`)).templates,
    setTemplate: (store, message, language, template) =>
      call('PUT', `/stores/${part(store)}/templates/${part(message)}/${part(language)}`, template),
    getTemplate: (store, message, language) =>
      call('GET', `/stores/${part(store)}/templates/${part(message)}/${part(language)}`),
    removeTemplate: async (store, message, language) => {
      await call('DELETE', `/stores/${part(store)}/templates/${part(message)}/${part(language)}`);
    },
    previewTemplate: (store, message, language, template) =>
      call('POST', `/stores/${part(store)}/templates/${part(message)}/${part(language)}/preview`, template),
    ...customerAdmin(call),
    ...webhookAdmin(call),
    ...recordsAdmin(call),
  };
  return client;
}
