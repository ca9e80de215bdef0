import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { Algorithm } from '@node-rs/argon2';
import { HashPool } from '../../src/auth/rules/hash-pool.js';
import { testArgon2 } from '../helpers/argon2.js';
import { loadConfig } from '../../src/config.js';
import { configuredHasher } from '../../src/services.js';
import { until } from '../helpers/races.js';

const options = { algorithm: Algorithm.Argon2id, ...testArgon2 };

/** Thread id → name and nice value, for this process's threads. */
function threadTable(): Map<string, { name: string; nice: number }> {
  const threads = new Map<string, { name: string; nice: number }>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch (error) {
      // A thread that ended between the listing and the read (the test ends some) is not running.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    // Field 2 is the parenthesised name; field 19 (nice) is the 17th after it.
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    threads.set(tid, { name, nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) });
  }
  return threads;
}

/** The hashing threads started since `before` was read: tid and nice. */
function newHashThreads(before: Map<string, unknown>): Array<[string, number]> {
  return [...threadTable()]
    .filter(([tid, thread]) => !before.has(tid) && thread.name === 'sfa-hash')
    .map(([tid, thread]) => [tid, thread.nice]);
}

describe('HashPool', () => {
  test('hashes and verifies on its threads, more jobs than threads, each with its own answer', async () => {
    const pool = new HashPool(2);
    try {
      const passwords = Array.from({ length: 7 }, (_, i) => `password number ${i}`);
      const hashes = await Promise.all(passwords.map((password) => pool.hash(password, options)));
      assert.equal(new Set(hashes).size, 7, 'every hash is salted');
      const right = await Promise.all(hashes.map((hash, i) => pool.verify(hash, passwords[i]!)));
      const wrong = await Promise.all(hashes.map((hash, i) => pool.verify(hash, passwords[(i + 1) % 7]!)));
      assert.deepEqual(right, Array(7).fill(true));
      assert.deepEqual(wrong, Array(7).fill(false));
    } finally {
      await pool.close();
    }
  });

  test('rejects a malformed hash with an error and keeps serving', async () => {
    const pool = new HashPool(1);
    try {
      await assert.rejects(pool.verify('not a PHC string', 'whatever 1'));
      const hash = await pool.hash('still working 1', options);
      assert.equal(await pool.verify(hash, 'still working 1'), true);
    } finally {
      await pool.close();
    }
  });

  test('close rejects the work it did not finish and refuses new work', async () => {
    const pool = new HashPool(1);
    const running = assert.rejects(pool.hash('running one 1', options), /hashing pool closed/);
    const queued = assert.rejects(pool.hash('queued one 2', options), /hashing pool closed/);
    await pool.close();
    await Promise.all([running, queued]);
    await assert.rejects(pool.verify('$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA', 'x'), /hashing pool closed/);
  });

  test(
    'runs its threads below the event loop’s priority on Linux, named sfa-hash',
    { skip: process.platform !== 'linux' },
    async () => {
      const before = threadTable();
      const own = before.get(String(process.pid))!.nice;
      const pool = new HashPool(2);
      try {
        await Promise.all([pool.hash('first one 1', options), pool.hash('second one 2', options)]);
        assert.deepEqual(
          newHashThreads(before).map(([, nice]) => nice),
          [10, 10],
          'two new hashing threads at nice 10',
        );
        assert.equal(threadTable().get(String(process.pid))!.nice, own, 'the main thread keeps its priority');
      } finally {
        await pool.close();
      }
    },
  );

  test('runs its threads at the nice it is given on Linux', { skip: process.platform !== 'linux' }, async () => {
    const before = threadTable();
    const pool = new HashPool(2, { nice: 7 });
    try {
      await Promise.all([pool.hash('first one 1', options), pool.hash('second one 2', options)]);
      assert.deepEqual(
        newHashThreads(before).map(([, nice]) => nice),
        [7, 7],
      );
    } finally {
      await pool.close();
    }
  });

  test(
    'a thread that has had no work for the idle time ends, and the next hash starts one again',
    { skip: process.platform !== 'linux' },
    async () => {
      const before = threadTable();
      const pool = new HashPool(1, { idleMs: 50 });
      try {
        const hash = await pool.hash('ends when idle 1', options);
        const [first] = newHashThreads(before);
        assert.ok(first !== undefined, 'a hashing thread ran the hash');
        await until(async () => !threadTable().has(first[0]), 'the idle thread ended');
        assert.equal(await pool.verify(hash, 'ends when idle 1'), true);
        const again = newHashThreads(before);
        assert.equal(again.length, 1, 'one new thread for the next job');
        assert.notEqual(again[0]![0], first[0]);
      } finally {
        await pool.close();
      }
    },
  );

  test(
    'by default a thread outlasts a lull of four minutes, so a burst after it starts none, and ends after five',
    { skip: process.platform !== 'linux' },
    async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const before = threadTable();
      const pool = new HashPool(1);
      try {
        const hash = await pool.hash('kept warm 1', options);
        const [first] = newHashThreads(before);
        assert.ok(first !== undefined, 'a hashing thread ran the hash');
        t.mock.timers.tick(4 * 60_000);
        assert.equal(await pool.verify(hash, 'kept warm 1'), true);
        assert.deepEqual(
          newHashThreads(before).map(([tid]) => tid),
          [first[0]],
          'the thread that hashed four minutes ago ran the check',
        );
        t.mock.timers.tick(5 * 60_000);
        assert.equal(await pool.verify(hash, 'kept warm 1'), true);
        assert.ok(
          newHashThreads(before).some(([tid]) => tid !== first[0]),
          'after five quiet minutes the check needed a new thread',
        );
      } finally {
        await pool.close();
      }
    },
  );

  test('a thread is ended only between jobs: a queue of work outlasting the idle time is all answered', async () => {
    const pool = new HashPool(1, { idleMs: 1 });
    try {
      const passwords = Array.from({ length: 6 }, (_, i) => `queued ${i} one`);
      const hashes = await Promise.all(passwords.map((password) => pool.hash(password, options)));
      const checks = await Promise.all(hashes.map((hash, i) => pool.verify(hash, passwords[i]!)));
      assert.deepEqual(checks, [true, true, true, true, true, true]);
    } finally {
      await pool.close();
    }
  });

  test('an idle pool does not keep the process alive', () => {
    const script = `
      import { HashPool } from './src/auth/rules/hash-pool.ts';
      const pool = new HashPool(2);
      console.log(await pool.verify(await pool.hash('exit after me 1', { memoryCost: 1024, timeCost: 1, parallelism: 1 }), 'exit after me 1'));
    `;
    const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(output.trim(), 'true');
  });

  test(
    'HASH_THREADS sets how many hashing threads the service starts and how many hashes run at once',
    { skip: process.platform !== 'linux' },
    async () => {
      for (const threads of [1, 3]) {
        const before = threadTable();
        const hasher = configuredHasher(loadConfig({ HASH_THREADS: String(threads) }));
        // Twice as many hashes as threads, all at once: a smaller gate or pool would start fewer threads.
        const hashes = await Promise.all(
          Array.from({ length: threads * 2 }, (_, i) => hasher.hash(`threads ${threads} hash ${i}`)),
        );
        assert.equal(new Set(hashes).size, threads * 2);
        const started = newHashThreads(before);
        assert.equal(started.length, threads, `HASH_THREADS=${threads}: ${started.length} new hashing threads`);
      }
    },
  );
});

/** Runs each job and records its label once it settles, so the order of completion can be compared. */
function recordCompletion(order: string[], jobs: Array<[string, () => Promise<unknown>]>): Promise<unknown[]> {
  return Promise.all(jobs.map(([label, job]) => job().finally(() => order.push(label))));
}

describe('HashPool lanes', () => {
  test('a burst in one lane delays another lane’s job by one of its hashes, not the whole burst', async () => {
    const pool = new HashPool(1);
    try {
      const hash = await pool.hash('burst password 1', options);
      const order: string[] = [];
      // All submitted at once: A1 takes the only thread, A2…A20 and then B1 wait.
      const jobs: Array<[string, () => Promise<boolean>]> = Array.from({ length: 20 }, (_, i) => [
        `A${i + 1}`,
        () => pool.verify(hash, 'burst password 1', 'A'),
      ]);
      jobs.push(['B1', () => pool.verify(hash, 'burst password 1', 'B')]);
      const answers = await recordCompletion(order, jobs);
      assert.deepEqual(answers, Array(21).fill(true));
      assert.ok(order.indexOf('B1') < order.indexOf('A3'), order.join(','));
      const a = Array.from({ length: 20 }, (_, i) => `A${i + 1}`);
      assert.deepEqual(order, [...a.slice(0, 2), 'B1', ...a.slice(2)], 'lane A keeps its arrival order');
    } finally {
      await pool.close();
    }
  });

  test('lanes with work waiting take turns: A, B, C, A, B, C', async () => {
    const pool = new HashPool(1);
    try {
      const order: string[] = [];
      // The first job takes the thread, so all nine after it wait and are taken in turn.
      const jobs: Array<[string, () => Promise<string>]> = [['first', () => pool.hash('occupies 1', options, 'X')]];
      for (const lane of ['A', 'B', 'C']) {
        for (let i = 1; i <= 3; i += 1) jobs.push([`${lane}${i}`, () => pool.hash(`${lane} ${i} pw`, options, lane)]);
      }
      await recordCompletion(order, jobs);
      assert.deepEqual(order, ['first', 'A1', 'B1', 'C1', 'A2', 'B2', 'C2', 'A3', 'B3', 'C3']);
    } finally {
      await pool.close();
    }
  });

  test('close rejects the work waiting in every lane and refuses new work in any', async () => {
    const pool = new HashPool(1);
    const closed = /hashing pool closed/;
    const pending = [
      pool.hash('running one 1', options, 'A'),
      pool.hash('queued one 2', options, 'A'),
      pool.hash('queued one 3', options, 'B'),
      pool.hash('queued one 4', options, 'C'),
      pool.hash('queued one 5', options),
    ].map((job) => assert.rejects(job, closed));
    await pool.close();
    await Promise.all(pending);
    await assert.rejects(pool.hash('after close 1', options, 'B'), closed);
    await assert.rejects(pool.verify('$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA', 'x', 'C'), closed);
  });
});
