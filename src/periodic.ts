import type { FastifyBaseLogger } from 'fastify';

export interface PeriodicOptions {
  /** Pause between the end of one pass and the start of the next when nothing wakes the loop. */
  intervalMs: number;
  logger: FastifyBaseLogger;
  /** The warning logged when a pass throws; the loop goes on. */
  failureMessage: string;
  /** Told each pass that threw (for metrics). */
  failed?: () => void;
  /**
   * After a pass that threw, the next one starts this long after it, doubling with each failure in
   * a row up to `intervalMs`: a loop with a long interval (the janitor's five minutes) does not sit
   * a whole interval out after a passing fault, such as a connection slow to open at start.
   */
  retryMs?: number;
}

/**
 * Runs `pass` in the background: right after start, then `intervalMs` after each pass ends, at
 * once again when woken. Never two passes at a time: a wake during a pass runs the next one as
 * soon as it ends. The timer is unref'd, so the loop alone keeps no process alive.
 */
export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  /** Passes in a row that threw. */
  private failures = 0;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly pass: (stopping: () => boolean) => Promise<void>,
    private readonly options: PeriodicOptions,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Cancels the next pass and resolves when the one in progress (told it is stopping) has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Runs a pass now, or right after the one in progress. */
  wake(): void {
    if (this.stopped) return;
    // Marked rather than timed: a pass ending before a 0 ms timer fires would reschedule over it.
    if (this.running !== undefined) this.again = true;
    else this.schedule(0);
  }

  /** Resolves when the pass in progress, or else the next one, has ended. For tests. */
  nextPass(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), delayMs);
    this.timer.unref();
  }

  private tick(): void {
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    const { logger, failureMessage, failed } = this.options;
    this.running = this.pass(() => this.stopped)
      .then(
        () => void (this.failures = 0),
        (error: unknown) => {
          this.failures += 1;
          logger.warn({ err: error }, failureMessage);
          failed?.();
        },
      )
      .finally(() => {
        this.running = undefined;
        for (const resolve of this.waiters.splice(0)) resolve();
        if (this.stopped) return;
        const delayMs = this.again ? 0 : this.nextDelayMs();
        this.again = false;
        this.schedule(delayMs);
      });
  }

  private nextDelayMs(): number {
    const { intervalMs, retryMs } = this.options;
    if (this.failures === 0 || retryMs === undefined) return intervalMs;
    return Math.min(intervalMs, retryMs * 2 ** Math.min(this.failures - 1, 30));
  }
}
