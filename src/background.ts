import type { FastifyBaseLogger } from 'fastify';

const backgroundDelayMs = 10;

export interface BackgroundLimits {
  /** Tasks running at once: each may hold a database connection, and requests need the rest. */
  concurrency: number;
  /** Tasks admitted (running, waiting or about to start); past it new work is dropped and logged. */
  maxPending: number;
}

const defaultLimits: BackgroundLimits = { concurrency: 4, maxPending: 10_000 };

/**
 * Work that runs after the answer has gone out (resend, forgot, the audit trail). Bounded, so a
 * burst queues here instead of exhausting the database pool; tracked, so shutdown and tests can
 * wait for it instead of guessing with sleeps.
 */
export class BackgroundWork {
  private readonly pending = new Set<Promise<void>>();
  private readonly waiting: Array<() => void> = [];
  private active = 0;
  private readonly limits: BackgroundLimits;

  constructor(
    private readonly logger: FastifyBaseLogger,
    limits: Partial<BackgroundLimits> = {},
  ) {
    this.limits = { ...defaultLimits, ...limits };
  }

  /** Tasks admitted and not finished. */
  get size(): number {
    return this.pending.size;
  }

  /** Admits `work`; false when it was dropped, so a caller keeping state for it can undo that. */
  run(label: string, work: () => Promise<void>): boolean {
    if (this.pending.size >= this.limits.maxPending) {
      this.logger.error(
        { task: label, pending: this.pending.size },
        'background work dropped: too much already waiting',
      );
      return false;
    }
    const task = (async () => {
      // Started a moment after the answer, never while it is still being written or while the
      // client's next request is arriving: the work some answers leave behind must not show in time.
      await new Promise<void>((resolve) => setTimeout(resolve, backgroundDelayMs));
      await this.acquire();
      try {
        await work();
      } catch (error) {
        this.logger.error({ err: error, task: label }, 'background work failed');
      } finally {
        this.release();
      }
    })().finally(() => this.pending.delete(task));
    this.pending.add(task);
    return true;
  }

  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private async acquire(): Promise<void> {
    if (this.active < this.limits.concurrency) {
      this.active += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.active -= 1;
  }
}
