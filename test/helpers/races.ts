import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { createArgon2Hasher, type PasswordHasher } from '../../src/auth/rules/password.js';
import { testArgon2 } from './argon2.js';

/**
 * Helpers that force an interleaving instead of hoping for one: a hasher that holds password
 * checks, a lock on the outbox that holds a transaction open before it commits, and a poll.
 */

export interface HeldHasher extends PasswordHasher {
  /** Holds the next `count` password verifications (all of them by default) until `release()`. */
  hold(count?: number): void;
  release(): void;
  /** Resolves once `count` verifications have arrived since `hold`. */
  arrived(count: number): Promise<void>;
}

/** The test hasher, whose password verifications wait while held: logins stop after reading the hash. */
export function heldHasher(): HeldHasher {
  const inner = createArgon2Hasher(testArgon2);
  let held: Promise<void> | undefined;
  let release = () => {};
  let arrived = 0;
  let holding = Infinity;
  const arrivals: Array<{ count: number; resolve: () => void }> = [];
  return {
    hash: (password) => inner.hash(password),
    async verify(passwordHash, password) {
      arrived += 1;
      const turn = arrived;
      for (const waiter of arrivals.filter((w) => w.count <= arrived)) waiter.resolve();
      if (turn <= holding) await held;
      return inner.verify(passwordHash, password);
    },
    verifyDummy: (password) => inner.verifyDummy(password),
    verifyElsewhere: (check, password) => inner.verifyElsewhere(check, password),
    needsRehash: (passwordHash) => inner.needsRehash(passwordHash),
    // Every store's checks are held alike: the helper stands for one hasher, whatever the lane.
    lane() {
      return this;
    },
    hold(count = Infinity) {
      arrived = 0;
      holding = count;
      held = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
    arrived: (count) =>
      count <= arrived ? Promise.resolve() : new Promise((resolve) => arrivals.push({ count, resolve })),
  };
}

/** Polls a condition (never a fixed wait), failing after ten seconds. */
export async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await delay(5);
  }
}

/**
 * How many backends of the watcher's database wait on a lock. The watcher runs outside any
 * transaction: inside one, pg_stat_activity lists the backends of its first read only.
 */
export async function waitingOnLocks(watcher: pg.Client): Promise<number> {
  const { rows } = await watcher.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows[0]?.n ?? 0;
}

export interface OutboxLock {
  /** Takes the lock in a transaction: a write that queues a message waits there, uncommitted. */
  lock(): Promise<void>;
  /** Commits, letting the waiting write go on. */
  commit(): Promise<void>;
  /** How many backends of the database wait on a lock. */
  waitingOnLocks(): Promise<number>;
  close(): Promise<void>;
}

/**
 * An exclusive lock on the outbox from a connection of its own, and a watcher of lock waits on
 * another. The watcher runs outside any transaction: inside one, pg_stat_activity lists the
 * backends of its first read only, and behind a pooler the waiting work may run on server
 * connections opened after it.
 */
export async function outboxLock(databaseUrl: string): Promise<OutboxLock> {
  const locker = new pg.Client({ connectionString: databaseUrl });
  await locker.connect();
  const watcher = new pg.Client({ connectionString: databaseUrl });
  await watcher.connect();
  return {
    async lock() {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE outbox IN EXCLUSIVE MODE');
    },
    async commit() {
      await locker.query('COMMIT');
    },
    waitingOnLocks: () => waitingOnLocks(watcher),
    async close() {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
      await watcher.end();
    },
  };
}

/**
 * Three logins that have checked the password race a write that ends sessions: the write waits on
 * the outbox lock with all of its changes uncommitted, the held logins go on meanwhile, and the
 * write commits once every login has answered or waits on it. Resolves with the write's result
 * and the logins' answers. Three logins and the write each hold one of the test pool's five
 * connections.
 */
export async function loginsAgainstOpenWrite<Write, Answer>(options: {
  databaseUrl: string;
  hasher: HeldHasher;
  login: (index: number) => Promise<Answer>;
  write: () => Promise<Write>;
  /** What the write is, for a timeout's message: "the reset". */
  what: string;
}): Promise<{ written: Write; logins: Answer[] }> {
  const { hasher, what } = options;
  const outbox = await outboxLock(options.databaseUrl);
  try {
    hasher.hold(3);
    let finished = 0;
    const logins = Array.from({ length: 3 }, (_, i) => options.login(i).finally(() => (finished += 1)));
    await hasher.arrived(3);

    await outbox.lock();
    const writing = options.write();
    await until(async () => (await outbox.waitingOnLocks()) === 1, `${what} waits on the outbox`);

    hasher.release();
    await until(
      async () => finished + (await outbox.waitingOnLocks()) - 1 === 3,
      `every login has answered or waits on ${what}`,
    );
    await outbox.commit();
    return { written: await writing, logins: await Promise.all(logins) };
  } finally {
    await outbox.close();
  }
}
