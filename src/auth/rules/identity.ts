import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { IdentityMode } from '../../config.js';

export const maxIdentityLength = 254;

// The HTML (WHATWG) definition of a valid email address.
const emailPattern =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

// International form only; the punctuation people type between digit groups is tolerated.
const phonePattern = /^\+[0-9 .()-]+$/;

export function normalizeEmail(raw: string): string | null {
  const trimmed = raw.trim();
  if (trimmed.length > maxIdentityLength || !emailPattern.test(trimmed)) return null;
  return trimmed.toLowerCase();
}

/** E.164 for a number that the numbering plan of its country allows, else null. */
export function normalizePhone(raw: string): string | null {
  const trimmed = raw.trim();
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

/**
 * An identity as a notice may show it to someone who may not own it: the first character of an
 * email's local part and its domain, or a number's country code and last two digits. The hidden
 * part is a fixed run of dots, so the mask does not tell its length either.
 */
export function maskIdentity(mode: IdentityMode, value: string): string {
  if (mode === 'email') {
    const at = value.lastIndexOf('@');
    return `${[...value.slice(0, at)][0] ?? ''}•••${value.slice(at)}`;
  }
  const countryCode = callingCodeOf(value) ?? '';
  return `+${countryCode}•••••••${value.slice(-2)}`;
}
