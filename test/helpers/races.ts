import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { createArgon2Hasher, testArgon2, type PasswordHasher } from '../../src/auth/password.js';

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
    needsRehash: (passwordHash) => inner.needsRehash(passwordHash),
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
    async waitingOnLocks() {
      const [row] = (
        await watcher.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      ).rows;
      return row?.n ?? 0;
    },
    async close() {
      await locker.query('ROLLBACK').catch(() => {});
      await locker.end();
      await watcher.end();
    },
  };
}
