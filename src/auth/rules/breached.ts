import { createHash } from 'node:crypto';
import type { Phrase } from '../../i18n/strings.js';
import type { Queryable } from '../../storage/database.js';
import { lookUpBreachedHash } from '../tables/breached-hashes.js';
import { fieldPhrase } from './field-phrase.js';

/**
 * Whether a new password is in a breach corpus, asked with k-anonymity: only the first 5 hex digits
 * of its SHA-1 leave the process (a Pwned-Passwords-compatible range API, BREACHED_PASSWORDS_URL),
 * or nothing does (the local copy in `breached_hashes`). The URL wins when set; else the local copy
 * when it has rows; else nothing is checked. A check that cannot be made lets the password through
 * (fails open): the corpus is advice, and an outage of it must not stop registrations or resets.
 */

export type BreachSource = 'range_api' | 'local';
export type BreachOutcome = 'breached' | 'clean' | 'failed_open';

export interface BreachedPasswords {
  /** True only when the corpus has the password: false when clean, unchecked, or the check failed. */
  isBreached(password: string): Promise<boolean>;
}

/** The longest the range API is waited for, headers and body; then the password is let through. */
export const breachedRangeTimeoutMs = 1_500;
/** Ranges kept at most: about 30 KB each, so the cache stays near 15 MB. */
const rangeCacheSize = 500;
/** The corpus changes a few times a year; a day-old range is as good as a fresh one. */
const rangeCacheMs = 24 * 60 * 60 * 1000;
/** How long an empty local table is believed empty: a copy loaded meanwhile is read within a minute. */
const emptyLocalCopyMs = 60 * 1000;
/** A range is under 100 KB even padded; a longer answer is not one. */
const maxRangeChars = 1_000_000;

export interface BreachedPasswordsOptions {
  /** The range API's base URL (`…/range/{prefix}` is appended); undefined: the local copy only. */
  url?: string | undefined;
  db: Pick<Queryable, 'query'>;
  timeoutMs?: number | undefined;
  /** Each check made, for the metric; a failed one with its cause, for the log. */
  checked(outcome: BreachOutcome, source: BreachSource, error?: unknown): void;
}

export function sha1Hex(password: string): string {
  return createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
}

export function createBreachedPasswords(options: BreachedPasswordsOptions): BreachedPasswords {
  const { url, db, checked } = options;
  const ranges = url === undefined ? undefined : new RangeClient(url, options.timeoutMs ?? breachedRangeTimeoutMs);
  // Without a URL or a loaded copy no check is made, not even a query.
  let emptyUntilMs = -Infinity;
  return {
    async isBreached(password) {
      // As typed, UTF-8: the corpus hashed the passwords it found as they were written.
      const hash = sha1Hex(password);
      const source: BreachSource = ranges === undefined ? 'local' : 'range_api';
      let breached: boolean;
      try {
        if (ranges !== undefined) {
          breached = (await ranges.breachedSuffixes(hash.slice(0, 5))).includes(`\n${hash.slice(5)}\n`);
        } else {
          if (performance.now() < emptyUntilMs) return false;
          const answer = await lookUpBreachedHash(db, hash);
          // An empty table is no corpus: nothing was checked, so nothing is counted.
          if (!answer.loaded) {
            emptyUntilMs = performance.now() + emptyLocalCopyMs;
            return false;
          }
          breached = answer.breached;
        }
      } catch (error) {
        checked('failed_open', source, error);
        return false;
      }
      checked(breached ? 'breached' : 'clean', source);
      return breached;
    },
  };
}

/**
 * Notes `field.password_breached` when the password has no other problem and is in the corpus: a
 * password refused anyway is not sent to be checked.
 */
export async function validateNotBreached(
  breachedPasswords: BreachedPasswords,
  password: string,
  errors: Record<string, Phrase[]>,
): Promise<void> {
  if ((errors['password']?.length ?? 0) > 0) return;
  if (await breachedPasswords.isBreached(password)) (errors['password'] ??= []).push(fieldPhrase('password_breached'));
}

interface CachedRange {
  /** The range's breached suffixes, each between newlines; shared by checks that ask at once. */
  suffixes: Promise<string>;
  expiresMs: number;
}

/**
 * The range API with its answers cached by prefix, least recently used first out. A failed
 * request is forgotten at once, so the next check asks again.
 */
class RangeClient {
  private readonly base: string;
  private readonly cache = new Map<string, CachedRange>();

  constructor(
    url: string,
    private readonly timeoutMs: number,
  ) {
    this.base = url.replace(/\/+$/, '');
  }

  breachedSuffixes(prefix: string): Promise<string> {
    const nowMs = performance.now();
    const cached = this.cache.get(prefix);
    if (cached !== undefined && cached.expiresMs > nowMs) {
      this.cache.delete(prefix);
      this.cache.set(prefix, cached);
      return cached.suffixes;
    }
    const suffixes = this.fetchRange(prefix);
    this.cache.delete(prefix);
    this.cache.set(prefix, { suffixes, expiresMs: nowMs + rangeCacheMs });
    suffixes.catch(() => {
      if (this.cache.get(prefix)?.suffixes === suffixes) this.cache.delete(prefix);
    });
    while (this.cache.size > rangeCacheSize) this.cache.delete(this.cache.keys().next().value as string);
    return suffixes;
  }

  private async fetchRange(prefix: string): Promise<string> {
    // Padding makes every answer about the same size, so its length does not tell the prefix.
    const response = await fetch(`${this.base}/range/${prefix}`, {
      headers: { 'Add-Padding': 'true', 'User-Agent': 'storefront-auth' },
      signal: AbortSignal.timeout(this.timeoutMs),
      redirect: 'error',
    });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`the range API answered ${response.status}`);
    }
    const text = await response.text();
    if (text.length > maxRangeChars) throw new Error('the range API answered more than a range');
    let suffixes = '\n';
    for (const line of text.split('\n')) {
      const [suffix, count] = line.trim().split(':');
      // Count 0 is padding: a made-up suffix, not a breach.
      if (suffix !== undefined && /^[0-9A-Fa-f]{35}$/.test(suffix) && Number(count) > 0) {
        suffixes += `${suffix.toUpperCase()}\n`;
      }
    }
    return suffixes;
  }
}
