import { baseLanguage, canonicalTag, isPlural, type Catalogue, type Plural, type Strings } from './strings.js';

/**
 * What is wrong with a catalogue's files, measured against English: a key missing or extra, a value
 * of the wrong kind (a text where English has plural forms, or a section), a placeholder lost or
 * invented (a message without its `{code}` is a broken message), a plural form the language's rules
 * need but the file lacks, or one they never pick. Empty when every file is whole.
 */
export function checkCatalogue(catalogue: Catalogue): string[] {
  const problems: string[] = [];
  const base = catalogue.file(baseLanguage);
  for (const language of catalogue.languages) {
    const say = (key: string, what: string) => problems.push(`${language}.json: ${key}: ${what}`);
    const canonical = canonicalTag(language);
    if (canonical !== language) {
      // The store's languages are kept canonical: a file named otherwise could never be chosen.
      say('(file name)', canonical === null ? 'not a language tag' : `name the file ${canonical}.json`);
      continue;
    }
    const file = catalogue.file(language);
    const meta = file.meta as Strings | undefined;
    if (typeof meta?.name !== 'string' || meta.name === '') say('meta.name', 'missing: the language’s own name');
    if (meta?.direction !== 'ltr' && meta?.direction !== 'rtl') say('meta.direction', 'must be "ltr" or "rtl"');
    if (language === baseLanguage) {
      for (const [key, value] of leaves(file)) if (isPlural(value)) checkPlural(language, key, value, value, say);
      continue;
    }
    const theirs = new Map(leaves(file));
    for (const [key, english] of leaves(base)) {
      if (key.startsWith('meta.')) continue;
      const value = theirs.get(key);
      theirs.delete(key);
      if (value === undefined) say(key, 'missing');
      else if (typeof english === 'string') {
        if (typeof value !== 'string') say(key, 'must be a text, as in English');
        else comparePlaceholders(placeholders(english), placeholders(value), (what) => say(key, what));
      } else if (!isPlural(value)) say(key, 'must be plural forms, as in English');
      else checkPlural(language, key, value, english, say);
    }
    for (const key of theirs.keys()) if (!key.startsWith('meta.')) say(key, 'not in English: a key no code reads');
  }
  return problems;
}

function checkPlural(
  language: string,
  key: string,
  forms: Plural,
  english: Plural,
  say: (key: string, what: string) => void,
): void {
  const needed = new Intl.PluralRules(language).resolvedOptions().pluralCategories;
  for (const category of needed)
    if (forms[category] === undefined) say(key, `the plural form "${category}" is missing`);
  for (const category of Object.keys(forms))
    if (!needed.includes(category as Intl.LDMLPluralRule)) say(key, `the plural form "${category}" is never used`);
  // Only a form for one number may leave it out ("one minute", Arabic's "two minutes"); `few`,
  // `many` and `other` cover many numbers, and without `{count}` they would not say which.
  const counts = Object.values(english).some((text) => placeholders(text!).includes('count'));
  for (const category of ['few', 'many', 'other'] as const)
    if (counts && forms[category] !== undefined && !placeholders(forms[category]).includes('count'))
      say(key, `the plural form "${category}" must hold {count}`);
  // A form may leave the number out ("one minute"), never another value.
  const englishNames = new Set(Object.values(english).flatMap((text) => placeholders(text!)));
  englishNames.delete('count');
  const theirNames = new Set(Object.values(forms).flatMap((text) => placeholders(text!)));
  theirNames.delete('count');
  comparePlaceholders([...englishNames], [...theirNames], (what) => say(key, what));
}

function comparePlaceholders(english: string[], theirs: string[], say: (what: string) => void): void {
  for (const name of english) if (!theirs.includes(name)) say(`the placeholder {${name}} is missing`);
  for (const name of theirs) if (!english.includes(name)) say(`the placeholder {${name}} is not in English`);
}

function placeholders(text: string): string[] {
  return [...new Set([...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!))];
}

/** Every text or set of plural forms of a file, by its dotted key. */
function* leaves(strings: Strings, prefix = ''): Generator<[string, string | Plural]> {
  for (const [name, value] of Object.entries(strings)) {
    const key = prefix + name;
    if (typeof value === 'string' || isPlural(value)) yield [key, value];
    else yield* leaves(value, `${key}.`);
  }
}
