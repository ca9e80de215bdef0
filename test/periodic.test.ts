import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PeriodicTask } from '../src/periodic.js';
import { capturingLogger } from './helpers/logs.js';

const hourMs = 60 * 60 * 1000;

/** A pass that waits for the test to let it end, so the test knows exactly where the loop is. */
function gatedPasses() {
  const started: Array<{ stopping: () => boolean; finish: () => void }> = [];
  let announce: (() => void) | undefined;
  const pass = (stopping: () => boolean) =>
    new Promise<void>((resolve) => {
      started.push({ stopping, finish: resolve });
      announce?.();
    });
  /** Resolves when pass number `count` has started. */
  const passStarted = (count: number) =>
    new Promise<void>((resolve) => {
      announce = () => {
        if (started.length >= count) resolve();
      };
      announce();
    });
  return { started, pass, passStarted };
}

describe('a periodic task', () => {
  // The task's timer is unref'd, as in the service; this keeps the test process up meanwhile.
  let keepAlive: NodeJS.Timeout;
  before(() => {
    keepAlive = setInterval(() => undefined, hourMs);
  });
  after(() => clearInterval(keepAlive));

  test('runs its first pass right after start and the next one an interval after it ended', async () => {
    const { logger } = capturingLogger();
    let passes = 0;
    const task = new PeriodicTask(async () => void (passes += 1), {
      intervalMs: 1,
      logger,
      failureMessage: 'failed',
    });
    task.start();
    try {
      await task.nextPass();
      assert.equal(passes, 1);
      await task.nextPass();
      assert.equal(passes, 2);
    } finally {
      await task.stop();
    }
  });

  test('a wake during a pass runs one more pass right after it, never two at once', { timeout: 5_000 }, async () => {
    const { logger } = capturingLogger();
    const { started, pass, passStarted } = gatedPasses();
    const task = new PeriodicTask(pass, { intervalMs: hourMs, logger, failureMessage: 'failed' });
    task.start();
    try {
      await passStarted(1);
      task.wake();
      task.wake();
      const firstEnded = task.nextPass();
      started[0]!.finish();
      await firstEnded;
      // The hour-long interval is not waited for: the wake asked for the second pass.
      await passStarted(2);
      assert.equal(started.length, 2);
      const secondEnded = task.nextPass();
      started[1]!.finish();
      await secondEnded;
      assert.equal(started.length, 2, 'the two wakes during one pass asked for one more pass, not two');
    } finally {
      await task.stop();
    }
  });

  test('a pass that throws is logged and counted, and the loop goes on', async () => {
    const { logger, lines } = capturingLogger();
    let passes = 0;
    let failures = 0;
    const task = new PeriodicTask(
      async () => {
        passes += 1;
        if (passes === 1) throw new Error('database away');
      },
      { intervalMs: 1, logger, failureMessage: 'pass failed; will try again', failed: () => (failures += 1) },
    );
    task.start();
    try {
      await task.nextPass();
      await task.nextPass();
      assert.equal(passes, 2);
      assert.equal(failures, 1);
      const warning = lines.find((line) => line['msg'] === 'pass failed; will try again');
      assert.equal(warning?.['level'], 40);
      assert.match(String((warning?.['err'] as { message?: string } | undefined)?.message), /database away/);
    } finally {
      await task.stop();
    }
  });

  test('after a pass that throws, the next comes after the retry delay, doubling, and a success restores the interval', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { logger } = capturingLogger();
    let passes = 0;
    const task = new PeriodicTask(
      async () => {
        passes += 1;
        if (passes <= 2) throw new Error('connection slow to open');
      },
      { intervalMs: hourMs, retryMs: 1_000, logger, failureMessage: 'failed' },
    );
    /** Moves the clock on by `ms` and lets a pass that came due end; the passes so far. */
    const after = async (ms: number) => {
      const before = passes;
      const ended = task.nextPass();
      t.mock.timers.tick(ms);
      if (passes > before) await ended;
      return passes;
    };
    try {
      task.start();
      assert.equal(await after(0), 1);
      assert.equal(await after(999), 1);
      assert.equal(await after(1), 2, 'the first failure is tried again after the retry delay');
      assert.equal(await after(1_999), 2);
      assert.equal(await after(1), 3, 'the second failure in a row waits twice as long');
      assert.equal(await after(hourMs - 1), 3, 'after a success the interval applies again');
      assert.equal(await after(1), 4);
    } finally {
      await task.stop();
    }
  });

  test('stop tells the running pass, waits for it to end, and no pass runs after it', async () => {
    const { logger } = capturingLogger();
    const { started, pass, passStarted } = gatedPasses();
    const task = new PeriodicTask(pass, { intervalMs: 1, logger, failureMessage: 'failed' });
    task.start();
    await passStarted(1);
    assert.equal(started[0]!.stopping(), false);
    let stopped = false;
    const stopping = task.stop().then(() => (stopped = true));
    assert.equal(started[0]!.stopping(), true);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(stopped, false, 'stop resolved while its pass was still running');
    started[0]!.finish();
    await stopping;
    task.wake();
    // A timer the wake had wrongly set (0 ms, which Node makes 1) fires before this later 1 ms one.
    await new Promise((resolve) => setTimeout(resolve, 1));
    assert.equal(started.length, 1);
  });

  test('a task never started stops at once', async () => {
    const { logger } = capturingLogger();
    const task = new PeriodicTask(async () => assert.fail('no pass expected'), {
      intervalMs: 1,
      logger,
      failureMessage: 'failed',
    });
    task.wake();
    await task.stop();
  });
});
