import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BackgroundBusyError, BackgroundWork } from '../src/background.js';
import { capturingLogger } from './helpers/logs.js';

describe('background work', () => {
  test('runs at most `concurrency` tasks at once, so a burst cannot exhaust the database pool', async () => {
    const { logger } = capturingLogger();
    const background = new BackgroundWork(logger, { concurrency: 3 });
    let running = 0;
    let most = 0;
    let done = 0;
    for (let i = 0; i < 30; i += 1) {
      background.run('task', async () => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setImmediate(resolve));
        running -= 1;
        done += 1;
      });
    }
    await background.drain();
    assert.equal(done, 30, 'every task ran');
    assert.equal(most, 3);
  });

  test('drops and logs new work once too much is waiting, and keeps running what it admitted', async () => {
    const { logger, lines } = capturingLogger();
    const background = new BackgroundWork(logger, { concurrency: 1, maxPending: 5 });
    let done = 0;
    for (let i = 0; i < 8; i += 1) {
      background.run('resend-verification', async () => {
        done += 1;
      });
    }
    assert.equal(background.size, 5);
    await background.drain();
    assert.equal(done, 5);
    const dropped = lines.filter((line) => String(line['msg']).startsWith('background work dropped'));
    assert.equal(dropped.length, 3);
    assert.equal(dropped[0]!['task'], 'resend-verification');
  });

  test('refuses work it was asked to admit once full, keeping none of it, and admits again after draining', async () => {
    const { logger, lines } = capturingLogger();
    const background = new BackgroundWork(logger, { concurrency: 1, maxPending: 2 });
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let done = 0;
    const work = async () => {
      await held;
      done += 1;
    };
    background.admit('forgot-password', work);
    background.admit('forgot-password', work);
    assert.equal(background.full, true);
    assert.throws(() => background.assertRoom('forgot-password'), BackgroundBusyError);
    assert.throws(() => background.admit('forgot-password', work), BackgroundBusyError);
    assert.equal(background.size, 2);
    release();
    await background.drain();
    assert.equal(done, 2, 'the refused work never ran');
    background.admit('forgot-password', work);
    await background.drain();
    assert.equal(done, 3);
    assert.ok(!lines.some((line) => String(line['msg']).startsWith('background work dropped')), 'nothing dropped');
  });

  test('work in one lane runs in the order admitted, one at a time, whatever each waits on', async () => {
    const { logger } = capturingLogger();
    const background = new BackgroundWork(logger, { concurrency: 4 });
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const order: string[] = [];
    background.admit(
      'identity-change',
      async () => {
        order.push('first started');
        await firstHeld;
        order.push('first done');
      },
      'customer-1',
    );
    background.admit('identity-change', async () => void order.push('second'), 'customer-1');
    background.admit('identity-change', async () => void order.push('other lane'), 'customer-2');
    await new Promise<void>((resolve) => {
      const poll = () => (order.includes('other lane') ? resolve() : setImmediate(poll));
      poll();
    });
    assert.deepEqual(order, ['first started', 'other lane'], 'the second waits; another lane does not');
    releaseFirst();
    await background.drain();
    assert.deepEqual(order, ['first started', 'other lane', 'first done', 'second']);
  });

  test('a failed task in a lane does not stop the next one', async () => {
    const { logger } = capturingLogger();
    const background = new BackgroundWork(logger, { concurrency: 1 });
    let done = 0;
    background.admit('broken', async () => Promise.reject(new Error('boom')), 'lane');
    background.admit('fine', async () => void (done += 1), 'lane');
    await background.drain();
    assert.equal(done, 1);
  });

  test('a failing task is logged and does not stop the others', async () => {
    const { logger, lines } = capturingLogger();
    const background = new BackgroundWork(logger, { concurrency: 1 });
    let done = 0;
    background.run('broken', async () => {
      throw new Error('boom');
    });
    background.run('fine', async () => {
      done += 1;
    });
    await background.drain();
    assert.equal(done, 1);
    assert.ok(lines.some((line) => line['msg'] === 'background work failed' && line['task'] === 'broken'));
  });
});
