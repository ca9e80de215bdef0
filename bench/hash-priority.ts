/**
 * Hashing threads at several nice values, interleaved so a drifting host load hits them alike:
 * argon2id hashes per second on HASH_THREADS threads (a verify each, production parameters) and
 * the event loop's wake-up delay (p99 of a 2 ms timer's lateness), while `--competitors` child
 * processes at nice 0 stand in for PostgreSQL and Redis (busy 3 ms, idle 2 ms, over and over).
 * `node --import tsx bench/hash-priority.ts --nice=0,5,10 --seconds=5 --rounds=3 --competitors=1`
 */
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Algorithm, hash } from '@node-rs/argon2';
import { defaultHashThreads, HashPool } from '../src/auth/hash-pool.js';
import { productionArgon2 } from '../src/auth/password.js';

const { values } = parseArgs({
  options: {
    nice: { type: 'string', default: '0,5,10' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    competitors: { type: 'string', default: '1' },
  },
});
const niceValues = values.nice.split(',').map(Number);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const threads = defaultHashThreads();
const stored = await hash('bench-Passw0rd-42', { algorithm: Algorithm.Argon2id, ...productionArgon2 });

const competitorSource = `for (;;) { const until = Date.now() + 3; while (Date.now() < until); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2); }`;
const competitors = Array.from({ length: Number(values.competitors) }, () =>
  spawn(process.execPath, ['-e', competitorSource], { stdio: 'ignore' }),
);

async function measure(pool: HashPool): Promise<{ perSecond: number; delayP99Ms: number }> {
  await pool.verify(stored, 'warm up'); // starts the threads, outside the window
  const delay = monitorEventLoopDelay({ resolution: 2 });
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  delay.enable();
  await Promise.all(
    Array.from({ length: threads }, async () => {
      while (performance.now() < deadline) {
        await pool.verify(stored, 'bench-Passw0rd-42');
        done += 1;
      }
    }),
  );
  delay.disable();
  return { perSecond: done / seconds, delayP99Ms: delay.percentile(99) / 1e6 };
}

const results = new Map<number, Array<{ perSecond: number; delayP99Ms: number }>>();
try {
  for (let round = 0; round < rounds; round += 1) {
    for (const nice of niceValues) {
      const pool = new HashPool(threads, nice);
      const result = await measure(pool);
      await pool.close();
      results.set(nice, [...(results.get(nice) ?? []), result]);
      console.log(
        `round ${round + 1} nice ${nice}: ${result.perSecond.toFixed(1)} verifies/s, event loop delay p99 ${result.delayP99Ms.toFixed(2)} ms`,
      );
    }
  }
} finally {
  for (const child of competitors) child.kill();
}
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [nice, list] of results)
  console.log(
    `nice ${nice}: median ${median(list.map((r) => r.perSecond)).toFixed(1)} verifies/s, event loop delay p99 median ${median(list.map((r) => r.delayP99Ms)).toFixed(2)} ms (${threads} threads, ${competitors.length} competitors)`,
  );
