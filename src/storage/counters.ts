/**
 * Counters with a time window, the only shared state besides the database. Memory and Redis
 * implement it; both must make `increment` atomic so parallel requests cannot slip past a limit.
 */
export interface CounterStore {
  /** Adds `amount` (one) to `key`, starting a window of `windowSeconds` if none is open; returns the new count. */
  increment(key: string, windowSeconds: number, nowMs: number, amount?: number): Promise<WindowCount>;
  /** Reads a counter without changing it (the service never does; the tests observe counters by it). */
  peek(key: string, nowMs: number): Promise<WindowCount>;
  delete(key: string): Promise<void>;
  /** A round trip, for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/*
 * Key names. Every key the service stores is named by the two functions below, because Redis
 * Cluster puts a rule on keys: a command or script that touches several keys must find them all in
 * one hash slot, or the cluster refuses it (CROSSSLOT). A key's slot is the hash of its hash tag,
 * the text between its first "{" and the next "}", or of the whole key when it has none.
 *
 * - `keyName` names a key used on its own. Braces in the parts are escaped, so the key has no hash
 *   tag and hashes whole: counters spread over every master, and a made-up identity such as
 *   "{x}1@example.com" cannot steer its keys onto a chosen slot.
 * - `slotTagged` puts a key into the slot of `tag`. Keys that one command or script touches
 *   together must all be made with it, with the same tag.
 *
 * Today every command and script touches one key (the window script, HMGET, DEL), so only
 * `keyName` is used. REDIS_KEY_PREFIX comes first in every key, so on a cluster it may not contain
 * "{" (config.ts refuses it): the prefix's brace would decide every key's slot.
 */

// "%" too, so the escaping cannot make two different parts into one name.
const escapes: Record<string, string> = { '%': '%25', '{': '%7B', '}': '%7D' };
const escapeBraces = (part: string) => part.replace(/[%{}]/g, (character) => escapes[character]!);

/** `rl`, `login`, `203.0.113.7` → `rl:login:203.0.113.7`: a key with no hash tag. */
export function keyName(...parts: string[]): string {
  return parts.map(escapeBraces).join(':');
}

/** `tag`, `a:b` → `{tag}:a:b`: the key hashes by `tag` alone, into the same slot as every key tagged alike. */
export function slotTagged(tag: string, name: string): string {
  if (tag === '') throw new Error('an empty hash tag would hash the whole key');
  return `{${escapeBraces(tag)}}:${name}`;
}

export interface WindowCount {
  count: number;
  /** When the window closes, in epoch milliseconds. */
  resetAtMs: number;
}

interface Entry {
  count: number;
  resetAtMs: number;
}

/**
 * In-process store, bounded: when full it drops expired windows first, then windows that counted a
 * single request, and only then the oldest. A flood of one-off keys (new addresses, made-up
 * identities) therefore cannot push out the counter of an identity under attack: that counter has
 * counted many requests, and keeping it is what keeps the limit from failing open.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries = 100_000) {}

  get size(): number {
    return this.entries.size;
  }

  async increment(key: string, windowSeconds: number, nowMs: number, amount = 1): Promise<WindowCount> {
    let entry = this.entries.get(key);
    if (entry === undefined || entry.resetAtMs <= nowMs) {
      this.entries.delete(key);
      this.makeRoom(nowMs);
      entry = { count: 0, resetAtMs: nowMs + windowSeconds * 1000 };
      this.entries.set(key, entry);
    }
    entry.count += amount;
    return { count: entry.count, resetAtMs: entry.resetAtMs };
  }

  async peek(key: string, nowMs: number): Promise<WindowCount> {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.resetAtMs <= nowMs) return { count: 0, resetAtMs: nowMs };
    return { count: entry.count, resetAtMs: entry.resetAtMs };
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    this.entries.clear();
  }

  private makeRoom(nowMs: number): void {
    makeRoom(this.entries, this.maxEntries, nowMs, (entry) => entry.count <= 1);
  }
}

/**
 * Frees a full map of windows down to nine tenths: expired windows, then those `single` says
 * counted one call, then the oldest (Map iteration is insertion order, so each pass meets the
 * oldest first). A tenth at a time, so a flood pays for a sweep once per many inserts, not on
 * each one. `dropped` hears of each live window the last pass drops.
 */
export function makeRoom<Window extends { resetAtMs: number }>(
  entries: Map<string, Window>,
  maxEntries: number,
  nowMs: number,
  single: (entry: Window) => boolean,
  dropped: (key: string, entry: Window) => void = () => {},
): void {
  if (entries.size < maxEntries) return;
  const target = Math.floor(maxEntries * 0.9);
  for (const [key, entry] of entries) {
    if (entry.resetAtMs <= nowMs) entries.delete(key);
  }
  for (const [key, entry] of entries) {
    if (entries.size <= target) return;
    if (single(entry)) entries.delete(key);
  }
  for (const [key, entry] of entries) {
    if (entries.size <= target) return;
    entries.delete(key);
    dropped(key, entry);
  }
}
