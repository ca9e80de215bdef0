/**
 * Digits as people type them. Arabic keyboards type Arabic-Indic (U+0660–U+0669) or Extended
 * Arabic-Indic (U+06F0–U+06F9, Persian and Urdu) digits, so a code or a phone number written with
 * them means the ASCII digits. No other script's digits are mapped: full-width, Devanagari,
 * superscript or mathematical digits are look-alikes that no Arabic keyboard types, and guessing
 * them would let one code or number be spelled many ways; the rules that follow refuse them.
 */

const arabicIndicZero = 0x0660;
const extendedArabicIndicZero = 0x06f0;
const arabicDigit = /[\u0660-\u0669\u06f0-\u06f9]/gu;

/** `text` with each Arabic-Indic and Extended Arabic-Indic digit replaced by its ASCII digit. */
export function asciiDigits(text: string): string {
  return text.replace(arabicDigit, (digit) => {
    const code = digit.charCodeAt(0);
    return String(code - (code >= extendedArabicIndicZero ? extendedArabicIndicZero : arabicIndicZero));
  });
}
