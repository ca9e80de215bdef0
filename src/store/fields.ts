import { isSupportedCountry } from 'libphonenumber-js/max';
import { isLoopbackHost } from '../config.js';
import { controlCharacter } from '../i18n/controls.js';
import { canonicalTag, catalogue } from '../i18n/strings.js';
import { seal } from '../keys.js';
import {
  mergeLanguages,
  type BotCheck,
  type BotCheckOperation,
  type BotCheckProvider,
  normalizeHost,
  storeSlugPattern,
  type CookieDomainRefusal,
  type StoreChanges,
  type StoreContext,
  type StoreLanguages,
} from './store.js';

/**
 * A store's fields as an operator or the platform's backend writes them, checked and put in the
 * form they are kept in. The command line and the admin API take the same values and refuse the
 * same ones with the same words: each message starts with the value as given, so the command line
 * puts its flag in front and the admin API files it under the field's name.
 */
export class FieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldError';
  }
}

const shown = (input: string) => JSON.stringify(input);

export function storeSlug(input: string): string {
  if (!storeSlugPattern.test(input)) throw new FieldError(`${shown(input)} must be 3 to 63 of a-z, 0-9 and -`);
  return input;
}

export function storeName(input: string): string {
  const name = input.trim();
  if (name === '' || [...name].length > 120 || controlCharacter.test(name))
    throw new FieldError('must be 1 to 120 characters, without control characters');
  return name;
}

/** A host name as stores hold it (lowercase, punycode); what is wrong with it, said, otherwise. */
export function storeHost(input: string): string {
  const host = normalizeHost(input);
  if (host !== null) return host;
  if (input.includes('*'))
    throw new FieldError(`${shown(input)}: a wildcard is not a host; name each host, such as shop.example.com`);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(input.trim()))
    throw new FieldError(
      `${shown(input)}: give the host name alone, without a scheme or path, such as shop.example.com`,
    );
  if (/:\d*$/.test(input.trim()) && !input.includes('['))
    throw new FieldError(`${shown(input)}: give the host name without a port, such as shop.example.com`);
  throw new FieldError(
    `${shown(input)} is not a host name (labels of letters, digits and -, no port, no wildcard, no address), such as shop.example.com`,
  );
}

/**
 * The parent domain a store's cookies are set for: a host name of at least two labels (a browser
 * refuses `Domain=localhost` or `Domain=com`), a leading dot forgiven.
 */
export function storeCookieDomain(input: string): string {
  const domain = storeHost(input.trim().replace(/^\./, ''));
  if (!domain.includes('.'))
    throw new FieldError(
      `${shown(input)} must have at least two labels, such as shop.example: browsers refuse a cookie for a single label (for local work, shop.localhost)`,
    );
  return domain;
}

/** Why a store cannot have this cookie domain, in the words the command line and the admin API share. */
export function cookieDomainRefusal(domain: string, refusal: CookieDomainRefusal, hosts: readonly string[]): string {
  if (refusal.reason === 'cookie_domain_shared')
    return `${shown(domain)} covers ${refusal.host}, a host of another store: that store's shoppers would receive this store's cookies`;
  return `${shown(domain)} is neither a host of the store nor a parent of one (${hosts.join(', ') || 'it has no host'}): browsers would refuse its cookies`;
}

/** What moving a store's relying party ID does to the passkeys made for the old one. */
export function strandedPasskeysWarning(count: number, from: string | null): string {
  return `${count} passkey${count === 1 ? ' was' : 's were'} made for the relying party ID ${from ?? 'of the deployment'}: they no longer sign in, and their customers must add them again.`;
}

/** Why a host cannot go while the store's passkeys depend on it; `force` names how to insist. */
export function relyingPartyInUse(host: string, rpId: string | null, passkeys: number, force: string): string {
  return `${host} is the last host on ${rpId ?? 'the relying party ID'}, the relying party ID of the store's ${passkeys} passkey${passkeys === 1 ? '' : 's'}, which would stop signing in: set another relying party ID first, or remove the host with ${force}`;
}

const originExample = 'such as https://shop.example.com';

/** An http(s) origin as browsers send it in Origin: scheme, host (punycode) and a port when not the default. */
export function storeOrigin(input: string): string {
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw new FieldError(`${shown(input)} is not an origin, ${originExample}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new FieldError(`${shown(input)} must be an http:// or https:// origin, ${originExample}`);
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '' || url.pathname !== '/')
    throw new FieldError(`${shown(input)} must be an origin alone, without a path, query or user, ${originExample}`);
  if (url.hostname.includes('*'))
    throw new FieldError(`${shown(input)}: a wildcard is not allowed; name each origin, ${originExample}`);
  // A trailing slash is forgiven: what is kept is the origin, as a browser's Origin header holds it.
  return url.origin;
}

const mailFromExample = '"Acme Shoes <shop@acme.example>"';

/** `Name <address>` as an SMTP From line takes it: the name quoted when it holds a character that would split it. */
export function storeMailFrom(input: string): string {
  if (controlCharacter.test(input)) throw new FieldError(`${shown(input)} holds a line break or control character`);
  const notNameAndAddress = () =>
    new FieldError(`${shown(input)} must be a sender name and an address, such as ${mailFromExample}`);
  const match = /^(.*?)\s*<([^<>\s]+)>$/.exec(input.trim());
  if (match === null) throw notNameAndAddress();
  // A name already in quotes is taken without them, and quoted again below when it needs to be.
  const name = match[1]!
    .trim()
    .replace(/^"(.*)"$/, '$1')
    .trim();
  const address = match[2]!;
  if (name === '' || /[<>]/.test(name)) throw notNameAndAddress();
  if (/["\\]/.test(name)) throw new FieldError(`${shown(input)}: the sender name may not hold " or \\`);
  if ([...name].length > 120) throw new FieldError(`${shown(input)}: the sender name must be at most 120 characters`);
  if (!/^[^\s@<>",;:()[\]\\]+@[^\s@<>",;:()[\]\\]+$/.test(address) || address.length > 254)
    throw new FieldError(`${shown(input)}: ${address} is not an email address`);
  // A comma, say, would otherwise split the From line into two addresses.
  return /[,.:;()@[\]]/.test(name) ? `"${name}" <${address}>` : `${name} <${address}>`;
}

export function storeSmsSender(input: string): string {
  const sender = input.trim();
  if (sender === '' || [...sender].length > 32 || controlCharacter.test(sender))
    throw new FieldError('must be 1 to 32 characters, without control characters');
  return sender;
}

/** A country a phone store serves: an ISO 3166 alpha-2 code with a numbering plan, kept upper-case. */
export function storePhoneCountry(input: string): string {
  const country = input.trim().toUpperCase();
  if (!isSupportedCountry(country)) throw new FieldError(`${shown(input)} is not an ISO 3166 country code such as DE`);
  return country;
}

/** A bot check's siteverify address: https://, or http:// on this machine (a test's server). */
export function botCheckVerifyUrl(input: string): string {
  return httpsUrl(input);
}

/** A store's logo or support link: https://, or http:// on this machine (a test's server). */
export const storeBrandingUrl = (input: string): string => {
  const url = httpsUrl(input);
  if (url.length > 2048) throw new FieldError('must be at most 2048 characters');
  return url;
};

/** A colour as `#RRGGBB`, kept in lowercase. */
function storeColour(input: string): string {
  if (!/^#[0-9a-f]{6}$/i.test(input.trim())) throw new FieldError(`${shown(input)} must be a colour as #RRGGBB`);
  return input.trim().toLowerCase();
}

/** WCAG 2's contrast ratio of two `#RRGGBB` colours, 1 to 21. */
export function contrastRatio(first: string, second: string): number {
  const luminance = (colour: string) => {
    const [r, g, b] = [1, 3, 5].map((at) => {
      const channel = parseInt(colour.slice(at, at + 2), 16) / 255;
      return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
  };
  const [light, dark] = [luminance(first), luminance(second)].sort((a, b) => b - a);
  return (light! + 0.05) / (dark! + 0.05);
}

/** The page's text colour (public/app.css), which the accent stands beside. */
const pageText = '#1b1b1f';

/** A colour that reaches WCAG AA's 4.5:1 against `against`, else a refusal naming the ratio. */
function contrasting(input: string, against: string, name: string, advice: string): string {
  const colour = storeColour(input);
  const ratio = contrastRatio(colour, against);
  // Rounded down, so a refusal never shows 4.50.
  const shownRatio = (Math.floor(ratio * 100) / 100).toFixed(2);
  if (ratio < 4.5)
    throw new FieldError(`${colour} has a contrast of ${shownRatio}:1 with ${name}, under WCAG AA's 4.5:1; ${advice}`);
  return colour;
}

/**
 * The primary colour: buttons are drawn in it with white text, and links in it on the page's white,
 * so it must reach WCAG AA's 4.5:1 against white.
 */
export function storePrimaryColour(input: string): string {
  return contrasting(input, '#ffffff', 'white', 'choose a darker colour');
}

/** The accent: the focus ring drawn around fields and buttons, beside the page's dark text. */
export function storeAccentColour(input: string): string {
  return contrasting(input, pageText, `the page's text (${pageText})`, 'choose a lighter colour');
}

function httpsUrl(input: string): string {
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw new FieldError(`${shown(input)} is not a URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname)))
    throw new FieldError(`${shown(input)} must be an https:// URL (http:// only on localhost)`);
  return url.href;
}

/** A bot check's site key or secret: what the provider issued, printable and short. */
export function botCheckKey(input: string): string {
  const key = input.trim();
  if (key === '' || key.length > 200 || /[^\x21-\x7e]/.test(key))
    throw new FieldError('must be 1 to 200 printable ASCII characters without spaces');
  return key;
}

/** A bot check as an operator gives it, its secret in the clear. */
export interface BotCheckInput {
  provider: BotCheckProvider;
  site_key: string;
  secret: string;
  on: readonly BotCheckOperation[];
  verify_url?: string | undefined;
}

/**
 * A bot check as a store keeps it: the secret sealed with the deployment's key for store secrets
 * (Keys.hooks, as a webhook's secret), so a settings dump or backup does not hold it in the clear.
 */
export function sealBotCheck(input: BotCheckInput, key: Buffer): BotCheck {
  const prefix = (field: string) => (error: unknown) => {
    throw error instanceof FieldError ? new FieldError(`auth.bot_check.${field}: ${error.message}`) : error;
  };
  const siteKey = attempt(() => botCheckKey(input.site_key), prefix('site_key'));
  const secret = attempt(() => botCheckKey(input.secret), prefix('secret'));
  const verifyUrl =
    input.verify_url === undefined ? null : attempt(() => botCheckVerifyUrl(input.verify_url!), prefix('verify_url'));
  return { provider: input.provider, siteKey, sealedSecret: seal(key, secret), on: [...new Set(input.on)], verifyUrl };
}

function attempt<T>(run: () => T, failed: (error: unknown) => never): T {
  try {
    return run();
  } catch (error) {
    return failed(error);
  }
}

/** One of the languages the service ships strings for, as its tag (`en`, `ar`). */
export function storeLanguage(input: string): string {
  const language = canonicalTag(input.trim());
  if (language === null || !catalogue.has(language))
    throw new FieldError(`${shown(input)} is not a language this service speaks (${catalogue.languages.join(', ')})`);
  return language;
}

/** The languages a store speaks: at least one, each shipped, duplicates dropped, in the order given. */
export function storeLanguages(inputs: readonly string[]): string[] {
  if (inputs.length === 0) throw new FieldError('must name at least one language, such as en');
  return distinct(inputs, storeLanguage);
}

/**
 * Why a change of languages leaves a default the store would not speak (mergeLanguages refused
 * it), filed under the default language: either the default given is not among the languages, or
 * the languages given drop the current default and no new one was given.
 */
export function defaultLanguageRefusal(current: StoreLanguages, change: Partial<StoreLanguages>): string {
  const languages = (change.languages ?? current.languages).join(', ');
  if (change.defaultLanguage !== undefined)
    return `${shown(change.defaultLanguage)} is not one of the store's languages (${languages})${
      change.languages === undefined ? '; give the languages with it' : ''
    }`;
  return `must be given: the store's default language, ${shown(current.defaultLanguage)}, is not among the new languages (${languages})`;
}

/** A new store's languages: `en` unless given; the default, unless given, the first of them. */
export function newStoreLanguages(change: Partial<StoreLanguages>): StoreLanguages {
  const languages = change.languages ?? ['en'];
  const start = { languages, defaultLanguage: languages[0]! };
  const merged = mergeLanguages(start, change);
  if (merged === null) throw new FieldError(defaultLanguageRefusal(start, change));
  return merged;
}

/** A change of languages checked as far as it can be without the store: a default given with languages among them. */
export function storeLanguageChange(change: Partial<StoreLanguages>): Partial<StoreLanguages> {
  if (change.languages !== undefined && change.defaultLanguage !== undefined) newStoreLanguages(change);
  return change;
}

/** Each value checked, duplicates dropped, in the order given. */
export function distinct(values: readonly string[], check: (value: string) => string): string[] {
  return [...new Set(values.map(check))];
}

// Each change by the admin API's name of the field it is in (the settings are one field there).
const changedFieldOf: Record<keyof StoreChanges, string> = {
  name: 'name',
  status: 'status',
  identityMode: 'identity_mode',
  verificationRequired: 'settings',
  signInWithCode: 'settings',
  signInNotices: 'settings',
  passkeys: 'settings',
  twoFactor: 'settings',
  phoneCountries: 'settings',
  botCheck: 'settings',
  branding: 'branding',
  allowedOrigins: 'allowed_origins',
  mailFrom: 'mail_from',
  smsSender: 'sms_sender',
  webauthnRpId: 'webauthn_rp_id',
  cookieDomain: 'cookie_domain',
  languages: 'languages',
};

/**
 * What a store's audit trail records of a change (`store.changed`): the fields it touched, as the
 * admin API names them, whether the admin API or the command line made it.
 */
export function storeChangeDetails(changes: StoreChanges): { fields: string } {
  const fields = new Set<string>();
  for (const key of Object.keys(changes) as (keyof StoreChanges)[]) {
    if (key !== 'languages') fields.add(changedFieldOf[key]);
    else {
      if (changes.languages?.languages !== undefined) fields.add('languages');
      if (changes.languages?.defaultLanguage !== undefined) fields.add('default_language');
    }
  }
  return { fields: [...fields].sort().join(',') };
}

/** A store as the command line prints it and the admin API answers it. */
export function describeStore(store: StoreContext) {
  return {
    id: store.id,
    slug: store.slug,
    name: store.name,
    status: store.status,
    identity_mode: store.identityMode,
    settings: {
      'auth.customer_verification_required': store.verificationRequired,
      'auth.sign_in_with_code': store.signInWithCode,
      'auth.sign_in_notices': store.signInNotices,
      'auth.passkeys': store.passkeys,
      'auth.two_factor': store.twoFactor,
      'auth.phone_countries': store.phoneCountries,
      // The secret is write-only: an answer says only that it is set.
      'auth.bot_check':
        store.botCheck === null
          ? null
          : {
              provider: store.botCheck.provider,
              site_key: store.botCheck.siteKey,
              on: store.botCheck.on,
              verify_url: store.botCheck.verifyUrl,
              secret_set: true,
            },
    },
    branding: {
      logo_url: store.branding.logoUrl,
      primary_colour: store.branding.primaryColour,
      accent_colour: store.branding.accentColour,
      support_url: store.branding.supportUrl,
    },
    hosts: store.hosts,
    allowed_origins: store.allowedOrigins,
    mail_from: store.mailFrom,
    sms_sender: store.smsSender,
    webauthn_rp_id: store.webauthnRpId,
    cookie_domain: store.cookieDomain,
    languages: store.languages,
    default_language: store.defaultLanguage,
    updated_at: store.updatedAt,
  };
}
