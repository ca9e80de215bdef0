import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { describeLegacyHash, legacyHashLimits, verifyLegacyHash } from '../../src/auth/rules/legacy-hashes.cjs';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { testArgon2 } from '../helpers/argon2.js';

/**
 * Other systems' password hashes, checked by the code that checks them at sign-in, against hashes
 * their own software made (test/fixtures/legacy-hashes.json, written by
 * scripts/legacy-hash-vectors.sh with PHP, WordPress's and Magento's algorithms, Django and
 * passlib): never hashes this service made itself.
 */

interface Vector {
  format: string;
  source: string;
  password: string;
  hash: string;
}

const vectors = JSON.parse(
  fs.readFileSync(new URL('../fixtures/legacy-hashes.json', import.meta.url), 'utf8'),
) as Vector[];

/** A vector's hash with its cost field replaced, to test the limits on hashes of a real shape. */
function withCost(hash: string, pattern: RegExp, cost: string): string {
  const changed = hash.replace(pattern, cost);
  assert.notEqual(changed, hash);
  return changed;
}

const sourceOf = (format: string, source: RegExp) => vectors.find((v) => v.format === format && source.test(v.source))!;

describe('legacy password hashes', () => {
  test('the fixtures hold every format an import takes, in two passwords (one beyond ASCII)', () => {
    const formats = new Set(vectors.map((vector) => vector.format));
    for (const format of [
      'argon2',
      'bcrypt',
      'wordpress-bcrypt',
      'phpass',
      'magento',
      'django-pbkdf2-sha256',
      'django-argon2',
      'django-bcrypt-sha256',
      'pbkdf2-sha256',
      'pbkdf2-sha512',
      'scrypt',
    ])
      assert.ok(formats.has(format), format);
    for (const prefix of ['$2a$', '$2b$', '$2y$', '$P$', '$H$', '$argon2i$', '$argon2id$', '$pbkdf2-sha256$i='])
      assert.ok(
        vectors.some((vector) => vector.hash.startsWith(prefix)),
        prefix,
      );
    for (const version of [':1', ':2', ':3_32_2_67108864', ':1:3_32_2_67108864'])
      assert.ok(
        vectors.some((vector) => vector.format === 'magento' && vector.hash.endsWith(version)),
        version,
      );
    assert.ok(vectors.some((vector) => !/^[\x20-\x7e]*$/.test(vector.password)));
  });

  for (const vector of vectors) {
    test(`${vector.source}: its password matches and another does not`, () => {
      const described = describeLegacyHash(vector.hash);
      assert.ok('format' in described, JSON.stringify(described));
      assert.equal(described.format, vector.format);
      assert.equal(verifyLegacyHash(vector.hash, vector.password), true);
      assert.equal(verifyLegacyHash(vector.hash, `${vector.password}!`), false);
      assert.equal(verifyLegacyHash(vector.hash, vector.password.toUpperCase()), false);
    });
  }

  test('the hashing threads check them with the password as typed, and the hasher wants each re-hashed', async () => {
    const hasher = createArgon2Hasher(testArgon2);
    for (const vector of vectors) {
      assert.equal(await hasher.verify(vector.hash, vector.password), true, vector.source);
      assert.equal(await hasher.verify(vector.hash, 'not the password 1'), false, vector.source);
      assert.equal(hasher.needsRehash(vector.hash), true, vector.source);
    }
    // A check in a store's lane is the same check.
    const [first] = vectors;
    assert.equal(await hasher.lane('store-1').verify(first!.hash, first!.password), true);
  });

  test('a hash whose check would hold a thread too long is refused, with the limit named', () => {
    const bcrypt = sourceOf('bcrypt', /\$2y\$/).hash;
    assert.match(refusalOf(withCost(bcrypt, /^\$2y\$10\$/, '$2y$15$')), /bcrypt cost 15 is above 14/);
    assert.ok('format' in describeLegacyHash(withCost(bcrypt, /^\$2y\$10\$/, '$2y$14$')));
    const wordpress = sourceOf('wordpress-bcrypt', /WordPress/).hash;
    assert.match(refusalOf(withCost(wordpress, /^\$wp\$2y\$10\$/, '$wp$2y$16$')), /bcrypt cost 16/);
    const django = sourceOf('django-pbkdf2-sha256', /Django/).hash;
    assert.match(refusalOf(withCost(django, /\$\d+\$/, '$10000001$')), /PBKDF2 iterations above 10000000/);
    const phc = sourceOf('pbkdf2-sha256', /PHC string/).hash;
    assert.match(refusalOf(withCost(phc, /i=100000/, 'i=20000000')), /PBKDF2 iterations above/);
    const phpass = sourceOf('phpass', /\$P\$/).hash;
    // The fourth character is the cost, log2 in phpass's alphabet: 'Q' is 2^22.
    assert.match(refusalOf(`${phpass.slice(0, 3)}Q${phpass.slice(4)}`), /phpass cost above 2\^20/);
    const argon2 = sourceOf('argon2', /ARGON2ID/).hash;
    assert.match(refusalOf(withCost(argon2, /m=65536/, 'm=1048576')), /argon2 memory above/);
    const scrypt = sourceOf('scrypt', /passlib/).hash;
    assert.match(refusalOf(withCost(scrypt, /ln=14/, 'ln=22')), /scrypt memory above/);
    const magento = sourceOf('magento', /version 3/).hash;
    assert.match(refusalOf(withCost(magento, /_67108864$/, '_1073741824')), /argon2 memory above/);
    assert.equal(legacyHashLimits.bcryptCost, 14);
    assert.equal(legacyHashLimits.pbkdf2Iterations, 10_000_000);
  });

  test('a hash in no known format is refused, never kept to lock its customer out', () => {
    for (const hash of [
      '',
      'plain text password',
      '5f4dcc3b5aa765d61d8327deb882cf99',
      '$1$abcdefgh$abcdefghijklmnopqrstuv',
      '$2b$10$short',
      '$P$Bshort',
      'sha1$salt$hash',
      'pbkdf2_sha256$many$salt$hash',
      '0123abcd:salt:9',
    ])
      assert.ok('refused' in describeLegacyHash(hash), hash);
    assert.throws(() => verifyLegacyHash('plain text password', 'x'), /legacy hash refused/);
  });
});

function refusalOf(hash: string): string {
  const described = describeLegacyHash(hash);
  return 'refused' in described ? described.refused : `accepted as ${described.format}`;
}
