import { makeRoom, type CounterStore, type WindowCount } from './counters.js';

interface Entry {
  resetAtMs: number;
  /** The shared count the store returned when this instance's last batch landed. */
  landed: number;
  /** Sent to the store, not yet acknowledged. */
  inflight: number;
  /** Counted here, not yet sent. */
  pending: number;
  /** The batch on its way, if any: at most one per key, so batches land in order. */
  flushing: Promise<void> | undefined;
}

/**
 * A shared counter counted here first and sent to the shared store in batches (a sloppy counter),
 * for limits where every call counts and none guards a credential (the any-call limit): a call
 * costs no round trip, yet every instance still counts against one shared total.
 *
 * The bound: an instance holds at most `batch` counts of a key that the store has not
 * acknowledged. A call that would hold more waits for the batch on its way. Each batch's answer
 * brings back the shared total, so once the total passes the limit each instance learns it with
 * its next batch, having let through at most `batch` more. Across `n` instances a key's window
 * therefore admits fewer than `limit + n × batch` calls (the proof is in docs/architecture.md);
 * with one instance, exactly `limit`.
 */
export class BatchedCounters {
  private readonly entries = new Map<string, Entry>();

  constructor(
    /** A Redis store answers for itself when Redis fails (FallbackCounterStore counts in memory). */
    private readonly store: CounterStore,
    private readonly maxEntries = 50_000,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Counts one call and returns the total as this instance knows it: the shared total at its last
   * batch plus what it counted since. Synchronous unless the key's unacknowledged counts are full.
   */
  increment(key: string, windowSeconds: number, batch: number, nowMs: number): WindowCount | Promise<WindowCount> {
    let entry = this.entries.get(key);
    if (entry === undefined || entry.resetAtMs <= nowMs) {
      this.entries.delete(key);
      this.makeRoom(nowMs);
      entry = { resetAtMs: nowMs + windowSeconds * 1000, landed: 0, inflight: 0, pending: 0, flushing: undefined };
      this.entries.set(key, entry);
    }
    if (entry.flushing !== undefined && entry.inflight + entry.pending >= batch) {
      return entry.flushing.then(() => this.increment(key, windowSeconds, batch, nowMs));
    }
    entry.pending += 1;
    const count = { count: entry.landed + entry.inflight + entry.pending, resetAtMs: entry.resetAtMs };
    if (entry.flushing === undefined && entry.pending >= batch) this.send(key, entry, windowSeconds, nowMs);
    return count;
  }

  private send(key: string, entry: Entry, windowSeconds: number, nowMs: number): void {
    const amount = entry.pending;
    entry.inflight = amount;
    entry.pending = 0;
    entry.flushing = this.store.increment(key, windowSeconds, nowMs, amount).then(
      (shared) => {
        // The shared window is the one that counts; this instance's guess at it gave way.
        entry.landed = shared.count;
        entry.resetAtMs = shared.resetAtMs;
        entry.inflight = 0;
        entry.flushing = undefined;
      },
      // Not expected (see the constructor); the batch's counts then stay this instance's alone.
      () => {
        entry.landed += amount;
        entry.inflight = 0;
        entry.flushing = undefined;
      },
    );
  }

  /**
   * When full, drops as the memory store does (`makeRoom`). A single call is forgotten, not sent:
   * the key regains at most that one call, and only after a tenth of the map's worth of other keys
   * came in since. Any other key dropped sends what the others have not seen yet, so it still
   * counts everywhere. Only when full: a Map keeps deleted entries as holes until it grows, and an
   * iteration from its start walks over every one, so looking at the oldest key on each insert
   * cost 5–6 µs a new key.
   */
  private makeRoom(nowMs: number): void {
    makeRoom(
      this.entries,
      this.maxEntries,
      nowMs,
      (entry) => entry.landed + entry.inflight + entry.pending <= 1,
      (key, entry) => {
        if (entry.pending === 0) return;
        this.store.increment(key, Math.ceil((entry.resetAtMs - nowMs) / 1000), nowMs, entry.pending).catch(() => {});
      },
    );
  }
}
