import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { FastifyBaseLogger } from 'fastify';

/**
 * Gives memory back once a burst is over. V8 runs a major collection only when the heap next needs
 * room, and shrinks the young generation a burst grew only when its memory reducer gets round to
 * it, so what a burst left would stay resident while the shop idles. Once the event loop is quiet:
 * a young-generation collection, which starts the low-allocation window V8 needs before a full
 * collection shrinks the young generation; then, after more quiet, full collections until one
 * hands nothing back, since only a second one compacts the pages the first left thinly used.
 * It never pauses a busy service, and runs once per burst. The measurements behind each step and
 * setting are in docs/benchmarks.md, "What was changed to reach it".
 */
export interface IdleCollectionSettings {
  intervalMs: number;
  /** Quiet checks after the young-generation collection before the full ones. */
  quietChecks: number;
  /** The event loop's busy share (0 to 1) under which a check counts as quiet. */
  quietShare: number;
  /** Heap growth since the smallest seen that makes a quiet spell collect. */
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
