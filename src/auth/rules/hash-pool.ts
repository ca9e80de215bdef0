import { createRequire } from 'node:module';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Options } from '@node-rs/argon2';

type HashJob =
  | { op: 'hash'; password: string; options: Options }
  | { op: 'verify'; hash: string; password: string; floorMs: number };
type HashReply = { ok: true; value: string | Checked } | { ok: false; message: string };

/** A verification's answer, and how long the thread took to find it (before any floor). */
export interface Checked {
  matches: boolean;
  ms: number;
}

interface Pending {
  job: HashJob;
  resolve(value: string | Checked): void;
  reject(error: Error): void;
}

/**
 * The hashing threads lower their own scheduling priority to nice 10, so that on a busy machine
 * a waking event loop (nice 0), which answers every other request, preempts hashing instead of
 * waiting for its time slice; measured against nice 5 and 0 beside PostgreSQL and Redis, it kept
 * logins as fast and liveness probes the quickest (BENCHMARKS.md). The thread also names itself
 * `sfa-hash` (for `top -H` and the tests). On Linux setpriority() takes a thread id and changes
 * that thread only; elsewhere hashing keeps the default priority.
 */
const hashThreadNice = 10;
const hashThreadName = 'sfa-hash';
/**
 * A thread that has hashed nothing for this long ends, as the database pool's idle connections
 * do (src/storage/postgres.ts, the same five minutes): each thread is a V8 isolate of its own, and
 * the next hash starts one again at the cost of one slower login. Not shorter: a burst that finds
 * the threads and connections gone starts them all at once, on the cores the event loop needs,
 * and the first probes of the burst waited for it (BENCHMARKS.md, figure 5).
 */
const hashThreadIdleMs = 5 * 60_000;
/** The hashing thread's whole program, plain JavaScript so it runs the same from the sources and from the built package. */
const workerSource = `
const fs = require('node:fs');
const os = require('node:os');
const { parentPort, workerData } = require('node:worker_threads');
const { hashSync, verifySync } = require(workerData.argon2);
const { verifyLegacyHash } = require(workerData.legacy);
const pause = new Int32Array(new SharedArrayBuffer(4));
try {
  fs.writeFileSync('/proc/thread-self/comm', '${hashThreadName}');
} catch {}
try {
  os.setPriority(Number(fs.readlinkSync('/proc/thread-self').split('/').pop()), workerData.nice);
} catch {}
function check(job) {
  const started = performance.now();
  const matches = job.hash.startsWith('$argon2') ? verifySync(job.hash, job.password) : verifyLegacyHash(job.hash, job.password);
  const ms = performance.now() - started;
  // Held here, not by a timer on the event loop: a timer fires a millisecond or more late.
  if (job.floorMs > ms) Atomics.wait(pause, 0, 0, job.floorMs - ms);
  return { matches, ms };
}
parentPort.on('message', (job) => {
  try {
    const value = job.op === 'hash' ? hashSync(job.password, job.options) : check(job);
    parentPort.postMessage({ ok: true, value });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) });
  }
});
`;
const resolve = createRequire(import.meta.url).resolve;
const argon2Module = resolve('@node-rs/argon2');
/** Other systems' hashes (legacy-hashes.cjs): plain CommonJS, so the thread loads it as it is. */
const legacyModule = resolve('./legacy-hashes.cjs');

export interface HashPoolOptions {
  /** The threads' scheduling priority on Linux. */
  nice?: number;
  /** How long a thread may go without work before it ends. */
  idleMs?: number;
}

/** One hashing thread, started on use, ended after a while without work, replaced if it dies. */
class HashThread {
  private worker: Worker | undefined;
  private current: Pending | undefined;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly finished: () => void,
    private readonly nice: number,
    private readonly idleMs: number,
  ) {}

  get idle(): boolean {
    return this.current === undefined;
  }

  run(pending: Pending): void {
    clearTimeout(this.idleTimer);
    this.current = pending;
    const worker = (this.worker ??= this.start());
    // Held only while working: an idle pool never keeps the process alive.
    worker.ref();
    worker.postMessage(pending.job);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.settle()?.reject(new Error('hashing pool closed'));
    clearTimeout(this.idleTimer);
    await worker?.terminate();
  }

  /** Ends an idle thread; a thread with a job is never ended here. */
  private retire(): void {
    if (this.current !== undefined) return;
    const worker = this.worker;
    this.worker = undefined;
    void worker?.terminate();
  }

  private start(): Worker {
    // No inherited flags: the thread needs no loader, and its program is CommonJS whatever the
    // process was started with (--input-type=module would otherwise apply to it).
    const workerData = { argon2: argon2Module, legacy: legacyModule, nice: this.nice };
    const worker = new Worker(workerSource, { eval: true, workerData, execArgv: [] });
    worker.on('message', (reply: HashReply) => {
      const done = this.settle();
      if (reply.ok) done?.resolve(reply.value);
      else done?.reject(new Error(reply.message));
    });
    const lost = (error: Error) => {
      if (this.worker !== worker) return; // closed already, its job settled then
      this.worker = undefined;
      this.settle()?.reject(error);
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`hashing thread exited with code ${code}`)));
    return worker;
  }

  private settle(): Pending | undefined {
    const done = this.current;
    this.current = undefined;
    this.worker?.unref();
    if (this.worker !== undefined) this.idleTimer = setTimeout(() => this.retire(), this.idleMs).unref();
    if (done !== undefined) queueMicrotask(this.finished);
    return done;
  }
}

/**
 * argon2id on dedicated low-priority threads, off the event loop. Its queues are the only ones for
 * hashing work; callers bound what they submit (the hasher's in-flight bound refuses beyond it), and
 * the pool runs it on `size` threads. Work waits in a queue per lane (one per store), served in
 * turn: one store's burst, however long, puts at most one of its hashes ahead of another store's
 * next one, where a single FIFO would make that store wait for the whole burst. Within a lane,
 * work runs in arrival order. The default lane is ''.
 */
export class HashPool {
  private readonly threads: HashThread[];
  /**
   * The lanes with work waiting, in turn order (a Map iterates in insertion order): the first is
   * served next and then goes to the back. A lane is dropped when it empties, so this holds no
   * more than the work waiting, however many lanes have come and gone.
   */
  private readonly lanes = new Map<string, Pending[]>();
  private closed = false;

  constructor(size: number, { nice = hashThreadNice, idleMs = hashThreadIdleMs }: HashPoolOptions = {}) {
    this.threads = Array.from({ length: size }, () => new HashThread(() => this.next(), nice, idleMs));
  }

  hash(password: string, options: Options, lane = ''): Promise<string> {
    return this.submit({ op: 'hash', password, options }, lane) as Promise<string>;
  }

  verify(hash: string, password: string, lane = ''): Promise<boolean> {
    return this.check(hash, password, lane).then((checked) => checked.matches);
  }

  /**
   * Verifies an argon2 hash or another system's (legacy-hashes.cjs), timing the thread's work, and
   * holds the thread until `floorMs` have passed since the check began.
   */
  check(hash: string, password: string, lane = '', floorMs = 0): Promise<Checked> {
    return this.submit({ op: 'verify', hash, password, floorMs }, lane) as Promise<Checked>;
  }

  /** Stops the threads; work not finished, in every lane, is rejected. */
  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.lanes.values()) {
      for (const pending of queue) pending.reject(new Error('hashing pool closed'));
    }
    this.lanes.clear();
    await Promise.all(this.threads.map((thread) => thread.close()));
  }

  private submit(job: HashJob, lane: string): Promise<string | Checked> {
    if (this.closed) return Promise.reject(new Error('hashing pool closed'));
    return new Promise((resolve, reject) => {
      const pending = { job, resolve, reject };
      const queue = this.lanes.get(lane);
      // A lane with nothing waiting joins at the back of the turn order, behind every waiting lane.
      if (queue === undefined) this.lanes.set(lane, [pending]);
      else queue.push(pending);
      this.next();
    });
  }

  private next(): void {
    if (this.closed) return;
    for (const thread of this.threads) {
      if (!thread.idle) continue;
      const pending = this.take();
      if (pending === undefined) return;
      thread.run(pending);
    }
  }

  /** The head of the lane whose turn it is; that lane goes to the back, or is dropped once empty. */
  private take(): Pending | undefined {
    const first = this.lanes.entries().next();
    if (first.done === true) return undefined;
    const [lane, queue] = first.value;
    const pending = queue.shift();
    this.lanes.delete(lane);
    if (queue.length > 0) this.lanes.set(lane, queue);
    return pending;
  }
}

const shared = new Map<number, HashPool>();

/**
 * The process's hashing threads (HASH_THREADS; by default one per core the process may use). Made
 * once per size, so services opened again in one process reuse the threads instead of adding more.
 */
export function sharedHashPool(size = defaultHashThreads()): HashPool {
  let pool = shared.get(size);
  if (pool === undefined) shared.set(size, (pool = new HashPool(size)));
  return pool;
}

/** One per core this process may use: more would only queue hashes on the same cores. */
export function defaultHashThreads(): number {
  return os.availableParallelism();
}
