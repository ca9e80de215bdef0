import type { FastifyReply } from 'fastify';
import { negotiate, type StoreLanguages } from '../i18n/negotiate.js';
import { baseLanguage, catalogue } from '../i18n/strings.js';

/*
 * The language the customer API answers in. Problem documents keep their code and status; their
 * title, detail and field messages are the `problem.*` and `field.*` strings of locales/, written
 * in this language (problems.ts). The admin listener answers in English.
 */

/**
 * The language a store's answers are written in: the one `Accept-Language` asks for among the
 * store's languages that ship with strings, else its default (if that ships), else English.
 */
export function answerLanguage(acceptLanguage: string | undefined, store: StoreLanguages): string {
  const shipped = store.languages.filter((language) => catalogue.has(language));
  const fallback = catalogue.has(store.defaultLanguage) ? store.defaultLanguage : baseLanguage;
  if (shipped.length === 0) return fallback;
  return negotiate(acceptLanguage, { languages: shipped, defaultLanguage: fallback });
}

/** Says which language the problem is in, and that another `Accept-Language` may get another one. */
export function setLanguageHeaders(reply: FastifyReply, language: string): void {
  reply.header('content-language', language);
  const vary = reply.getHeader('vary');
  const present = (Array.isArray(vary) ? vary.join(',') : String(vary ?? '')).split(',').map((name) => name.trim());
  if (present.includes('*') || present.some((name) => name.toLowerCase() === 'accept-language')) return;
  reply.header(
    'vary',
    vary === undefined || present.join('') === '' ? 'Accept-Language' : `${present.join(', ')}, Accept-Language`,
  );
}
