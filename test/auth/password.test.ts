import { fieldPhrase } from '../../src/auth/rules/field-phrase.js';
import type { Phrase } from '../../src/i18n/strings.js';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HashPool, sharedHashPool } from '../../src/auth/rules/hash-pool.js';
import {
  createArgon2Hasher,
  dummyPasswordHash,
  HasherBusyError,
  isCommonPassword,
  newPasswordProblems,
  productionArgon2,
} from '../../src/auth/rules/password.js';
import { testArgon2 } from '../helpers/argon2.js';

describe('newPasswordProblems', () => {
  const fine: Array<[string, string]> = [
    ['eight characters with a letter and a digit', 'zq7vbnmk'],
    ['a passphrase with spaces', 'analytical engine 1843'],
    ['Cyrillic letters and digits', 'пароль-зима-2024'],
    ['Japanese letters and a digit', '日本語のひみつ言葉7'],
    ['Greek letters and digits', 'κωδικός-42-φως'],
    ['fullwidth letters and digits (NFKC makes them ASCII)', 'ｚｑ７ｖｂｎｍｋ'],
    ['exactly 255 code points', `a1${'z'.repeat(253)}`],
    ['255 code points that take 510 UTF-16 units', `a1${'𝒳'.repeat(253)}`],
    ['a ligature that NFKC expands to reach eight', 'ﬃﬃ12'],
  ];
  for (const [label, password] of fine) {
    test(`accepts ${label}`, () => {
      assert.deepEqual(newPasswordProblems(password), []);
    });
  }

  const tooShort: Array<[string, string]> = [
    ['seven characters', 'zq7vbnm'],
    ['seven code points that are ten UTF-16 units', '😀😀😀a1bc'],
    ['a ligature that NFKC expands to only seven', 'ﬃﬃ1'],
    ['the empty string', ''],
  ];
  for (const [label, password] of tooShort) {
    test(`refuses ${label} as too short`, () => {
      const problems = newPasswordProblems(password);
      assert.ok(problems.length > 0);
      assert.ok(
        problems.some((p) => p.key === 'field.min_length' && p.params?.['count'] === 8),
        JSON.stringify(problems),
      );
    });
  }

  test('refuses 256 code points as too long, and never truncates', () => {
    const problems = newPasswordProblems(`a1${'z'.repeat(254)}`);
    assert.ok(
      problems.some((p) => p.key === 'field.max_length' && p.params?.['count'] === 255),
      JSON.stringify(problems),
    );
  });

  test('counts length in code points after NFKC, not in UTF-16 units or before normalization', () => {
    assert.equal([...'ﬃﬃ12'].length, 4);
    assert.equal([...'ﬃﬃ12'.normalize('NFKC')].length, 8);
    assert.deepEqual(newPasswordProblems('ﬃﬃ12'), []);
    assert.equal('😀😀😀a1bc'.length, 10);
    assert.ok(newPasswordProblems('😀😀😀a1bc').length > 0, 'seven code points are too short');
  });

  const noNumber = fieldPhrase('password_number');
  const noLetter = fieldPhrase('password_letter');
  const missingClass: Array<[string, string, Phrase]> = [
    ['letters only', 'onlyletterswithoutdigits', noNumber],
    ['digits only', '98127364501', noLetter],
    ['punctuation and digits', '!!--1234--!!', noLetter],
    ['letters and punctuation', 'letters-and-punctuation!', noNumber],
  ];
  for (const [label, password, missing] of missingClass) {
    test(`refuses ${label}, naming exactly what is missing`, () => {
      assert.deepEqual(newPasswordProblems(password), [missing]);
    });
  }

  test('names both a missing letter and a missing number', () => {
    assert.deepEqual(newPasswordProblems('!!--!!--!!'), [noLetter, noNumber]);
  });

  test('counts a fullwidth digit as a digit', () => {
    assert.deepEqual(newPasswordProblems('lettersonly１'), []);
    assert.equal(newPasswordProblems('lettersonly').length, 1);
  });

  const common = [
    'password1',
    'Password1',
    'PASSWORD1',
    'qwerty123',
    'abc12345',
    'passw0rd',
    'P4ssw0rd',
    'trustno1',
    'letmein1',
    '1qaz2wsx',
    'ｐａｓｓｗｏｒｄ１',
  ];
  for (const password of common) {
    test(`refuses the common password ${password}`, () => {
      const problems = newPasswordProblems(password);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.ok(isCommonPassword(password));
    });
  }

  test('gives one problem per rule broken and an empty list only for a good password', () => {
    assert.equal(newPasswordProblems('abc').length, 2, 'too short and no digit');
    assert.equal(newPasswordProblems('123').length, 2, 'too short and no letter');
    assert.equal(newPasswordProblems('!!!!').length, 3, 'too short, no letter and no digit');
  });
});

describe('isCommonPassword', () => {
  test('knows at least the 10,000 most common passwords, case-insensitively', () => {
    for (const password of [
      'password',
      'PASSWORD',
      '123456',
      'qwerty',
      'iloveyou',
      'Dragon',
      'monkey',
      'letmein',
      'welcome1',
    ]) {
      assert.equal(isCommonPassword(password), true, password);
    }
  });

  test('does not flag uncommon passphrases', () => {
    for (const password of ['analytical engine 1843', 'zq7vbnmk', 'correct horse battery 9', 'пароль-зима-2024']) {
      assert.equal(isCommonPassword(password), false, password);
    }
  });
});

describe('createArgon2Hasher', () => {
  test('with production parameters makes an argon2id PHC hash with m=19456, t=2, p=1 that verifies', async () => {
    assert.deepEqual(productionArgon2, { memoryCost: 19_456, timeCost: 2, parallelism: 1 });
    const hasher = createArgon2Hasher();
    const hash = await hasher.hash('analytical engine 1843');
    assert.match(hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
    assert.ok(!hash.includes('analytical'));
    assert.equal(await hasher.verify(hash, 'analytical engine 1843'), true);
    assert.equal(await hasher.verify(hash, 'analytical engine 1844'), false);
    assert.equal(hasher.needsRehash(hash), false);
  });

  test('salts every hash and verifies only the right password', async () => {
    const hasher = createArgon2Hasher(testArgon2);
    const first = await hasher.hash('difference engine 1822');
    const second = await hasher.hash('difference engine 1822');
    assert.notEqual(first, second);
    assert.equal(await hasher.verify(first, 'difference engine 1822'), true);
    assert.equal(await hasher.verify(second, 'difference engine 1822'), true);
    assert.equal(await hasher.verify(first, 'Difference engine 1822'), false);
    assert.equal(await hasher.verify(first, ''), false);
  });

  test('normalizes with NFKC before hashing, so compatible forms verify each other', async () => {
    const hasher = createArgon2Hasher(testArgon2);
    const hash = await hasher.hash('ｚｑ７ｖｂｎｍｋ');
    assert.equal(await hasher.verify(hash, 'zq7vbnmk'), true);
    const composed = await hasher.hash('caf\u00e9 latte 42');
    assert.equal(await hasher.verify(composed, 'cafe\u0301 latte 42'), true);
  });

  test('refuses a password that is not well-formed Unicode instead of hashing it as if it held U+FFFD', async () => {
    const hasher = createArgon2Hasher(testArgon2);
    const base = 'analytical engine 1843';
    const replacement = await hasher.hash(`${base}\ufffd`);
    for (const surrogate of ['\ud800', '\udbff', '\udc00', '\udfff']) {
      await assert.rejects(hasher.hash(`${base}${surrogate}`), TypeError);
      await assert.rejects(hasher.verify(replacement, `${base}${surrogate}`), TypeError);
      await assert.rejects(hasher.verifyDummy(`${base}${surrogate}`), TypeError);
    }
    assert.equal(await hasher.verify(replacement, `${base}\ufffd`), true);
    assert.equal(await hasher.verify(await hasher.hash(`${base} \u{1F527}`), `${base} \u{1F527}`), true);
  });

  test('verify answers false for a malformed stored hash instead of throwing', async () => {
    const hasher = createArgon2Hasher(testArgon2);
    assert.equal(await hasher.verify('not a hash', 'anything 1'), false);
    assert.equal(await hasher.verify('$2b$10$abcdefghijklmnopqrstuv', 'anything 1'), false);
  });

  test('verifyDummy holds a hashing slot of the same gate until it resolves', async () => {
    const hasher = createArgon2Hasher(testArgon2, { concurrency: 1, maxWaiting: 0 });
    const dummy = hasher.verifyDummy('whatever 1');
    const competing = hasher.hash('zq7vbnmk');
    await assert.rejects(competing, HasherBusyError, 'the dummy occupies the only hashing slot');
    assert.equal(await dummy, undefined);
    const afterwards = await hasher.hash('zq7vbnmk');
    assert.match(afterwards, /^\$argon2id\$/);
  });

  test('verify of a retired password (no hash) does one full verification of a real-shaped hash, as verifyDummy does, and is false', async () => {
    const given: string[] = [];
    const pool = {
      hash: sharedHashPool().hash.bind(sharedHashPool()),
      check: (hash: string, password: string) => {
        given.push(hash);
        return sharedHashPool().check(hash, password);
      },
    };
    const hasher = createArgon2Hasher(testArgon2, { pool });
    assert.equal(await hasher.verify(null, 'analytical engine 1843'), false);
    await hasher.verifyDummy('analytical engine 1843');
    assert.equal(given.length, 2);
    assert.match(given[0]!, /^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    assert.equal(given[0], given[1], 'the same dummy hash as an unknown identity');
  });

  test('the dummy hash has the shape of a real one, parses, and matches no password', async () => {
    for (const parameters of [testArgon2, productionArgon2]) {
      const real = await createArgon2Hasher(parameters).hash('zq7vbnmk');
      const dummy = dummyPasswordHash(parameters);
      const fields = (hash: string) => hash.split('$').map((field, i) => (i < 4 ? field : field.length));
      assert.deepEqual(fields(dummy), fields(real));
      // The threads reject a hash they cannot parse; a false answer means the full work was done.
      assert.equal(await sharedHashPool().verify(dummy, 'zq7vbnmk'), false);
    }
  });

  test('a dummy verification refused while the hasher is full leaves later ones working', async () => {
    const hasher = createArgon2Hasher(testArgon2, { concurrency: 1, maxWaiting: 0 });
    const occupying = hasher.hash('zq7vbnmk');
    await assert.rejects(hasher.verifyDummy('whatever 1'), HasherBusyError, 'the only slot is taken');
    await occupying;
    assert.equal(await hasher.verifyDummy('whatever 1'), undefined, 'a refusal is never remembered');
    assert.equal(await hasher.verifyDummy('whatever 2'), undefined);
  });

  test('needsRehash is true for hashes made with other parameters or another algorithm', async () => {
    const production = createArgon2Hasher(productionArgon2);
    const cheap = createArgon2Hasher(testArgon2);
    const cheapHash = await cheap.hash('analytical engine 1843');
    assert.match(cheapHash, /^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    assert.equal(cheap.needsRehash(cheapHash), false);
    assert.equal(production.needsRehash(cheapHash), true);
    const stronger = createArgon2Hasher({ memoryCost: 1024, timeCost: 2, parallelism: 1 });
    assert.equal(stronger.needsRehash(cheapHash), true);
    assert.equal(production.needsRehash('$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g'), true);
    assert.equal(production.needsRehash('$2b$12$abcdefghijklmnopqrstuu'), true);
  });

  test('refuses work beyond its concurrency and waiting limits with HasherBusyError', async () => {
    const hasher = createArgon2Hasher(testArgon2, { concurrency: 1, maxWaiting: 1 });
    const results = await Promise.allSettled([
      hasher.hash('first one 1'),
      hasher.hash('second one 2'),
      hasher.hash('third one 3'),
    ]);
    const rejected = results.filter((r) => r.status === 'rejected');
    const fulfilled = results.filter((r): r is PromiseFulfilledResult<string> => r.status === 'fulfilled');
    assert.equal(rejected.length, 1);
    assert.ok(rejected[0]?.status === 'rejected' && rejected[0].reason instanceof HasherBusyError);
    assert.equal(fulfilled.length, 2);
    for (const result of fulfilled) assert.match(result.value, /^\$argon2id\$/);

    const later = await hasher.hash('after the burst 4');
    assert.match(later, /^\$argon2id\$/, 'the slots are released once the burst is done');
  });
});

describe('createArgon2Hasher lanes', () => {
  test('a store’s hasher queues hash, verify, verify of no hash and verifyDummy in that store’s lane', async () => {
    const lanes: string[] = [];
    const shared = sharedHashPool();
    const pool = {
      hash: (password: string, options: Parameters<HashPool['hash']>[1], lane?: string) => {
        lanes.push(`hash:${lane}`);
        return shared.hash(password, options, lane);
      },
      check: (hash: string, password: string, lane?: string) => {
        lanes.push(`verify:${lane}`);
        return shared.check(hash, password, lane);
      },
    };
    const hasher = createArgon2Hasher(testArgon2, { pool });
    const store = hasher.lane('store-1');
    const hash = await store.hash('zq7vbnmk');
    assert.equal(await store.verify(hash, 'zq7vbnmk'), true);
    assert.equal(await store.verify(null, 'zq7vbnmk'), false);
    await store.verifyDummy('zq7vbnmk');
    assert.equal(store.needsRehash(hash), false);
    await hasher.hash('zq7vbnmk');
    await store.lane('store-2').verifyDummy('zq7vbnmk');
    assert.deepEqual(lanes, [
      'hash:store-1',
      'verify:store-1',
      'verify:store-1',
      'verify:store-1',
      'hash:',
      'verify:store-2',
    ]);
  });

  test('a question to the old system waits for its argon2 check, not also for the floor its own past questions set', async () => {
    // No hashing here: every check answers at once, so only a floor can hold a verification.
    const pool = {
      hash: () => Promise.reject(new Error('nothing is hashed here')),
      check: async () => ({ matches: false, ms: 1 }),
    };
    const store = createArgon2Hasher(testArgon2, { pool }).lane('store-1');
    const settledWithin = (promise: Promise<unknown>, ms: number) =>
      Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
    // A first question takes 1.5 s: the store's floor is now that.
    const slow = () => new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1_500));
    assert.equal(await store.verifyElsewhere(slow, 'zq7vbnmk'), false);
    // An unknown identity is held to it, as it should be...
    assert.equal(await settledWithin(store.verifyDummy('zq7vbnmk'), 500), false);
    // ...and a question answered at once is not: it waited for the longest of its own answer, its
    // check and a past answer, longer than an unknown identity's two.
    assert.equal(
      await settledWithin(
        store.verifyElsewhere(async () => false, 'zq7vbnmk'),
        500,
      ),
      true,
    );
  });

  test('one store’s twenty logins ahead put only one of them before another store’s', async () => {
    const pool = new HashPool(1);
    try {
      const hasher = createArgon2Hasher(testArgon2, { concurrency: 1, maxWaiting: 20, pool });
      const hash = await hasher.hash('zq7vbnmk');
      const order: string[] = [];
      const record = (label: string, check: Promise<boolean>) => check.finally(() => order.push(label));
      const a = Array.from({ length: 20 }, (_, i) => record(`A${i + 1}`, hasher.lane('A').verify(hash, 'zq7vbnmk')));
      const b = record('B1', hasher.lane('B').verify(hash, 'zq7vbnmk'));
      assert.deepEqual(await Promise.all([...a, b]), Array(21).fill(true));
      assert.ok(order.indexOf('B1') < order.indexOf('A3'), order.join(','));
    } finally {
      await pool.close();
    }
  });

  test('a flood of one store is refused at its own bound while another store’s work is still taken', async () => {
    const pool = new HashPool(1);
    try {
      const hasher = createArgon2Hasher(testArgon2, { concurrency: 1, maxWaiting: 2, pool });
      const flooded = hasher.lane('A');
      const accepted = [flooded.hash('flood one 1'), flooded.hash('flood two 2'), flooded.hash('flood three 3')];
      await assert.rejects(flooded.hash('flood four 4'), HasherBusyError, 'lane A is at its bound');
      await assert.rejects(flooded.verifyDummy('flood five 5'), HasherBusyError);
      const other = hasher.lane('B').hash('other store 1');
      const unlaned = hasher.hash('no store 1');
      for (const hash of await Promise.all([...accepted, other, unlaned])) assert.match(hash, /^\$argon2id\$/);
      assert.match(await flooded.hash('after the flood 6'), /^\$argon2id\$/, 'lane A’s slots are released');
    } finally {
      await pool.close();
    }
  });

  test('all lanes together are held to four lanes’ bound, so many stores flooding at once stay bounded', async () => {
    const pool = new HashPool(1);
    try {
      const hasher = createArgon2Hasher(testArgon2, { concurrency: 1, maxWaiting: 0, pool });
      const accepted = ['s1', 's2', 's3', 's4'].map((store) => hasher.lane(store).hash(`${store} password 1`));
      await assert.rejects(hasher.lane('s5').hash('s5 password 1'), HasherBusyError, 'the total bound is reached');
      await assert.rejects(hasher.hash('no store 1'), HasherBusyError);
      await Promise.all(accepted);
      assert.match(await hasher.lane('s5').hash('s5 password 2'), /^\$argon2id\$/, 'the total is released');
    } finally {
      await pool.close();
    }
  });
});
