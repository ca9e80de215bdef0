import { domainToASCII, domainToUnicode } from 'node:url';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { IdentityMode } from '../../config.js';
import { asciiDigits } from './digits.js';

export const maxIdentityLength = 254;

// The local part of the HTML (WHATWG) definition of a valid email address: ASCII only.
const localPartPattern = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+$/;
// Its domain, which an internationalized domain must match once in its IDNA ASCII form.
const domainPattern =
  /^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;
const asciiText = /^[\x00-\x7f]*$/;
const aLabel = /(?:^|\.)xn--/i;
// What the URL host parser makes of a domain whose last label is a number: an IPv4 address.
const dottedQuad = /^\d+\.\d+\.\d+\.\d+$/;

// International form only; the punctuation people type between digit groups is tolerated.
const phonePattern = /^\+[0-9 .()-]+$/;

/**
 * A domain in its IDNA ASCII form (UTS-46, as browsers and mail software resolve it), lowercased;
 * null when it has none. `bücher.example`, `BÜCHER.example` and `xn--bcher-kva.example` are one
 * domain, so they must be one identity. An ASCII domain keeps the rules it always had, but an
 * A-label in it (`xn--…`) must decode, so no stored address is a name no one can show or type.
 */
function asciiDomain(domain: string): string | null {
  if (asciiText.test(domain)) {
    if (!domainPattern.test(domain)) return null;
    if (aLabel.test(domain) && domainToASCII(domain) === '') return null;
    return domain.toLowerCase();
  }
  // IDNA drops invisible characters (a zero-width space, a soft hyphen) without a word: refused
  // here instead, so what the customer typed and what is kept differ only in letters' form.
  if (defaultIgnorable.test(domain)) return null;
  const converted = domainToASCII(domain);
  // A full-width number as the last label would come back as an address (１２３ → 0.0.0.123).
  if (converted === '' || dottedQuad.test(converted) || !domainPattern.test(converted)) return null;
  return converted;
}

export function normalizeEmail(raw: string): string | null {
  const trimmed = raw.trim();
  if (trimmed.length > maxIdentityLength) return null;
  const at = trimmed.lastIndexOf('@');
  const localPart = trimmed.slice(0, at);
  if (at < 1 || !localPartPattern.test(localPart)) return null;
  const domain = asciiDomain(trimmed.slice(at + 1));
  if (domain === null) return null;
  // The ASCII form of a domain is longer than its Unicode form: the limit holds for what is stored.
  const address = `${localPart.toLowerCase()}@${domain}`;
  return address.length > maxIdentityLength ? null : address;
}

/**
 * E.164 for a number that the numbering plan of its country allows, else null. Arabic-Indic
 * digits are read as ASCII ones first; any other non-ASCII digit fails the pattern here, before
 * the numbering-plan library, which would otherwise read many scripts' digits as ASCII ones.
 */
export function normalizePhone(raw: string): string | null {
  const trimmed = asciiDigits(raw.trim());
  if (trimmed.length > maxIdentityLength || !phonePattern.test(trimmed)) return null;
  const parsed = parsePhoneNumberFromString(trimmed);
  if (parsed === undefined || !parsed.isValid()) return null;
  return parsed.number;
}

export function normalizeIdentity(mode: IdentityMode, raw: string): string | null {
  return mode === 'email' ? normalizeEmail(raw) : normalizePhone(raw);
}

/**
 * An identity as a request typed it, parsed once at the edge against the store's identity mode.
 * The rate limiter counts by `key` and the domain looks customers up by `mode` and `value`
 * (findCustomerByIdentity, which finds no one for a null value); neither parses the typed string
 * again.
 */
export interface ParsedIdentity {
  /** The store's identity mode the string was parsed against. */
  readonly mode: IdentityMode;
  /** The normal form (a lower-cased email address, an E.164 number); null when it is neither. */
  readonly value: string | null;
  /**
   * The counting key: the normal form when there is one, else the trimmed, lower-cased input, so
   * "A@x.com" and "a@x.com" (or one malformed string typed twice) share one counter.
   */
  readonly key: string;
}

export function parseIdentity(mode: IdentityMode, raw: string): ParsedIdentity {
  const value = normalizeIdentity(mode, raw);
  return { mode, value, key: value ?? raw.trim().toLowerCase() };
}

/** The country calling code of an E.164 number, without '+' ("44" for +447700900123). */
export function callingCodeOf(e164: string): string | undefined {
  return parsePhoneNumberFromString(e164)?.countryCallingCode;
}

/** The country (ISO 3166 alpha-2) of an E.164 number by its numbering plan ("CA" for +16135550123). */
export function countryOf(e164: string): string | undefined {
  return parsePhoneNumberFromString(e164)?.country;
}

/**
 * Whether a store may send to, and register, a number: one in the deployment's calling codes
 * (SMS_ALLOWED_COUNTRY_CODES) and the store's countries (`auth.phone_countries`), each when set.
 * A brake on SMS pumping: premium-rate ranges of countries the store does not serve get nothing.
 */
export function phoneAllowed(
  e164: string,
  allowedCallingCodes: readonly string[],
  phoneCountries: readonly string[],
): boolean {
  if (allowedCallingCodes.length > 0 && !allowedCallingCodes.includes(callingCodeOf(e164) ?? '')) return false;
  return phoneCountries.length === 0 || phoneCountries.includes(countryOf(e164) ?? '');
}

/**
 * An identity as a notice may show it to someone who may not own it: the first character of an
 * email's local part and its domain, or a number's country code and last two digits. The hidden
 * part is a fixed run of dots, so the mask does not tell its length either.
 */
export function maskIdentity(mode: IdentityMode, value: string): string {
  if (mode === 'email') {
    const shown = displayIdentity(mode, value);
    const at = shown.lastIndexOf('@');
    return `${[...shown.slice(0, at)][0] ?? ''}•••${shown.slice(at)}`;
  }
  const countryCode = callingCodeOf(value) ?? '';
  return `+${countryCode}•••••••${value.slice(-2)}`;
}

/**
 * An identity as the customer reads it: an email's internationalized domain in Unicode
 * (`xn--bcher-kva.example` as `bücher.example`); every other identity as it is stored. Only for
 * showing: messages go to, and lookups compare, the stored ASCII form.
 */
export function displayIdentity(mode: IdentityMode, value: string): string {
  if (mode !== 'email') return value;
  const at = value.lastIndexOf('@');
  const domain = value.slice(at + 1);
  if (!aLabel.test(domain)) return value;
  const unicode = domainToUnicode(domain);
  if (unicode === '' || !unicode.split('.').every(oneScript)) return value;
  return `${value.slice(0, at + 1)}${unicode}`;
}

const defaultIgnorable = /\p{Default_Ignorable_Code_Point}/u;

// Scripts a domain label is written in; digits, hyphens and marks (Common, Inherited) go with any.
const scripts = [
  'Latin',
  'Greek',
  'Cyrillic',
  'Armenian',
  'Hebrew',
  'Arabic',
  'Devanagari',
  'Bengali',
  'Tamil',
  'Thai',
  'Georgian',
  'Ethiopic',
  'Hangul',
  'Han',
  'Hiragana',
  'Katakana',
].map((name) => [name, new RegExp(`\\p{Script=${name}}`, 'u')] as const);
const anyScript = /[\p{Script=Common}\p{Script=Inherited}]/u;
const japanese = new Set(['Han', 'Hiragana', 'Katakana']);

/**
 * Whether a label is written in one script (Japanese's three count as one), as browsers require
 * before they show a domain in Unicode: `pаypal` with a Cyrillic `а` would pass for another
 * domain, so it is shown as stored (`xn--pypal-4ve`).
 */
function oneScript(label: string): boolean {
  const found = new Set<string>();
  for (const character of label) {
    if (anyScript.test(character)) continue;
    const name = scripts.find(([, pattern]) => pattern.test(character))?.[0] ?? 'other';
    found.add(japanese.has(name) ? 'Japanese' : name);
  }
  return found.size <= 1;
}
