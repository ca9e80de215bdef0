import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Every customer-facing text (the page, problem documents, field messages, emails and SMS) lives in
 * one JSON file per language under locales/ at the package root: `en.json`, `ar.json`, … Adding a
 * language is adding a file; `test/i18n/strings.test.ts` (part of `npm test`) fails on a missing or
 * extra key, a placeholder a translation lost or invented, or a plural form a language needs.
 *
 * A file is nested objects of strings. A string may hold `{name}` placeholders. Where a number is
 * counted, the value is an object of plural forms keyed by `Intl.PluralRules` categories (`zero`,
 * `one`, `two`, `few`, `many`, `other`; Arabic uses all six, English `one` and `other`), and
 * `{count}` is the number. `meta.name` is the language's own name, `meta.direction` `ltr` or `rtl`.
 */
export type Plural = Partial<Record<Intl.LDMLPluralRule, string>> & { other: string };
export interface Strings {
  [key: string]: string | Plural | Strings;
}
export type Params = Record<string, string | number>;

/**
 * A text named by its key, written in a language only when it reaches its reader: the rules that
 * refuse a field say what is wrong in phrases, and the answer writes them in the customer's language.
 */
export interface Phrase {
  key: string;
  params?: Params;
}

// locales/ sits at the package root, two levels above this file in both src/ and dist/.
export const localesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../locales');

const pluralCategories = new Set<string>(['zero', 'one', 'two', 'few', 'many', 'other']);

/** Whether a value is a set of plural forms rather than a section of keys. */
export function isPlural(value: string | Plural | Strings): value is Plural {
  return (
    typeof value === 'object' &&
    typeof value.other === 'string' &&
    Object.keys(value).every((key) => pluralCategories.has(key))
  );
}

/** The languages found in a folder of string files, and their strings. */
export class Catalogue {
  readonly languages: readonly string[];
  private readonly strings: ReadonlyMap<string, Strings>;
  private readonly plurals = new Map<string, Intl.PluralRules>();

  constructor(files: ReadonlyMap<string, Strings>) {
    this.strings = files;
    this.languages = [...files.keys()].sort();
  }

  /** Every `*.json` of a folder; its name (without `.json`) is the language tag. */
  static read(dir = localesDir): Catalogue {
    const files = new Map<string, Strings>();
    for (const name of fs.readdirSync(dir).filter((file) => file.endsWith('.json'))) {
      files.set(name.slice(0, -'.json'.length), JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as Strings);
    }
    if (!files.has(baseLanguage)) throw new Error(`${dir} has no ${baseLanguage}.json`);
    return new Catalogue(files);
  }

  has(language: string): boolean {
    return this.strings.has(language);
  }

  /** A language's whole file (the page takes its section of it). */
  file(language: string): Strings {
    return this.strings.get(language) ?? this.strings.get(baseLanguage)!;
  }

  direction(language: string): 'ltr' | 'rtl' {
    return this.lookup(language, 'meta.direction') === 'rtl' ? 'rtl' : 'ltr';
  }

  /** A section of a language's strings, e.g. `page`. */
  section(language: string, key: string): Strings {
    const value = this.lookup(language, key);
    if (value === undefined || typeof value === 'string' || isPlural(value)) throw new Error(`no section ${key}`);
    return value;
  }

  /**
   * The text of `key` in `language`, its placeholders filled. A key a language lacks (the check
   * keeps the shipped files whole) falls back to English; a key nobody has is a bug, so it throws.
   */
  text(language: string, key: string, params: Params = {}): string {
    let value = this.lookup(language, key);
    if (value === undefined) {
      language = baseLanguage;
      value = this.lookup(language, key);
    }
    if (value === undefined || (typeof value === 'object' && !isPlural(value))) throw new Error(`no string ${key}`);
    const template = typeof value === 'string' ? value : this.pluralForm(language, value, params.count);
    return fill(template, params);
  }

  /** A phrase written in `language`. */
  say(language: string, phrase: Phrase): string {
    return this.text(language, phrase.key, phrase.params);
  }

  private pluralForm(language: string, forms: Plural, count: string | number | undefined): string {
    if (typeof count !== 'number') throw new Error('a plural string needs a numeric {count}');
    let rules = this.plurals.get(language);
    if (rules === undefined) this.plurals.set(language, (rules = new Intl.PluralRules(language)));
    return forms[rules.select(count)] ?? forms.other;
  }

  private lookup(language: string, key: string): string | Plural | Strings | undefined {
    let value: string | Plural | Strings | undefined = this.strings.get(language);
    for (const part of key.split('.')) {
      if (value === undefined || typeof value === 'string') return undefined;
      value = (value as Strings)[part];
    }
    return value;
  }
}

/** A language tag in its canonical case (`pt-br` → `pt-BR`, as its file is named); null when it is none. */
export function canonicalTag(tag: string): string | null {
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    return null;
  }
}

/** The language every other one is checked against, and the fallback for a missing key. */
export const baseLanguage = 'en';

/** `{name}` replaced by `params.name`; a placeholder without a value stays as written. */
export function fill(template: string, params: Params): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    params[name] === undefined ? whole : String(params[name]),
  );
}

/** The shipped strings, read once. */
export const catalogue = Catalogue.read();
