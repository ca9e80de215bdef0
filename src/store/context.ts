import { domainToASCII } from 'node:url';
import type { IdentityMode } from '../config.js';
import type { MessageBranding } from '../delivery/message.js';
import { baseLanguage, catalogue } from '../i18n/strings.js';

/** A store as the service works with it: its settings read into types, and the rules of its names and changes. No SQL. */

export type StoreStatus = 'active' | 'paused' | 'closed';
export const storeStatuses: readonly StoreStatus[] = ['active', 'paused', 'closed'];

export type BotCheckProvider = 'turnstile' | 'hcaptcha' | 'recaptcha';
export const botCheckProviders: readonly BotCheckProvider[] = ['turnstile', 'hcaptcha', 'recaptcha'];
export type BotCheckOperation = 'register' | 'forgot' | 'resend' | 'code_request' | 'identity_change';
export const botCheckOperations: readonly BotCheckOperation[] = [
  'register',
  'forgot',
  'resend',
  'code_request',
  'identity_change',
];

/** A store's bot check as kept in its settings: the secret sealed (keys.ts, purpose `hooks`), never plain. */
export interface BotCheck {
  provider: BotCheckProvider;
  siteKey: string;
  sealedSecret: string;
  on: BotCheckOperation[];
  /** The provider's siteverify address unless set (a test's server, a proxy). */
  verifyUrl: string | null;
}

export interface StoreContext {
  id: string;
  /** 3–63 of a–z, 0–9 and '-', unique: how an operator names the store. */
  slug: string;
  name: string;
  status: StoreStatus;
  identityMode: IdentityMode;
  verificationRequired: boolean;
  /** `auth.sign_in_with_code`: customers may sign in with a code sent to their identity. */
  signInWithCode: boolean;
  /** Whether a sign-in from a device not seen for 90 days sends the customer a notice. */
  signInNotices: boolean;
  /** `auth.passkeys`: customers may add passkeys and sign in with them. */
  passkeys: boolean;
  /**
   * `auth.two_factor`: `optional`, a customer may set up a second step (TOTP); `required`, one who
   * has it may not turn it off; `off`, none is offered or asked for (a customer's is kept, unused).
   */
  twoFactor: TwoFactorMode;
  /** Whether the store offers a second step at all: the account routes of it exist. */
  twoFactorOffered: boolean;
  /**
   * `auth.phone_countries`: the countries (ISO 3166 alpha-2) a phone store's numbers may be in; a
   * number elsewhere cannot register and is sent nothing (a brake on SMS pumping). Empty: any.
   */
  phoneCountries: string[];
  /** `auth.bot_check`: the bot check the store's shoppers pass on the listed operations; null: none. */
  botCheck: BotCheck | null;
  /** How the store's page and emails look: each part null for the service's own. */
  branding: Branding;
  /** What of it an email shows: an uploaded logo as an address on the store's first host. */
  mailBranding: MessageBranding;
  /** The host names the store answers on, normalized (lowercase, IDNA, no port). */
  hosts: string[];
  /** Storefronts allowed to call with credentials, besides https:// and each host. */
  allowedOrigins: string[];
  /** The store's own From line; null: the deployment's MAIL_FROM under the store's name. */
  mailFrom: string | null;
  /** A label the SMS hook receives as `sender`. */
  smsSender: string | null;
  /**
   * The passkey relying party, fixed when the store gets its first host (that host, unless given)
   * and moved only by an explicit change; null: the deployment's WEBAUTHN_RP_ID.
   */
  webauthnRpId: string | null;
  /** The parent domain the store's session and XSRF-TOKEN cookies are set for; null: the deployment's COOKIE_DOMAIN. */
  cookieDomain: string | null;
  /** The languages the store's page, problems and messages speak (`i18n.languages`); `en` by default. */
  languages: string[];
  /** One of `languages`: what a customer who asks for none of them gets. */
  defaultLanguage: string;
  /** Taken from the change feed's sequence by every change. */
  version: number;
  updatedAt: string;
}

export interface StoreRow {
  id: string;
  slug: string;
  name: string;
  status: StoreStatus;
  identity_mode: IdentityMode;
  settings: Record<string, unknown>;
  hosts: string[];
  allowed_origins: string[];
  mail_from: string | null;
  sms_sender: string | null;
  webauthn_rp_id: string | null;
  cookie_domain: string | null;
  version: string;
  updated_at: Date;
  deleted_at: Date | null;
}

/** The id of the store made from configuration on a deployment's first start. */
export const firstStoreId = 'default';

export function toStore(row: StoreRow): StoreContext {
  const branding = brandingOf(row.settings);
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    status: row.status,
    identityMode: row.identity_mode,
    verificationRequired: row.settings['auth.customer_verification_required'] === true,
    // Absent in stores made before the setting existed: off.
    signInWithCode: row.settings['auth.sign_in_with_code'] === true,
    // On unless an operator turned it off: stores made before the setting existed get notices too.
    signInNotices: row.settings['auth.sign_in_notices'] !== false,
    // Off unless an operator turned it on, like signing in with a code.
    passkeys: row.settings['auth.passkeys'] === true,
    ...twoFactorOf(row.settings['auth.two_factor']),
    phoneCountries: stringList(row.settings['auth.phone_countries']),
    botCheck: botCheckOf(row.settings['auth.bot_check']),
    branding,
    mailBranding: mailBrandingOf(branding, row.hosts),
    hosts: row.hosts,
    allowedOrigins: row.allowed_origins,
    mailFrom: row.mail_from,
    smsSender: row.sms_sender,
    webauthnRpId: row.webauthn_rp_id,
    cookieDomain: row.cookie_domain,
    ...languagesOf(row.settings),
    version: Number(row.version),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

export const twoFactorModes = ['off', 'optional', 'required'] as const;
export type TwoFactorMode = (typeof twoFactorModes)[number];

function twoFactorOf(value: unknown): Pick<StoreContext, 'twoFactor' | 'twoFactorOffered'> {
  const twoFactor = twoFactorModes.find((mode) => mode === value) ?? 'off';
  return { twoFactor, twoFactorOffered: twoFactor !== 'off' };
}

/** A store's look: a logo, a support link (https://), a primary and an accent colour (#rrggbb). */
export interface Branding {
  logoUrl: string | null;
  primaryColour: string | null;
  accentColour: string | null;
  supportUrl: string | null;
}

// Each part a settings key of its own, so a patch of one leaves the others (the settings merge).
const brandingKeys = {
  logoUrl: 'branding.logo_url',
  primaryColour: 'branding.primary_colour',
  accentColour: 'branding.accent_colour',
  supportUrl: 'branding.support_url',
} as const satisfies Record<keyof Branding, string>;

function brandingOf(settings: Record<string, unknown>): Branding {
  const part = (key: string) => (typeof settings[key] === 'string' ? (settings[key] as string) : null);
  return {
    logoUrl: part(brandingKeys.logoUrl),
    primaryColour: part(brandingKeys.primaryColour),
    accentColour: part(brandingKeys.accentColour),
    supportUrl: part(brandingKeys.supportUrl),
  };
}

// An uploaded logo is a path on the store's hosts: a mail reader needs a whole address, and a store
// with no host of its own (the default one) has none to give.
function mailBrandingOf(branding: Branding, hosts: string[]): MessageBranding {
  const { logoUrl, primaryColour, supportUrl } = branding;
  const uploaded = logoUrl?.startsWith('/') === true;
  const host = hosts[0];
  return {
    logoUrl: !uploaded ? logoUrl : host === undefined ? null : `https://${host}${logoUrl}`,
    primaryColour,
    supportUrl,
  };
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/** The stored form is written only by settingsOf; anything else (a hand edit) reads as no check. */
function botCheckOf(value: unknown): BotCheck | null {
  if (typeof value !== 'object' || value === null) return null;
  const stored = value as Record<string, unknown>;
  const provider = botCheckProviders.find((name) => name === stored['provider']);
  const { site_key: siteKey, sealed_secret: sealedSecret, verify_url: verifyUrl } = stored;
  if (provider === undefined || typeof siteKey !== 'string' || typeof sealedSecret !== 'string') return null;
  const on = stringList(stored['on']).filter((name): name is BotCheckOperation =>
    botCheckOperations.includes(name as BotCheckOperation),
  );
  return { provider, siteKey, sealedSecret, on, verifyUrl: typeof verifyUrl === 'string' ? verifyUrl : null };
}

export type StoreLanguages = Pick<StoreContext, 'languages' | 'defaultLanguage'>;

/**
 * A store's languages from its settings: those the service ships strings for (a file removed from
 * locales/ since the store listed it is dropped here, once, for every reader), and English when
 * none is left; stores made before languages existed speak English. The default is one of them.
 */
export function languagesOf(settings: Record<string, unknown>): StoreLanguages {
  const listed = Array.isArray(settings['i18n.languages']) ? (settings['i18n.languages'] as unknown[]) : [];
  const shipped = listed.filter(
    (language): language is string => typeof language === 'string' && catalogue.has(language),
  );
  const languages = shipped.length > 0 ? shipped : [baseLanguage];
  const defaultLanguage = settings['i18n.default_language'];
  return {
    languages,
    defaultLanguage:
      typeof defaultLanguage === 'string' && languages.includes(defaultLanguage) ? defaultLanguage : languages[0]!,
  };
}

/** The storefronts a store trusts besides the deployment's: https:// and each host, and its allowed origins. */
export function storeOrigins(store: Pick<StoreContext, 'hosts' | 'allowedOrigins'> | null): string[] {
  if (store === null) return [];
  return [...store.hosts.map((host) => `https://${host}`), ...store.allowedOrigins];
}

const hostLabel = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A host name as stores are keyed by it: lowercase, IDNA (punycode) for non-ASCII labels, no
 * trailing dot; null for anything that is not a plain host name (a port, a wildcard, an address).
 */
export function normalizeHost(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '' || /[\s:/*@[\]]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed);
  if (ascii === '' || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (!labels.every((label) => hostLabel.test(label))) return null;
  // An address is not a host a store can own: a browser reads a name ending in a number as IPv4
  // (127.1, 1.2.3, 0x7f.1 alike), so no such name is one.
  if (/^(\d+|0x[0-9a-f]*)$/.test(labels.at(-1)!)) return null;
  return ascii;
}

/** The host of a request's Host header: its name without the port, normalized; null when none. */
export function requestHost(header: string | undefined): string | null {
  if (header === undefined) return null;
  return normalizeHost(header.startsWith('[') ? '' : header.replace(/:\d*$/, ''));
}

export const storeSlugPattern = /^[a-z0-9-]{3,63}$/;

export interface StoreChanges {
  name?: string;
  status?: StoreStatus;
  identityMode?: IdentityMode;
  verificationRequired?: boolean;
  signInWithCode?: boolean;
  signInNotices?: boolean;
  passkeys?: boolean;
  twoFactor?: TwoFactorMode;
  phoneCountries?: string[];
  /** Null removes the store's bot check. */
  botCheck?: BotCheck | null;
  /** The parts given; a null part goes back to the service's own. */
  branding?: Partial<Branding>;
  allowedOrigins?: string[];
  mailFrom?: string | null;
  smsSender?: string | null;
  webauthnRpId?: string | null;
  cookieDomain?: string | null;
  /**
   * Either or both: languages alone keep the default, a default alone keeps the languages. The
   * default must end up one of the languages (see mergeLanguages).
   */
  languages?: Partial<StoreLanguages>;
}

/**
 * A change of a store's languages on top of its current ones; null when the default would not be
 * one of the languages. Made under the store row's lock on update, so two changes racing (one
 * dropping a language, one making it the default) cannot leave a default the store does not speak.
 */
export function mergeLanguages(current: StoreLanguages, change: Partial<StoreLanguages>): StoreLanguages | null {
  const languages = change.languages ?? current.languages;
  const defaultLanguage = change.defaultLanguage ?? current.defaultLanguage;
  return languages.includes(defaultLanguage) ? { languages, defaultLanguage } : null;
}

export interface NewStore extends StoreChanges {
  slug: string;
  name: string;
  identityMode: IdentityMode;
  hosts?: string[];
}

export function settingsOf(changes: StoreChanges): Record<string, unknown> {
  return {
    ...(changes.languages?.languages === undefined ? {} : { 'i18n.languages': changes.languages.languages }),
    ...(changes.languages?.defaultLanguage === undefined
      ? {}
      : { 'i18n.default_language': changes.languages.defaultLanguage }),
    ...(changes.verificationRequired === undefined
      ? {}
      : { 'auth.customer_verification_required': changes.verificationRequired }),
    ...(changes.signInWithCode === undefined ? {} : { 'auth.sign_in_with_code': changes.signInWithCode }),
    ...(changes.signInNotices === undefined ? {} : { 'auth.sign_in_notices': changes.signInNotices }),
    ...(changes.passkeys === undefined ? {} : { 'auth.passkeys': changes.passkeys }),
    ...(changes.twoFactor === undefined ? {} : { 'auth.two_factor': changes.twoFactor }),
    ...(changes.phoneCountries === undefined ? {} : { 'auth.phone_countries': changes.phoneCountries }),
    ...(changes.botCheck === undefined ? {} : { 'auth.bot_check': storedBotCheck(changes.botCheck) }),
    ...Object.fromEntries(
      Object.entries(changes.branding ?? {}).map(([part, value]) => [brandingKeys[part as keyof Branding], value]),
    ),
  };
}

function storedBotCheck(check: BotCheck | null): Record<string, unknown> | null {
  if (check === null) return null;
  const { provider, siteKey, sealedSecret, on, verifyUrl } = check;
  return { provider, site_key: siteKey, sealed_secret: sealedSecret, on, verify_url: verifyUrl };
}
