import type { FastifyReply } from 'fastify';
import { negotiate, type StoreLanguages } from '../i18n/negotiate.js';
import { baseLanguage, catalogue, isPlural, type Params, type Plural, type Strings } from '../i18n/strings.js';
import { problemCatalogue, type AnyProblemCode, type ProblemExtras } from './problems.js';

/*
 * Problem documents in the customer's language. The code and the status never change; the title,
 * the detail and the field messages are the `problem.*` and `field.*` strings of locales/.
 *
 * Everything below the edge words its field messages and special details in English, the very texts
 * of `field.*` and `problem.details.*` in en.json: the rules stay free of languages and the English
 * answers stay byte for byte what they were. Here, as the answer is written, each English text is
 * recognised (its placeholders read back, such as a length's `{count}`) and written anew in the
 * answer's language. A text no string matches stays English rather than failing the answer.
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

interface Recognised {
  key: string;
  params: Params;
}

interface Template {
  key: string;
  pattern: RegExp;
  names: string[];
}

// What a placeholder may stand for when read back: a count is digits, a JSON type a lowercase
// word; anything else (a list of languages) any text. Narrow where it can be, so that one
// template cannot swallow another string's text.
const placeholderPatterns: Record<string, string> = { count: '(\\d+)', type: '([a-z]+)' };

/** The English texts of a section (each form of a plural string too), by the key they belong to. */
function englishForms(section: string): Array<[key: string, text: string]> {
  const forms: Array<[string, string]> = [];
  const walk = (strings: Strings, prefix: string) => {
    for (const [name, value] of Object.entries(strings)) {
      const key = `${prefix}.${name}`;
      if (typeof value === 'string') forms.push([key, value]);
      else if (isPlural(value)) for (const text of Object.values(value as Plural)) forms.push([key, text!]);
      else walk(value, key);
    }
  };
  walk(catalogue.section(baseLanguage, section), section);
  return forms;
}

/** Reads texts back to the key and parameters they were written from. */
class Recogniser {
  private readonly exact = new Map<string, string>();
  private readonly templates: Template[] = [];

  constructor(forms: Array<[string, string]>) {
    for (const [key, text] of forms) {
      const names = [...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
      if (names.length === 0) {
        if (!this.exact.has(text)) this.exact.set(text, key);
        continue;
      }
      const source = text
        .split(/\{\w+\}/)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .reduce((pattern, part, index) => pattern + (placeholderPatterns[names[index - 1]!] ?? '(.+)') + part);
      this.templates.push({ key, pattern: new RegExp(`^${source}$`, 'u'), names });
    }
  }

  recognise(text: string): Recognised | null {
    const key = this.exact.get(text);
    if (key !== undefined) return { key, params: {} };
    for (const template of this.templates) {
      const match = template.pattern.exec(text);
      if (match === null) continue;
      const params: Params = {};
      template.names.forEach((name, index) => {
        const value = match[index + 1]!;
        params[name] = name === 'count' ? Number(value) : value;
      });
      return { key: template.key, params };
    }
    return null;
  }
}

const fieldMessages = new Recogniser(englishForms('field'));
const details = new Recogniser(englishForms('problem.details'));

function translated(recogniser: Recogniser, language: string, text: string): string {
  const recognised = recogniser.recognise(text);
  return recognised === null ? text : catalogue.text(language, recognised.key, recognised.params);
}

/** A field message written in `language`; English, or a message no string matches, as it came. */
export function fieldMessage(language: string, message: string): string {
  return language === baseLanguage ? message : translated(fieldMessages, language, message);
}

function isCustomerCode(code: AnyProblemCode): code is keyof typeof problemCatalogue {
  return Object.hasOwn(problemCatalogue, code);
}

/**
 * A problem document's texts in `language`. Only the customer API's codes have strings: the admin
 * listener's are for operators, and answered in English.
 */
export function problemInLanguage<Body extends { code: AnyProblemCode; title: string; detail: string }>(
  body: Body & ProblemExtras,
  language: string,
): Body & ProblemExtras {
  if (language === baseLanguage || !isCustomerCode(body.code)) return body;
  const entry = problemCatalogue[body.code];
  const errors =
    body.errors === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries(body.errors).map(([field, messages]) => [
            field,
            messages.map((message) => fieldMessage(language, message)),
          ]),
        );
  return {
    ...body,
    title: catalogue.text(language, `problem.${body.code}.title`),
    detail:
      body.detail === entry.detail
        ? catalogue.text(language, `problem.${body.code}.detail`)
        : translated(details, language, body.detail),
    ...(errors !== undefined && { errors }),
  };
}
