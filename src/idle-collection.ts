import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { FastifyBaseLogger } from 'fastify';

/**
 * Gives memory back once a burst is over. V8 runs a major collection only when the heap next needs
 * room, so what a burst promoted to the old generation (requests, evicted counter windows,
 * background tasks that lived a few milliseconds too long) stays resident for as long as the
 * service then idles: measured, 90 MB and more after a flood of new addresses, with no collection
 * in 80 s of quiet. And the young generation a burst grew (two semi-spaces, up to 32 MB) stays
 * committed until V8's memory reducer runs, which took 8–30 s after some bursts and did not come
 * within 65 s after others.
 *
 * This checks once a second whether the event loop was quiet (busy under 2% of the time). When it
 * is, and the heap has grown by 16 MB since the smallest it was seen or the young generation is
 * over 4 MB, it runs a young-generation collection (a few milliseconds), and once the loop has
 * stayed quiet for six more checks, the full collections below: 90–120 ms of the main thread.
 * The wait is what lets V8 shrink the young generation: a full collection does so when the
 * service allocated under 1 MB/s over the 5 s before it, counted from V8's previous collection,
 * and the young one marks where those 5 s begin (without it, the young generation shrank after
 * two bursts in six). V8's count does not always come out that low (what the young collection
 * promoted seems to count as allocated), so a round sometimes leaves the young generation as it
 * was: after one burst in eight, measured with 100,000 of the burst's objects still live. A round
 * that does starts another count of six quiet checks, three rounds at most.
 * Its own pauses (up to 120 ms) do not count as the loop being busy, or each would end the quiet
 * spell it ran in and the next quiet check would start the spell over. A busy service is never
 * paused by it, and it runs once per burst (again in the same quiet spell only if the heap grows
 * by another 16 MB), so an idle service is left alone. 16 MB, not more: 12 s of session checks at
 * 3,000 a second grew the heap by 30 MB, most of it garbage.
 *
 * The collection is full ones, repeated until one hands no memory back: at least two, at most
 * five. The first frees the garbage but leaves the old generation's pages as the burst filled
 * them, each still holding a few live objects (counter windows, cached statements) among the
 * dead: V8 picks the pages to compact by the live bytes it counted in the collection before,
 * which still included the garbage. The second knows, moves those few objects together and hands
 * the emptied pages back: measured after a burst, 92 MB of committed heap after the first and
 * 67 MB after the second (the service's RSS 170 and 146 MB). When V8 was already marking as the
 * collection began (a loaded host, a burst that ended mid-cycle), everything allocated since the
 * marking started counts as live in the first, so the second still compacts by stale counts and
 * a third is needed: on a loaded host, two collections left 4–13 MB of the burst's pages unused
 * in one run of eight, and collecting on until nothing more came back left at most 5 MB.
 */
export interface IdleCollectionSettings {
  intervalMs: number;
  /** Quiet checks after the young-generation collection before the full ones. */
  quietChecks: number;
  /** The event loop's busy share (0 to 1) under which a check counts as quiet. */
  quietShare: number;
  growthBytes: number;
  /** The young generation's committed size above which a quiet spell collects. */
  youngBytes: number;
  /** Settling rounds a quiet spell runs at most while V8 keeps the young generation over youngBytes. */
  settleRounds: number;
}

export const idleCollectionSettings: IdleCollectionSettings = {
  intervalMs: 1000,
  quietChecks: 6,
  quietShare: 0.02,
  growthBytes: 16 * 1024 * 1024,
  youngBytes: 4 * 1024 * 1024,
  settleRounds: 3,
};

/** What the collector reads and does: the process's own, or a test's. */
export interface HeapControl {
  /** The event loop's busy share since the previous call. */
  busyShare(): number;
  heapUsed(): number;
  /** The young generation's committed size. */
  youngCommitted(): number;
  /** A young-generation collection. */
  collectYoung(): void;
  /** Frees the garbage and compacts the old generation; returns how many full collections ran. */
  collect(): number;
}

type Collection = (options?: { type: 'minor' | 'major' }) => void;

/** V8's collections, as `--expose-gc` would give them, without exposing them to the program. */
function collection(): Collection {
  v8.setFlagsFromString('--expose-gc');
  try {
    // Only contexts made while the flag is set get `gc`; the program's own never does.
    return vm.runInNewContext('gc') as Collection;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
}

/**
 * Runs `full` until a collection leaves `committed` no smaller than the one before it, at least
 * twice and at most `limit` times; returns how many ran.
 */
export function collectUntilSettled(full: () => void, committed: () => number, limit = 5): number {
  let before = committed();
  for (let count = 1; ; count += 1) {
    full();
    const after = committed();
    if (count === limit || (count >= 2 && after >= before)) return count;
    before = after;
  }
}

export function processHeap(): HeapControl {
  const gc = collection();
  const space = (name: string) => v8.getHeapSpaceStatistics().find((entry) => entry.space_name === name);
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  return {
    busyShare() {
      const now = performance.eventLoopUtilization();
      const share = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      return share;
    },
    heapUsed: () => v8.getHeapStatistics().used_heap_size,
    youngCommitted: () => space('new_space')?.space_size ?? 0,
    collectYoung: () => gc({ type: 'minor' }),
    collect() {
      return collectUntilSettled(
        () => gc(),
        () => v8.getHeapStatistics().total_heap_size,
      );
    },
  };
}

export class IdleCollector {
  private timer: NodeJS.Timeout | undefined;
  private smallest = Infinity;
  /** Quiet checks since the young-generation collection or the last settling round, if one ran. */
  private quietSinceYoung: number | undefined;
  /** Settling rounds this quiet spell has run: once one has, a young generation V8 kept is no reason to start again. */
  private rounds = 0;

  constructor(
    private readonly heap: HeapControl,
    private readonly logger: FastifyBaseLogger,
    private readonly settings: IdleCollectionSettings = idleCollectionSettings,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.check(), this.settings.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One check; returns whether it ran the full collections. */
  check(): boolean {
    const used = this.heap.heapUsed();
    this.smallest = Math.min(this.smallest, used);
    if (this.heap.busyShare() >= this.settings.quietShare) {
      this.quietSinceYoung = undefined;
      this.rounds = 0;
      return false;
    }
    if (this.quietSinceYoung === undefined) {
      const wanted =
        used - this.smallest >= this.settings.growthBytes ||
        (this.rounds === 0 && this.heap.youngCommitted() > this.settings.youngBytes);
      if (wanted) {
        this.heap.collectYoung();
        this.forgetOwnPause();
        this.quietSinceYoung = 0;
      }
      return false;
    }
    this.quietSinceYoung += 1;
    if (this.quietSinceYoung < this.settings.quietChecks) return false;
    const startedMs = performance.now();
    const collections = this.heap.collect();
    this.forgetOwnPause();
    const after = this.heap.heapUsed();
    this.smallest = after;
    this.rounds += 1;
    // V8 may have kept the young generation all the same: this round then starts another count.
    const kept = this.heap.youngCommitted() > this.settings.youngBytes;
    this.quietSinceYoung = kept && this.rounds < this.settings.settleRounds ? 0 : undefined;
    this.logger.debug(
      {
        freed_mb: Math.round((used - after) / 2 ** 20),
        young_mb: Math.round(this.heap.youngCommitted() / 2 ** 20),
        collections,
        ms: Math.round(performance.now() - startedMs),
      },
      'idle: collected and compacted the heap',
    );
    return true;
  }

  /**
   * Starts the next busy share after a collection of its own: 20 ms is the quiet share, so the
   * collection's own pause would end the quiet spell it was run for, and the next quiet check
   * would start the spell, and the collections, over again.
   */
  private forgetOwnPause(): void {
    this.heap.busyShare();
  }
}
