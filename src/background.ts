import type { FastifyBaseLogger } from 'fastify';

const backgroundDelayMs = 10;

export interface BackgroundLimits {
  /** Tasks running at once: each may hold a database connection, and requests need the rest. */
  concurrency: number;
  /** Tasks admitted (running, waiting or about to start); past it new work is refused. */
  maxPending: number;
}

/**
 * Thrown instead of admitting work the queue has no room for; the edge answers
 * `503 service_unavailable` with Retry-After, as for a saturated hashing queue.
 */
export class BackgroundBusyError extends Error {
  constructor(readonly task: string) {
    super(`background work refused: too much already waiting (${task})`);
    this.name = 'BackgroundBusyError';
  }
}

const defaultLimits: BackgroundLimits = { concurrency: 4, maxPending: 10_000 };

/**
 * Work that runs after the answer has gone out (resend, forgot, the audit trail). Bounded, so a
 * burst queues here instead of exhausting the database pool; tracked, so shutdown and tests can
 * wait for it instead of guessing with sleeps. Work an answer promises (a 202) is taken with
 * `admit`, which refuses before the answer when full; `run` drops and logs, for work nobody was
 * promised (the audit trail's flush).
 */
export class BackgroundWork {
  private readonly pending = new Set<Promise<void>>();
  /** The last task admitted in each lane, which the next one in that lane waits for. */
  private readonly lanes = new Map<string, Promise<void>>();
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

  /** Whether new work would be refused now: the same for every request, whoever it is about. */
  get full(): boolean {
    return this.pending.size >= this.limits.maxPending;
  }

  /**
   * Throws BackgroundBusyError when full. Called before a request spends anything (its limits, a
   * password check), so a refusal leaves the client's allowance as it was for the retry.
   */
  assertRoom(label: string): void {
    if (this.full) throw new BackgroundBusyError(label);
  }

  /**
   * Admits `work` or throws BackgroundBusyError, before the caller answers: a 202 is then never
   * given for work that is dropped. Nothing of the refused work is kept. Work in the same `lane`
   * runs one at a time in the order admitted, so of two requests about the same thing (an
   * identity change to one address, then to another) the later one's work is the one that stays.
   */
  admit(label: string, work: () => Promise<void>, lane?: string): void {
    this.assertRoom(label);
    this.start(label, work, lane);
  }

  /** Admits `work`; false when it was dropped, so a caller keeping state for it can undo that. */
  run(label: string, work: () => Promise<void>): boolean {
    if (this.full) {
      this.logger.error(
        { task: label, pending: this.pending.size },
        'background work dropped: too much already waiting',
      );
      return false;
    }
    this.start(label, work);
    return true;
  }

  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private start(label: string, work: () => Promise<void>, lane?: string): void {
    const before = lane === undefined ? undefined : this.lanes.get(lane);
    const task: Promise<void> = (async () => {
      // Started a moment after the answer, never while it is still being written or while the
      // client's next request is arriving: the work some answers leave behind must not show in time.
      await new Promise<void>((resolve) => setTimeout(resolve, backgroundDelayMs));
      // Waited for before taking a slot, so a lane never holds one idle. `before` never rejects.
      await before;
      await this.acquire();
      try {
        await work();
      } catch (error) {
        this.logger.error({ err: error, task: label }, 'background work failed');
      } finally {
        this.release();
      }
    })().finally(() => {
      this.pending.delete(task);
      if (lane !== undefined && this.lanes.get(lane) === task) this.lanes.delete(lane);
    });
    this.pending.add(task);
    if (lane !== undefined) this.lanes.set(lane, task);
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
