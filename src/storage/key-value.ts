/**
 * Counters with a time window, the only shared state besides the database. Memory and Redis
 * implement it; both must make `increment` atomic so parallel requests cannot slip past a limit.
 */
export interface KeyValueStore {
  /** Adds one to `key`, starting a window of `windowSeconds` if none is open; returns the new count. */
  increment(key: string, windowSeconds: number, nowMs: number): Promise<WindowCount>;
  /** Reads a counter without changing it. */
  peek(key: string, nowMs: number): Promise<WindowCount>;
  delete(key: string): Promise<void>;
  /** A round trip, for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
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
export class MemoryKeyValueStore implements KeyValueStore {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries = 100_000) {}

  get size(): number {
    return this.entries.size;
  }

  async increment(key: string, windowSeconds: number, nowMs: number): Promise<WindowCount> {
    let entry = this.entries.get(key);
    if (entry === undefined || entry.resetAtMs <= nowMs) {
      this.entries.delete(key);
      this.makeRoom(nowMs);
      entry = { count: 0, resetAtMs: nowMs + windowSeconds * 1000 };
      this.entries.set(key, entry);
    }
    entry.count += 1;
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
    if (this.entries.size < this.maxEntries) return;
    // Free a tenth at a time, so a flood pays for a sweep once per many inserts, not on each one.
    const target = Math.floor(this.maxEntries * 0.9);
    for (const [key, entry] of this.entries) {
      if (entry.resetAtMs <= nowMs) this.entries.delete(key);
    }
    // Map iteration is insertion order, so each pass meets the oldest windows first.
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= target) return;
      if (entry.count <= 1) this.entries.delete(key);
    }
    for (const key of this.entries.keys()) {
      if (this.entries.size <= target) return;
      this.entries.delete(key);
    }
  }
}
