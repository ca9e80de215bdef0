import { randomBytes } from 'node:crypto';
import { Algorithm } from '@node-rs/argon2';
import { dictionary } from '@zxcvbn-ts/language-common';
import { defaultHashThreads, sharedHashPool, type HashPool } from './hash-pool.js';

export const minPasswordLength = 8;
export const maxPasswordLength = 255;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** False for an account with no password (null), after the same work as a real verification. */
  verify(passwordHash: string | null, password: string): Promise<boolean>;
  /** The work of one verification against no account, so "no such account" takes as long as "wrong password". */
  verifyDummy(password: string): Promise<void>;
  /** True when the hash was made with other parameters than the current ones. */
  needsRehash(passwordHash: string): boolean;
}

export interface Argon2Parameters {
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

/** OWASP's argon2id recommendation: 19 MiB, 2 passes, 1 lane. */
export const productionArgon2: Argon2Parameters = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** Hashing work is refused rather than queued without bound, so a login flood cannot exhaust memory. */
export class HasherBusyError extends Error {
  constructor() {
    super('too many password hashes waiting');
    this.name = 'HasherBusyError';
  }
}

/**
 * The one bound on hashing work: at most `limit` jobs in flight (running or queued), beyond which
 * work is refused. It queues nothing itself; the pool's queue orders what waits for a thread.
 */
class InFlightBound {
  private inFlight = 0;

  constructor(private readonly limit: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.limit) throw new HasherBusyError();
    this.inFlight += 1;
    try {
      return await work();
    } finally {
      this.inFlight -= 1;
    }
  }
}

export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

/**
 * What argon2 is given. The native binding turns every lone surrogate into U+FFFD, which would
 * make different passwords one; the API refuses such text, and the hasher refuses it as well.
 */
function hashInput(password: string): string {
  if (/\p{Surrogate}/u.test(password)) throw new TypeError('a password must be well-formed Unicode text');
  return normalizePassword(password);
}

/**
 * A hash that no password matches, made without hashing: the current parameters, a random salt and
 * a random digest of a real hash's sizes. Verifying against it costs one full argon2id computation,
 * as an account's hash does. It is made without any work that can be refused, so a hasher that was
 * full once can never leave unknown identities with an answer of their own.
 */
export function dummyPasswordHash(parameters: Argon2Parameters): string {
  const encoded = (bytes: number) => randomBytes(bytes).toString('base64').replace(/=+$/, '');
  const { memoryCost, timeCost, parallelism } = parameters;
  return `$argon2id$v=19$m=${memoryCost},t=${timeCost},p=${parallelism}$${encoded(16)}$${encoded(32)}`;
}

/**
 * argon2id on the process's low-priority hashing threads, never on the event loop. As many hashes
 * at a time as there are threads (HASH_THREADS, by default one per core) give full throughput;
 * more would only add latency and memory.
 */
export function createArgon2Hasher(
  parameters: Argon2Parameters = productionArgon2,
  {
    concurrency = defaultHashThreads(),
    maxWaiting = 256,
    pool = sharedHashPool() as Pick<HashPool, 'hash' | 'verify'>,
  }: { concurrency?: number; maxWaiting?: number; pool?: Pick<HashPool, 'hash' | 'verify'> } = {},
): PasswordHasher {
  // As many running as there are threads, and maxWaiting more queued in the pool behind them.
  const gate = new InFlightBound(concurrency + maxWaiting);
  const options = { algorithm: Algorithm.Argon2id, ...parameters };
  const phcParameters = `m=${parameters.memoryCost},t=${parameters.timeCost},p=${parameters.parallelism}`;
  const hashPassword = (password: string) => gate.run(() => pool.hash(hashInput(password), options));
  const verifyPassword = (passwordHash: string, password: string) =>
    gate.run(() => pool.verify(passwordHash, hashInput(password)).catch(() => false));
  const dummyHash = dummyPasswordHash(parameters);
  return {
    hash: hashPassword,
    // A retired password costs what a wrong one costs, so neither tells the other apart.
    verify: async (passwordHash, password) =>
      passwordHash === null
        ? verifyPassword(dummyHash, password).then(() => false)
        : verifyPassword(passwordHash, password),
    async verifyDummy(password) {
      await verifyPassword(dummyHash, password);
    },
    needsRehash: (passwordHash) => !passwordHash.startsWith(`$argon2id$v=19$${phcParameters}$`),
  };
}

let commonPasswords: Set<string> | undefined;

/** 49,000 most common passwords (zxcvbn's list), compared case-insensitively. */
export function isCommonPassword(password: string): boolean {
  commonPasswords ??= new Set(dictionary['passwords-common'] as string[]);
  return commonPasswords.has(normalizePassword(password).toLowerCase());
}

/** What is wrong with a new password, as messages for `errors.password` (empty when it is fine). */
export function newPasswordProblems(password: string): string[] {
  const normalized = normalizePassword(password);
  const length = [...normalized].length;
  const problems: string[] = [];
  if (length < minPasswordLength) problems.push(`Must be at least ${minPasswordLength} characters.`);
  if (length > maxPasswordLength) problems.push(`Must be at most ${maxPasswordLength} characters.`);
  // Each missing kind is named on its own: "a letter and a number" misleads a password that has letters.
  if (!/\p{L}/u.test(normalized)) problems.push('Must contain at least one letter.');
  if (!/\p{Nd}/u.test(normalized)) problems.push('Must contain at least one number.');
  if (problems.length === 0 && isCommonPassword(normalized)) {
    problems.push('Is too common; choose a password that others do not use.');
  }
  return problems;
}
