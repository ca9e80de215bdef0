import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { checkCatalogue } from '../../src/i18n/check.js';
import { negotiate } from '../../src/i18n/negotiate.js';
import { Catalogue, catalogue, isPlural, localesDir, type Strings } from '../../src/i18n/strings.js';
import { repoRoot } from '../helpers/service-process.js';

/** A folder holding the shipped English file and, as `<tag>.json`, the file given. */
function folderWith(files: Record<string, Strings>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'locales-'));
  fs.copyFileSync(path.join(localesDir, 'en.json'), path.join(dir, 'en.json'));
  for (const [tag, strings] of Object.entries(files))
    fs.writeFileSync(path.join(dir, `${tag}.json`), JSON.stringify(strings, null, 2));
  return dir;
}

const english = (): Strings => JSON.parse(fs.readFileSync(path.join(localesDir, 'en.json'), 'utf8')) as Strings;

/**
 * The English file with each text passed through `change`, as a translator copying it would start;
 * plural forms French needs and English lacks (`many`, "1 000 000 de minutes") are written too.
 */
function translated(change: (text: string) => string): Strings {
  const walk = (strings: Strings): Strings =>
    Object.fromEntries(
      Object.entries(strings).map(([key, value]) => {
        if (typeof value === 'string') return [key, change(value)];
        const inner = walk(value as Strings);
        return [key, isPlural(value) ? { many: inner['other']!, ...inner } : inner];
      }),
    );
  return { ...walk(english()), meta: { name: 'Français', direction: 'ltr' } };
}

/** Some plural strings of the shipped English file, by key. */
function pluralKeys(strings: Strings, prefix = ''): string[] {
  return Object.entries(strings).flatMap(([key, value]) =>
    typeof value === 'string'
      ? []
      : typeof value.other === 'string'
        ? [prefix + key]
        : pluralKeys(value as Strings, `${prefix}${key}.`),
  );
}

describe('the strings of every language', () => {
  test('the shipped files are whole: every key of English, the same placeholders, every plural form', () => {
    assert.deepEqual(checkCatalogue(catalogue), []);
    assert.deepEqual([...catalogue.languages], ['ar', 'en']);
    assert.equal(catalogue.direction('ar'), 'rtl');
    assert.equal(catalogue.direction('en'), 'ltr');
  });

  test('`npm run check:strings` fails, naming the key, on a missing, extra or broken string', async () => {
    const french = translated((text) => `«${text}»`);
    const firstSection = Object.keys(english()).find((key) => key !== 'meta')!;
    const section = french[firstSection] as Strings;
    const firstKey = Object.keys(section)[0]!;
    delete section[firstKey];
    french['invented'] = 'Un texte que personne ne lit';
    const dir = folderWith({ fr: french });
    const run = promisify(execFile)('node', ['--import', 'tsx', 'scripts/check-strings.ts', dir], { cwd: repoRoot });
    const failure = await run.then(
      () => assert.fail('the check passed'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failure.code, 1);
    assert.match(failure.stderr, new RegExp(`fr\\.json: ${firstSection}\\.${firstKey}.*: missing`));
    assert.match(failure.stderr, /fr\.json: invented: not in English/);
  });

  test('a lost placeholder and a missing plural form are caught', () => {
    const broken = translated((text) => text.replace(/\{\w+\}/, ''));
    const plural = pluralKeys(english())[0];
    const problems = checkCatalogue(Catalogue.read(folderWith({ fr: broken })));
    assert.ok(
      problems.some((problem) => /fr\.json: .*the placeholder \{\w+\} is missing/.test(problem)),
      problems.join('\n'),
    );
    if (plural !== undefined) {
      // Arabic needs six forms; English's two are not enough.
      const arabic = { ...english(), meta: { name: 'العربية', direction: 'rtl' } };
      const found = checkCatalogue(Catalogue.read(folderWith({ ar: arabic })));
      assert.ok(
        found.some((problem) => problem.startsWith(`ar.json: ${plural}: the plural form "few" is missing`)),
        found.join('\n'),
      );
    }
  });

  test('a translator adds French by copying one file: it is found, negotiated and read, with fallbacks for nothing', () => {
    const dir = folderWith({ fr: translated((text) => `[fr] ${text}`) });
    const withFrench = Catalogue.read(dir);
    assert.deepEqual(checkCatalogue(withFrench), []);
    assert.deepEqual([...withFrench.languages], ['en', 'fr']);
    const store = { languages: ['en', 'fr'], defaultLanguage: 'en' };
    assert.equal(negotiate('fr-CA,fr;q=0.9,en;q=0.5', store), 'fr');
    assert.equal(negotiate('de', store), 'en');
    const key = 'meta.name';
    assert.equal(withFrench.text('fr', key), 'Français');
    const plural = pluralKeys(english())[0];
    if (plural !== undefined) assert.match(withFrench.text('fr', plural, { count: 2 }), /^\[fr\] /);
  });

  test('a plural form for many numbers that leaves out {count} is caught; one for a single number may', () => {
    const dir = folderWith({
      ar: {
        ...english(),
        meta: { name: 'العربية', direction: 'rtl' },
      },
    });
    const plural = pluralKeys(english())[0];
    if (plural === undefined) return;
    const arabic = JSON.parse(fs.readFileSync(path.join(localesDir, 'ar.json'), 'utf8')) as Strings;
    const parts = plural.split('.');
    const forms = parts.reduce<Strings>((section, part) => section[part] as Strings, arabic);
    forms['one'] = 'واحد';
    forms['few'] = 'بضعة';
    fs.writeFileSync(path.join(dir, 'ar.json'), JSON.stringify(arabic));
    const problems = checkCatalogue(Catalogue.read(dir));
    assert.deepEqual(
      problems.filter((problem) => problem.includes(plural)),
      [`ar.json: ${plural}: the plural form "few" must hold {count}`],
    );
  });

  test('plural forms follow each language’s rules', () => {
    const dir = folderWith({
      ar: {
        meta: { name: 'العربية', direction: 'rtl' },
        minutes: {
          zero: 'لا دقائق',
          one: 'دقيقة واحدة',
          two: 'دقيقتان',
          few: '{count} دقائق',
          many: '{count} دقيقة',
          other: '{count} دقيقة',
        },
      },
    });
    const strings = Catalogue.read(dir);
    assert.equal(strings.text('ar', 'minutes', { count: 1 }), 'دقيقة واحدة');
    assert.equal(strings.text('ar', 'minutes', { count: 2 }), 'دقيقتان');
    assert.equal(strings.text('ar', 'minutes', { count: 3 }), '3 دقائق');
    assert.equal(strings.text('ar', 'minutes', { count: 11 }), '11 دقيقة');
    assert.equal(strings.text('ar', 'minutes', { count: 0 }), 'لا دقائق');
    assert.throws(() => strings.text('ar', 'no.such.key'), /no string no\.such\.key/);
  });
});
