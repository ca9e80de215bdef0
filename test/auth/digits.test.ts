import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { asciiDigits } from '../../src/auth/rules/digits.js';

describe('asciiDigits', () => {
  const mapped: Array<[string, string, string]> = [
    ['Arabic-Indic digits', '٠١٢٣٤٥٦٧٨٩', '0123456789'],
    ['Extended Arabic-Indic digits', '۰۱۲۳۴۵۶۷۸۹', '0123456789'],
    ['both sets and ASCII mixed', '1٢۳4', '1234'],
    ['a phone number with its punctuation', '+٩٦٦ ٥٠ ١٢٣ ٤٥٦٧', '+966 50 123 4567'],
    ['ASCII text, unchanged', 'ada@example.com 42', 'ada@example.com 42'],
  ];
  for (const [label, typed, expected] of mapped) {
    test(`reads ${label} as ASCII`, () => assert.equal(asciiDigits(typed), expected));
  }

  const untouched: Array<[string, string]> = [
    ['full-width digits', '１２３４５６'],
    ['Devanagari digits', '१२३४५६'],
    ['Bengali digits', '১২৩৪৫৬'],
    ['superscript digits', '¹²³⁴⁵⁶'],
    ['mathematical bold digits', '𝟏𝟐𝟑𝟒𝟓𝟔'],
    ['circled digits', '①②③④⑤⑥'],
    ['Arabic letters beside the digits', 'ابجد'],
    ['the Arabic decimal and thousands separators', '٫٬'],
    ['right-to-left and Arabic letter marks', '\u200f\u061c\u200e'],
  ];
  for (const [label, typed] of untouched) {
    test(`leaves ${label} as they are, for the rules to refuse`, () => assert.equal(asciiDigits(typed), typed));
  }
});
