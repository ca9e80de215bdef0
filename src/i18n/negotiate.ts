import Negotiator from 'negotiator';

/** The languages a store speaks: those it lists, the first being what it falls back to. */
export interface StoreLanguages {
  languages: readonly string[];
  defaultLanguage: string;
}

/**
 * The language to answer in: the first of the store's languages the `Accept-Language` header asks
 * for (`ar-EG` asks for `ar`), else the store's default. A header that asks for none of them, or no
 * header, gets the default.
 */
export function negotiate(acceptLanguage: string | undefined, store: StoreLanguages): string {
  if (acceptLanguage === undefined || acceptLanguage === '') return store.defaultLanguage;
  const wanted = new Negotiator({ headers: { 'accept-language': acceptLanguage } }).languages([
    store.defaultLanguage,
    ...store.languages.filter((language) => language !== store.defaultLanguage),
  ]);
  return wanted[0] ?? store.defaultLanguage;
}
