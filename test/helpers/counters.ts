import { MemoryCounterStore, type WindowCount } from '../../src/storage/counters.js';

/** A counter store in memory that counts one key (`key`, set once it is known) as `spent` calls ahead. */
export class SpentCounters extends MemoryCounterStore {
  key = '';

  constructor(private readonly spent: number) {
    super();
  }

  override async increment(key: string, windowSeconds: number, nowMs: number): Promise<WindowCount> {
    const counted = await super.increment(key, windowSeconds, nowMs);
    return key === this.key ? { ...counted, count: counted.count + this.spent } : counted;
  }
}
