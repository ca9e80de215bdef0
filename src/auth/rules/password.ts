import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Algorithm } from '@node-rs/argon2';
import { dictionary } from '@zxcvbn-ts/language-common';
import type { Phrase } from '../../i18n/strings.js';
import { fieldPhrase } from './field-phrase.js';
import { defaultHashThreads, sharedHashPool, type HashPool } from './hash-pool.js';
import { CheckFloors } from './check-floors.js';

export const minPasswordLength = 8;
export const maxPasswordLength = 255;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** False for an account with no password (null), after the same work as a real verification. */
  verify(passwordHash: string | null, password: string): Promise<boolean>;
  /** The work of one verification against no account, so "no such account" takes as long as "wrong password". */
  verifyDummy(password: string): Promise<void>;
  /**
   * A check made elsewhere (the store's old system, asked over the network), counted in the lane:
   * it answers no sooner than a verification against no account would, and the time of a check
   * that asked (`check` answers undefined when it asked no one) is kept among the legacy checks'
   * that the lane's own checks are held to. False unless the check said true.
   */
  verifyElsewhere(check: () => Promise<boolean | undefined>, password: string): Promise<boolean>;
  /** True when the hash was made with other parameters than the current ones. */
  needsRehash(passwordHash: string): boolean;
  /**
   * The same hasher with its work (hash, verify, verifyDummy) queued in the store's own lane and
   * counted against the store's own in-flight bound, so one store's login flood neither delays
   * another store's logins by more than one hash per store nor has them refused.
   */
  lane(storeId: string): PasswordHasher;
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
 * How many lanes' worth of in-flight work the hasher holds at most in all. Each lane (store) has
 * the whole per-lane bound, so one store's flood, or up to three at once, never refuses another
 * store's work; the total still caps the memory that pending work (and its callers) can take.
 */
const lanesInFlight = 4;

/**
 * The bound on hashing work: at most `laneLimit` jobs of one lane in flight (running or queued),
 * beyond which that lane's work is refused, and at most `totalLimit` of all lanes together. It
 * queues nothing itself; the pool's per-lane queues order what waits for a thread. A lane's count
 * is dropped at zero, so the map holds no more than the lanes with work in flight.
 */
class InFlightBound {
  private readonly inFlight = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly laneLimit: number,
    private readonly totalLimit: number,
  ) {}

  async run<T>(lane: string, work: () => Promise<T>): Promise<T> {
    const inLane = this.inFlight.get(lane) ?? 0;
    if (inLane >= this.laneLimit || this.total >= this.totalLimit) throw new HasherBusyError();
    this.inFlight.set(lane, inLane + 1);
    this.total += 1;
    try {
      return await work();
    } finally {
      this.total -= 1;
      const left = (this.inFlight.get(lane) ?? 1) - 1;
      if (left === 0) this.inFlight.delete(lane);
      else this.inFlight.set(lane, left);
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
 * What a stored hash is checked against: argon2 hashes (this service's own) take the normalized
 * password, other systems' hashes the password as typed, as their system hashed it.
 */
function checkInput(passwordHash: string, password: string): string {
  const normalized = hashInput(password);
  return passwordHash.startsWith('$argon2') ? normalized : password;
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
 * more would only add latency and memory. The hasher itself works in the default lane (''); each
 * `lane(storeId)` shares its threads and bounds but queues and counts in that store's lane.
 */
export function createArgon2Hasher(
  parameters: Argon2Parameters = productionArgon2,
  {
    concurrency = defaultHashThreads(),
    maxWaiting = 256,
    pool = sharedHashPool() as Pick<HashPool, 'hash' | 'check'>,
  }: { concurrency?: number; maxWaiting?: number; pool?: Pick<HashPool, 'hash' | 'check'> } = {},
): PasswordHasher {
  // Per lane, as many running as there are threads and maxWaiting more queued in the pool behind
  // them: the default lane alone is bounded exactly as the hasher was before it had lanes.
  const gate = new InFlightBound(concurrency + maxWaiting, lanesInFlight * (concurrency + maxWaiting));
  const options = { algorithm: Algorithm.Argon2id, ...parameters };
  const phcParameters = `m=${parameters.memoryCost},t=${parameters.timeCost},p=${parameters.parallelism}`;
  const dummyHash = dummyPasswordHash(parameters);
  const needsRehash = (passwordHash: string) => !passwordHash.startsWith(`$argon2id$v=19$${phcParameters}$`);
  const floors = new CheckFloors();
  const inLane = (lane: string): PasswordHasher => {
    const verifyPassword = async (passwordHash: string, password: string, held = true) => {
      const legacy = needsRehash(passwordHash);
      const floorMs = held ? floors.floorMs(lane, legacy) : 0;
      // A quicker legacy check holds its thread as long as an argon2 check would, precisely; an
      // argon2 check held to a slower legacy one's time waits on a timer, so the thread it would
      // otherwise hold (every store's) goes on hashing.
      const checked = await gate.run(lane, () =>
        pool
          .check(passwordHash, checkInput(passwordHash, password), lane, legacy ? floorMs : 0)
          .catch(() => ({ matches: false, ms: 0 })),
      );
      floors.record(lane, legacy, checked.ms);
      if (!legacy && floorMs > checked.ms) await delay(floorMs - checked.ms);
      return checked.matches;
    };
    return {
      hash: (password) => gate.run(lane, () => pool.hash(hashInput(password), options, lane)),
      // A retired password costs what a wrong one costs, so neither tells the other apart.
      verify: async (passwordHash, password) =>
        passwordHash === null
          ? verifyPassword(dummyHash, password).then(() => false)
          : verifyPassword(passwordHash, password),
      async verifyDummy(password) {
        await verifyPassword(dummyHash, password);
      },
      // Beside one argon2 check of the dummy hash, as an unknown identity does: the answer comes no
      // sooner than that check would, dispatch to the thread included, whatever the network's pace.
      // That check is not held to the store's floor: an unknown identity waits for the longer of
      // its check and one recent question, and so does this, its own question being that one. Held,
      // it waited for the longest of three, later whenever the old system answers about as slowly.
      async verifyElsewhere(check, password) {
        const asked = async () => {
          const started = performance.now();
          const answer = await check().catch(() => false);
          if (answer !== undefined) floors.record(lane, true, performance.now() - started);
          return answer === true;
        };
        const [matches] = await Promise.all([gate.run(lane, asked), verifyPassword(dummyHash, password, false)]);
        return matches;
      },
      needsRehash,
      lane: inLane,
    };
  };
  return inLane('');
}

let commonPasswords: Set<string> | undefined;

/** 49,000 most common passwords (zxcvbn's list), compared case-insensitively. */
export function isCommonPassword(password: string): boolean {
  commonPasswords ??= new Set(dictionary['passwords-common'] as string[]);
  return commonPasswords.has(normalizePassword(password).toLowerCase());
}

/** What is wrong with a new password, as phrases for `errors.password` (empty when it is fine). */
export function newPasswordProblems(password: string): Phrase[] {
  const normalized = normalizePassword(password);
  const length = [...normalized].length;
  const problems: Phrase[] = [];
  if (length < minPasswordLength) problems.push(fieldPhrase('min_length', { count: minPasswordLength }));
  if (length > maxPasswordLength) problems.push(fieldPhrase('max_length', { count: maxPasswordLength }));
  // Each missing kind is named on its own: "a letter and a number" misleads a password that has letters.
  if (!/\p{L}/u.test(normalized)) problems.push(fieldPhrase('password_letter'));
  if (!/\p{Nd}/u.test(normalized)) problems.push(fieldPhrase('password_number'));
  if (problems.length === 0 && isCommonPassword(normalized)) problems.push(fieldPhrase('password_common'));
  return problems;
}
