import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  displayIdentity,
  maskIdentity,
  maxIdentityLength,
  normalizeEmail,
  normalizeIdentity,
  normalizePhone,
} from '../../src/auth/rules/identity.js';

const label63 = (c: string) => c.repeat(63);
/** An address of exactly `length` characters: a long local part and three 63-character labels. */
function emailOfLength(length: number): string {
  const domain = `${label63('b')}.${label63('c')}.${label63('d')}`;
  return `${'a'.repeat(length - 1 - domain.length)}@${domain}`;
}

describe('normalizeEmail', () => {
  const accepted: Array<[string, string, string]> = [
    ['a plain address', 'ada@example.com', 'ada@example.com'],
    ['mixed case, lowercased', 'Ada.Lovelace@Example.COM', 'ada.lovelace@example.com'],
    ['surrounding spaces, trimmed', '  ada@example.com  ', 'ada@example.com'],
    ['surrounding tabs and newlines, trimmed', '\tada@example.com\n', 'ada@example.com'],
    ['plus addressing', 'ada+shop@example.com', 'ada+shop@example.com'],
    [
      'the WHATWG local-part punctuation',
      "o'brien!#$%&*/=?^_`{|}~-@example.com",
      "o'brien!#$%&*/=?^_`{|}~-@example.com",
    ],
    ['a dotless domain (allowed by WHATWG)', 'ada@localhost', 'ada@localhost'],
    ['a hyphen inside a label', 'ada@my-shop.example', 'ada@my-shop.example'],
    ['a digit-only label', 'ada@123.example', 'ada@123.example'],
    ['a 63-character label', `ada@${label63('x')}.com`, `ada@${label63('x')}.com`],
    ['a 254-character address', emailOfLength(254), emailOfLength(254)],
    ['a 254-character address once trimmed', `   ${emailOfLength(254)}   `, emailOfLength(254)],
    ['an internationalized domain, in its IDNA ASCII form', 'ada@bücher.example', 'ada@xn--bcher-kva.example'],
    ['an internationalized domain in capitals', 'Ada@BÜCHER.Example', 'ada@xn--bcher-kva.example'],
    ['a domain already in IDNA ASCII form', 'ada@XN--BCHER-KVA.example', 'ada@xn--bcher-kva.example'],
    ['an Arabic domain', 'ada@مثال.example', 'ada@xn--mgbh0fb.example'],
    ['an internationalized top-level domain', 'ada@example.рф', 'ada@example.xn--p1ai'],
    ['full-width letters and dot, mapped as IDNA maps them', 'ada@ｅｘａｍｐｌｅ。com', 'ada@example.com'],
  ];
  for (const [label, raw, expected] of accepted) {
    test(`accepts ${label}`, () => {
      assert.equal(normalizeEmail(raw), expected);
    });
  }

  const refused: Array<[string, string]> = [
    ['the empty string', ''],
    ['only spaces', '   '],
    ['no @', 'ada.example.com'],
    ['nothing before @', '@example.com'],
    ['nothing after @', 'ada@'],
    ['two @', 'ada@@example.com'],
    ['two addresses', 'ada@example.com@evil.example'],
    ['a space inside', 'ada lovelace@example.com'],
    ['a newline inside', 'ada@exa\nmple.com'],
    ['a label starting with a hyphen', 'ada@-example.com'],
    ['a label ending with a hyphen', 'ada@example-.com'],
    ['an empty label', 'ada@example..com'],
    ['a trailing dot', 'ada@example.com.'],
    ['an underscore in the domain', 'ada@exa_mple.com'],
    ['a 64-character label', `ada@${'x'.repeat(64)}.com`],
    ['a non-ASCII local part', 'adà@example.com'],
    ['a broken A-label (xn-- that does not decode)', 'ada@xn--zz.example'],
    ['an empty A-label', 'ada@xn--.example'],
    ['a right-to-left mark in the domain', 'ada@\u200fexample.com'],
    ['a right-to-left mark around the address', '\u200fada@example.com\u200f'],
    ['a zero-width joiner in the domain', 'ada@exa\u200dmple.com'],
    ['a domain that IDNA reads as an IPv4 address', 'ada@１２３'],
    ['a space in an internationalized domain', 'ada@bü cher.example'],
    [
      'an internationalized domain whose ASCII form is over 254 characters',
      `a@${Array(4).fill('ü'.repeat(57)).join('.')}`,
    ],
    ['angle brackets (display-name form)', 'Ada <ada@example.com>'],
    ['a quoted local part', '"ada"@example.com'],
    ['a 255-character address', emailOfLength(255)],
    ['a very long address', `${'a'.repeat(5000)}@example.com`],
  ];
  for (const [label, raw] of refused) {
    test(`refuses ${label}`, () => {
      assert.equal(normalizeEmail(raw), null);
    });
  }

  test('the length limit is the contract’s 254 characters', () => {
    assert.equal(maxIdentityLength, 254);
    assert.equal(emailOfLength(254).length, 254);
    assert.equal(emailOfLength(255).length, 255);
  });
});

describe('normalizePhone', () => {
  const accepted: Array<[string, string, string]> = [
    ['compact E.164', '+16502530000', '+16502530000'],
    ['spaces', '+1 650 253 0000', '+16502530000'],
    ['parentheses and a dash', '+1 (650) 253-0000', '+16502530000'],
    ['dots', '+1.650.253.0000', '+16502530000'],
    ['surrounding spaces', '  +16502530000  ', '+16502530000'],
    ['a UK number', '+44 20 7946 0958', '+442079460958'],
    ['a French mobile', '+33 6 12 34 56 78', '+33612345678'],
    ['a German number', '+49 30 123456', '+4930123456'],
    ['a Japanese number with dashes', '+81 3-1234-5678', '+81312345678'],
    ['an Australian number', '+61 2 9876 5432', '+61298765432'],
  ];
  for (const [label, raw, expected] of accepted) {
    test(`accepts ${label} and gives E.164`, () => {
      const normalized = normalizePhone(raw);
      assert.equal(normalized, expected);
      assert.match(normalized ?? '', /^\+[1-9][0-9]{1,14}$/);
    });
  }

  const refused: Array<[string, string]> = [
    ['the empty string', ''],
    ['a lone plus', '+'],
    ['a national number without +', '650 253 0000'],
    ['digits without +', '16502530000'],
    ['an international 00 prefix instead of +', '0044 20 7946 0958'],
    ['an impossible North American number', '+1 555 0000'],
    ['a number in an unassigned area code', '+1 555 555 5555'],
    ['an unassigned country code', '+999 123456'],
    ['letters (vanity spelling)', '+1 650 CALL NOW'],
    ['a trailing letter', '+1 650 253 000a'],
    ['an extension', '+16502530000x12'],
    ['two plus signs', '++16502530000'],
    ['slashes', '+1/650/253/0000'],
    ['too many digits', '+1 650 253 0000 0000'],
    ['an over-long input', `+1 650 253 0000${' '.repeat(300)}0`],
  ];
  for (const [label, raw] of refused) {
    test(`refuses ${label}`, () => {
      assert.equal(normalizePhone(raw), null);
    });
  }
});

describe('normalizePhone with digits as people type them', () => {
  const accepted: Array<[string, string]> = [
    ['Arabic-Indic digits', '+١ ٦٥٠ ٢٥٣ ٠٠٠٠'],
    ['Extended Arabic-Indic digits', '+۱ ۶۵۰ ۲۵۳ ۰۰۰۰'],
    ['Arabic-Indic and ASCII digits mixed', '+1 ٦٥٠ 253 ۰۰۰۰'],
  ];
  for (const [label, raw] of accepted) {
    test(`reads ${label} as the same number`, () => assert.equal(normalizePhone(raw), '+16502530000'));
  }

  const refused: Array<[string, string]> = [
    ['full-width digits', '+１ ６５０ ２５３ ００００'],
    ['a full-width plus', '＋1 650 253 0000'],
    ['Devanagari digits', '+१ ६५० २५३ ००००'],
    ['mathematical digits', '+𝟏 𝟔𝟓𝟎 𝟐𝟓𝟑 𝟎𝟎𝟎𝟎'],
    ['superscript digits', '+¹ ⁶⁵⁰ ²⁵³ ⁰⁰⁰⁰'],
    ['one full-width digit among Arabic-Indic ones', '+١ ٦٥٠ ٢٥٣ ٠٠٠０'],
    ['a right-to-left mark', '\u200f+١ ٦٥٠ ٢٥٣ ٠٠٠٠'],
  ];
  for (const [label, raw] of refused) {
    test(`refuses ${label}`, () => assert.equal(normalizePhone(raw), null));
  }
});

describe('normalizeIdentity', () => {
  test('follows the store’s identity mode', () => {
    assert.equal(normalizeIdentity('email', ' Ada@Example.com '), 'ada@example.com');
    assert.equal(normalizeIdentity('email', '+16502530000'), null);
    assert.equal(normalizeIdentity('phone', '+1 (650) 253-0000'), '+16502530000');
    assert.equal(normalizeIdentity('phone', 'ada@example.com'), null);
  });
});

describe('maskIdentity', () => {
  const cases: Array<[string, 'email' | 'phone', string, string]> = [
    ['an email: first character and domain', 'email', 'ada@example.com', 'a•••@example.com'],
    ['a one-character local part', 'email', 'a@example.com', 'a•••@example.com'],
    ['a long local part hides its length', 'email', 'augusta.ada.king@example.com', 'a•••@example.com'],
    ['a non-ASCII first character stays whole', 'email', 'é@x.org', 'é•••@x.org'],
    ['a UK number: country code and last two digits', 'phone', '+447911123458', '+44•••••••58'],
    ['a US number', 'phone', '+14155550123', '+1•••••••23'],
    ['an internationalized domain, in Unicode', 'email', 'ada@xn--bcher-kva.example', 'a•••@bücher.example'],
  ];
  for (const [name, mode, value, masked] of cases) {
    test(name, () => assert.equal(maskIdentity(mode, value), masked));
  }
});

describe('displayIdentity', () => {
  const cases: Array<[string, 'email' | 'phone', string, string]> = [
    ['an ASCII address, unchanged', 'email', 'ada@example.com', 'ada@example.com'],
    ['an internationalized domain, in Unicode', 'email', 'ada@xn--bcher-kva.example', 'ada@bücher.example'],
    ['an Arabic domain', 'email', 'ada@xn--mgbh0fb.example', 'ada@مثال.example'],
    ['a digit-only label, not read as an address', 'email', 'ada@123', 'ada@123'],
    ['a stored A-label that does not decode, as stored', 'email', 'ada@xn--zz.example', 'ada@xn--zz.example'],
    ['a phone number, unchanged', 'phone', '+14155550123', '+14155550123'],
    // A Cyrillic а among Latin letters would pass for paypal.com: shown as stored, as browsers do.
    ['a label mixing scripts, as stored', 'email', 'ada@xn--pypal-4ve.com', 'ada@xn--pypal-4ve.com'],
    ['Japanese’s three scripts in one label, in Unicode', 'email', 'a@xn--eckwd4c7c.jp', 'a@ドメイン.jp'],
    ['a Greek domain, in Unicode', 'email', 'a@xn--hxajbheg2az3al.gr', 'a@παράδειγμα.gr'],
  ];
  for (const [name, mode, value, shown] of cases) {
    test(name, () => assert.equal(displayIdentity(mode, value), shown));
  }

  test('an invisible character in a domain is refused, not dropped as IDNA would drop it', () => {
    for (const invisible of ['\u200b', '\u00ad', '\u2060', '\ufe0f', '\u200d'])
      assert.equal(normalizeEmail(`ada@bü${invisible}cher.example`), null, JSON.stringify(invisible));
  });

  test('shows every accepted form of one address the same way', () => {
    const forms = ['ada@bücher.example', 'ADA@BÜCHER.EXAMPLE', 'ada@xn--bcher-kva.example'];
    const shown = forms.map((form) => displayIdentity('email', normalizeEmail(form)!));
    assert.deepEqual(shown, ['ada@bücher.example', 'ada@bücher.example', 'ada@bücher.example']);
  });
});
