import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FieldError, storeLanguage, storeName, storeSmsSender } from '../../src/store/fields.js';

describe('a store’s fields as operators write them', () => {
  test('a name or SMS sender holding a direction control is refused: it would reorder the messages around it', () => {
    // "Shop\u202E: Your Shop\u202E verification code is 123456" shows the code reversed.
    for (const control of [
      '\u202e',
      '\u202b',
      '\u2066',
      '\u2067',
      '\u2068',
      '\u2069',
      '\u200e',
      '\u200f',
      '\u061c',
      '\u0085',
    ]) {
      assert.throws(() => storeName(`Shop${control}`), FieldError, JSON.stringify(control));
      assert.throws(() => storeSmsSender(`Shop${control}`), FieldError, JSON.stringify(control));
    }
    assert.equal(storeName('  متجر الكتب  '), 'متجر الكتب');
  });

  test('a language is named by its canonical tag, whatever its case; an unknown one is refused', () => {
    assert.equal(storeLanguage(' AR '), 'ar');
    assert.equal(storeLanguage('En'), 'en');
    assert.throws(() => storeLanguage('xx'), /"xx" is not a language this service speaks \(ar, en\)/);
    assert.throws(() => storeLanguage('not a tag'), FieldError);
  });
});
