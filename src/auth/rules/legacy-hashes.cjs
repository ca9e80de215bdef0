'use strict';
/*
 * Password hashes made by other systems, kept as imported and checked at sign-in until the first
 * good one replaces them with the service's own argon2id (legacy-hashes.d.cts has the types).
 *
 * Plain CommonJS on purpose: the hashing threads (hash-pool.ts) run it as it is, from the sources
 * and from the built package alike, and the main thread reads the same parsing at import time.
 * Each format is checked by its own algorithm's library where one is kept (bcrypt, argon2,
 * node:crypto for PBKDF2, scrypt and the digests); phpass has none, and is the few lines below.
 */
const crypto = require('node:crypto');
const bcrypt = require('@node-rs/bcrypt');
const argon2 = require('@node-rs/argon2');

/*
 * Above these a single sign-in would hold a hashing thread for seconds (or gigabytes): such a hash
 * is refused at import, never met at sign-in.
 */
const limits = {
  bcryptCost: 14,
  pbkdf2Iterations: 10_000_000,
  phpassLog2: 20,
  /** argon2 and scrypt memory, KiB. */
  memoryKib: 256 * 1024,
  argon2Passes: 16,
  argon2Lanes: 8,
};

const bcryptPattern = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/;
const itoa64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base64 as PHC strings (no padding), passlib (`.` for `+`) and Django (padded) write it. */
function decodeBase64(text) {
  if (!/^[A-Za-z0-9+/.]*={0,2}$/.test(text)) return null;
  return Buffer.from(text.replace(/\./g, '+'), 'base64');
}

function refused(reason) {
  return { refused: reason };
}

function bcryptFormat(hash, format) {
  const match = bcryptPattern.exec(hash);
  if (match === null) return refused(`not a bcrypt hash`);
  const cost = Number(match[1]);
  if (cost < 4) return refused('bcrypt cost below 4');
  if (cost > limits.bcryptCost) return refused(`bcrypt cost ${cost} is above ${limits.bcryptCost}`);
  return { format, check: { kind: 'bcrypt', hash } };
}

function argon2Format(phc, format) {
  let options;
  try {
    options = argon2.parseOptions(phc);
  } catch {
    return refused('not an argon2 hash');
  }
  if (options.memoryCost > limits.memoryKib) return refused(`argon2 memory above ${limits.memoryKib} KiB`);
  if (options.timeCost > limits.argon2Passes) return refused(`argon2 passes above ${limits.argon2Passes}`);
  if (options.parallelism > limits.argon2Lanes) return refused(`argon2 lanes above ${limits.argon2Lanes}`);
  return { format, check: { kind: 'argon2', hash: phc } };
}

/** `$pbkdf2-sha256$29000$salt$digest` (passlib) or `$pbkdf2-sha256$i=29000,l=32$salt$digest` (PHC). */
function phcPbkdf2(hash) {
  const match = /^\$pbkdf2-(sha256|sha512)\$(?:i=)?(\d+)(?:,l=\d+)?\$([^$]+)\$([^$]+)$/.exec(hash);
  if (match === null) return refused('not a PBKDF2 hash');
  const salt = decodeBase64(match[3]);
  const digest = decodeBase64(match[4]);
  if (salt === null || digest === null || digest.length < 16) return refused('not a PBKDF2 hash');
  return pbkdf2Check(`pbkdf2-${match[1]}`, match[1], Number(match[2]), salt, digest);
}

function pbkdf2Check(format, digestName, iterations, salt, expected) {
  if (iterations < 1) return refused('PBKDF2 iterations below 1');
  if (iterations > limits.pbkdf2Iterations) return refused(`PBKDF2 iterations above ${limits.pbkdf2Iterations}`);
  return { format, check: { kind: 'pbkdf2', digest: digestName, iterations, salt, expected } };
}

/** `$scrypt$ln=16,r=8,p=1$salt$digest`, as passlib writes it. */
function phcScrypt(hash) {
  const match = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([^$]+)\$([^$]+)$/.exec(hash);
  if (match === null) return refused('not a scrypt hash');
  const [logN, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const salt = decodeBase64(match[4]);
  const expected = decodeBase64(match[5]);
  if (salt === null || expected === null || expected.length < 16 || logN < 1 || r < 1 || p < 1)
    return refused('not a scrypt hash');
  const memoryKib = (128 * 2 ** logN * r) / 1024;
  if (logN > 30 || memoryKib > limits.memoryKib) return refused(`scrypt memory above ${limits.memoryKib} KiB`);
  if (p > 16) return refused('scrypt parallelism above 16');
  return { format: 'scrypt', check: { kind: 'scrypt', N: 2 ** logN, r, p, salt, expected, memoryKib } };
}

/** phpass (WordPress before 6.8, phpBB): `$P$` or `$H$`, a cost letter, 8 of salt, 22 of digest. */
function phpass(hash) {
  if (!/^\$[PH]\$[./A-Za-z0-9]{31}$/.test(hash)) return refused('not a phpass hash');
  const log2 = itoa64.indexOf(hash[3]);
  if (log2 < 7 || log2 > 30) return refused('not a phpass hash');
  if (log2 > limits.phpassLog2) return refused(`phpass cost above 2^${limits.phpassLog2}`);
  return { format: 'phpass', check: { kind: 'phpass', hash, rounds: 2 ** log2 } };
}

/**
 * Magento 2: `digest:salt:versions`, versions oldest first when an old hash was upgraded in place
 * (`1:2`): 1 is SHA-256 of salt + input, 2 Argon2id13 with libsodium's interactive limits, and
 * `3_<bytes>_<ops>_<memory>` Argon2id13 with the limits it names. 0 (MD5) appears in old chains.
 */
function magento(hash) {
  const match = /^([0-9a-f]{32,128}):([^:]*):([0-9_:]+)$/.exec(hash);
  if (match === null) return refused('not a Magento hash');
  const steps = [];
  for (const version of match[3].split(':')) {
    const agnostic = /^3_(\d+)_(\d+)_(\d+)$/.exec(version);
    if (version === '0' || version === '1') steps.push({ kind: version === '0' ? 'md5' : 'sha256' });
    else if (version === '2') steps.push({ kind: 'argon2id13', bytes: 32, ops: 2, memoryKib: 65_536 });
    else if (agnostic !== null) {
      const [bytes, ops, memoryBytes] = agnostic.slice(1).map(Number);
      steps.push({ kind: 'argon2id13', bytes, ops, memoryKib: Math.floor(memoryBytes / 1024) });
    } else return refused(`unknown Magento hash version ${version}`);
  }
  for (const step of steps) {
    if (step.kind !== 'argon2id13') continue;
    if (step.memoryKib > limits.memoryKib) return refused(`argon2 memory above ${limits.memoryKib} KiB`);
    if (step.ops < 1 || step.ops > limits.argon2Passes) return refused(`argon2 passes above ${limits.argon2Passes}`);
    if (step.bytes < 16 || step.bytes > 64 || step.memoryKib < 8) return refused('not a Magento hash');
  }
  return { format: 'magento', check: { kind: 'magento', expected: match[1], salt: match[2], steps } };
}

/** Django's `algorithm$…` hashers. */
function django(hash) {
  if (hash.startsWith('pbkdf2_sha256$')) {
    const parts = hash.split('$');
    if (parts.length !== 4 || !/^\d+$/.test(parts[1])) return refused('not a Django PBKDF2 hash');
    const expected = decodeBase64(parts[3]);
    if (expected === null || expected.length !== 32) return refused('not a Django PBKDF2 hash');
    return pbkdf2Check('django-pbkdf2-sha256', 'sha256', Number(parts[1]), Buffer.from(parts[2]), expected);
  }
  if (hash.startsWith('argon2$')) return argon2Format(hash.slice('argon2'.length), 'django-argon2');
  if (hash.startsWith('bcrypt_sha256$')) {
    const described = bcryptFormat(hash.slice('bcrypt_sha256$'.length), 'django-bcrypt-sha256');
    if ('check' in described) described.check.input = 'sha256-hex';
    return described;
  }
  return null;
}

/**
 * What a stored hash is and how to check it, or why it is refused. A hash of the service's own
 * argon2id is an argon2 hash like any other here; the hasher tells its own apart.
 */
function describeLegacyHash(hash) {
  if (typeof hash !== 'string' || hash.length > 1024) return refused('unknown format');
  if (hash.startsWith('$argon2')) return argon2Format(hash, 'argon2');
  if (hash.startsWith('$wp$2y$')) {
    const described = bcryptFormat(hash.slice(3), 'wordpress-bcrypt');
    if ('check' in described) described.check.input = 'wp-hmac-sha384';
    return described;
  }
  if (hash.startsWith('$2')) return bcryptFormat(hash, 'bcrypt');
  if (hash.startsWith('$P$') || hash.startsWith('$H$')) return phpass(hash);
  if (hash.startsWith('$pbkdf2-')) return phcPbkdf2(hash);
  if (hash.startsWith('$scrypt$')) return phcScrypt(hash);
  const fromDjango = django(hash);
  if (fromDjango !== null) return fromDjango;
  if (/^[0-9a-f]+:/.test(hash)) return magento(hash);
  return refused('unknown format');
}

function md5(data) {
  return crypto.createHash('md5').update(data).digest();
}

/** phpass's own base64 of the digest: little-endian groups of three bytes, its own alphabet. */
function phpassEncode(input) {
  let output = '';
  let i = 0;
  while (i < input.length) {
    let value = input[i++];
    output += itoa64[value & 0x3f];
    if (i < input.length) value |= input[i] << 8;
    output += itoa64[(value >> 6) & 0x3f];
    if (i++ >= input.length) break;
    if (i < input.length) value |= input[i] << 16;
    output += itoa64[(value >> 12) & 0x3f];
    if (i++ >= input.length) break;
    output += itoa64[(value >> 18) & 0x3f];
  }
  return output;
}

function sameText(a, b) {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}

function sameBytes(a, b) {
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

function bcryptInput(check, password) {
  if (check.input === 'wp-hmac-sha384')
    return crypto.createHmac('sha384', 'wp-sha384').update(password).digest('base64');
  if (check.input === 'sha256-hex') return crypto.createHash('sha256').update(password).digest('hex');
  return password;
}

function magentoRecreate(check, password) {
  let recreated = password;
  for (const step of check.steps) {
    if (step.kind === 'md5' || step.kind === 'sha256') {
      recreated = crypto
        .createHash(step.kind)
        .update(check.salt + recreated)
        .digest('hex');
      continue;
    }
    // Magento's getArgonHash: the salt cut or repeated to libsodium's 16 bytes.
    const salt = Buffer.alloc(16);
    const given = Buffer.from(check.salt);
    if (given.length === 0) return null;
    for (let i = 0; i < 16; i += 1) salt[i] = given[i % given.length];
    recreated = argon2
      .hashRawSync(recreated, {
        algorithm: 2, // Argon2id
        version: 1, // 0x13
        salt,
        memoryCost: step.memoryKib,
        timeCost: step.ops,
        parallelism: 1,
        outputLen: step.bytes,
      })
      .toString('hex');
  }
  return recreated;
}

/** Whether the password is the one the hash was made from; throws for a hash in no known format. */
function verifyLegacyHash(hash, password) {
  const described = describeLegacyHash(hash);
  if (!('check' in described)) throw new Error(`legacy hash refused: ${described.refused}`);
  const check = described.check;
  switch (check.kind) {
    case 'argon2':
      return argon2.verifySync(check.hash, password);
    case 'bcrypt':
      return bcrypt.verifySync(bcryptInput(check, password), check.hash);
    case 'pbkdf2': {
      const derived = crypto.pbkdf2Sync(password, check.salt, check.iterations, check.expected.length, check.digest);
      return sameBytes(derived, check.expected);
    }
    case 'scrypt': {
      const { N, r, p, salt, expected, memoryKib } = check;
      const maxmem = (memoryKib + 1024) * 1024 * p;
      return sameBytes(crypto.scryptSync(password, salt, expected.length, { N, r, p, maxmem }), expected);
    }
    case 'phpass': {
      const setting = check.hash.slice(0, 12);
      const secret = Buffer.from(password);
      let digest = md5(Buffer.concat([Buffer.from(setting.slice(4, 12)), secret]));
      for (let round = 0; round < check.rounds; round += 1) digest = md5(Buffer.concat([digest, secret]));
      return sameText(setting + phpassEncode(digest), check.hash);
    }
    case 'magento': {
      const recreated = magentoRecreate(check, password);
      return recreated !== null && sameText(recreated, check.expected);
    }
  }
  throw new Error('legacy hash of no known kind');
}

module.exports = { describeLegacyHash, verifyLegacyHash, legacyHashLimits: limits };
