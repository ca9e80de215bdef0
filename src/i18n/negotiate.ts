import Negotiator from 'negotiator';

/** The languages a store speaks: those it lists, the first being what it falls back to. */
export interface StoreLanguages {
  languages: readonly string[];
  defaultLanguage: string;
}

/**
 * The language to answer in: the first of the store's languages the `Accept-Language` header asks
 * for (`ar-EG` asks for `ar`), else the store's default. A header that asks for none of them (or
 * only `*`), or no header, gets the default.
 */
export function negotiate(acceptLanguage: string | undefined, store: StoreLanguages): string {
  return requestedLanguage(acceptLanguage, store.languages) ?? store.defaultLanguage;
}

/**
 * The store language the `Accept-Language` header asks for, or null when it asks for none of them
 * (or is absent): what a registration records as the customer's language, so a customer whose
 * browser asked for nothing the store speaks follows the store's default, even a later one.
 */
export function requestedLanguage(acceptLanguage: string | undefined, languages: readonly string[]): string | null {
  if (acceptLanguage === undefined || acceptLanguage === '') return null;
  // `*` asks for any language, which names none in particular.
  const header = acceptLanguage.replace(/(^|,)\s*\*\s*(;[^,]*)?(?=,|$)/g, '$1');
  return new Negotiator({ headers: { 'accept-language': header } }).languages([...languages])[0] ?? null;
}
