import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/**
 * The destinations the dispatcher's brakes on SMS pumping look at. Here rather than in the
 * domain's identity rules: delivery sits below the domain and only reads what a message carries.
 */

/** `<store id> <country calling code>` of an SMS recipient (E.164); null when it parses as none. */
export function smsDestination(storeId: string, recipient: string): string | null {
  const code = parsePhoneNumberFromString(recipient)?.countryCallingCode;
  return code === undefined ? null : `${storeId} ${code}`;
}

/**
 * Whether a recipient is in the store's `auth.phone_countries` as its settings hold them (ISO 3166
 * codes); a store that lists none sends anywhere.
 */
export function inPhoneCountries(recipient: string, phoneCountries: unknown): boolean {
  if (!Array.isArray(phoneCountries) || phoneCountries.length === 0) return true;
  const country = parsePhoneNumberFromString(recipient)?.country;
  return country !== undefined && phoneCountries.includes(country);
}
