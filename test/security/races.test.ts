import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, test } from 'node:test';
import { createArgon2Hasher, type PasswordHasher } from '../../src/auth/rules/password.js';
import type { Database, Queryable } from '../../src/storage/database.js';
import { testArgon2 } from '../helpers/argon2.js';
import { auth, useHarness, registeredCustomer, registration, type TestApp } from '../helpers/harness.js';
import { otherThan } from '../helpers/assertions.js';

/**
 * Races an attacker can start with parallel requests. Each burst comes from distinct client
 * addresses, as a botnet's would, so the per-address limits stay out of the way and only the
 * guarantee under test (single use, five tries, one account, atomic counters) stands between the
 * burst and success.
 */

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: any;
}

async function from(
  t: TestApp,
  address: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await t.app.inject({
    method: 'POST',
    url,
    remoteAddress: address,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
  return { status: response.statusCode, headers: response.headers, body: response.json() };
}

function statuses(replies: Answer[]): string {
  return replies.map((reply) => reply.status).join(',');
}

async function count(t: TestApp, sql: string, params: unknown[] = []): Promise<number> {
  const [row] = await t.db.query<{ n: number }>(sql, params);
  return row?.n ?? -1;
}

/** The test hasher, counting every password verification (real or dummy) it is asked for. */
function countingHasher(): PasswordHasher & { verifications: number } {
  const inner = createArgon2Hasher(testArgon2);
  const hasher = {
    verifications: 0,
    hash: (password: string) => inner.hash(password),
    async verify(passwordHash: string, password: string) {
      hasher.verifications += 1;
      return inner.verify(passwordHash, password);
    },
    async verifyDummy(password: string) {
      hasher.verifications += 1;
      return inner.verifyDummy(password);
    },
    async verifyElsewhere(check: () => Promise<boolean | undefined>, password: string) {
      hasher.verifications += 1;
      return inner.verifyElsewhere(check, password);
    },
    needsRehash: (passwordHash: string) => inner.needsRehash(passwordHash),
    // Counted alike whatever the store: the same counter for every lane.
    lane: (): PasswordHasher => hasher,
  };
  return hasher;
}

/** Which guess the request being served carries, so the database can tell whose attempt it counts. */
const currentGuess = new AsyncLocalStorage<string>();

interface Evaluation {
  guess: string;
  /** The attempt was counted (the conditional UPDATE returned the code's row): the code was compared. */
  counted: boolean;
}

/**
 * The database, recording every attempt `consumeChallenge` makes, in the order the database
 * answered them, with the guess of the request that made it. Only a counted attempt goes on to
 * compare the code, so the counted ones are the guesses that were evaluated.
 */
function attemptRecordingDatabase(db: Database, evaluations: Evaluation[]): Database {
  const recording = (inner: Queryable): Queryable => ({
    exec: (sql) => inner.exec(sql),
    async query<Row>(sql: string, params?: readonly unknown[]): Promise<Row[]> {
      const rows = await inner.query<Row>(sql, params);
      const guess = currentGuess.getStore();
      if (guess !== undefined && /SET attempts = attempts \+ 1/.test(sql)) {
        evaluations.push({ guess, counted: rows.length === 1 });
      }
      return rows;
    },
  });
  return {
    ...recording(db),
    transaction: (work) => db.transaction((tx) => work(recording(tx))),
    close: () => db.close(),
  };
}

const newPassword = (i: number) => `parallel engine ${i}x`;

describe('races', () => {
  const harness = useHarness();

  describe('one reset code submitted 16 times at once', () => {
    test('exactly one submission answers 200, the code is consumed once, one notice is queued and every session ends', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      assert.equal(login.status, 200);
      assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
      const code = await t.codeFor(customer.identity, 'password_reset');

      const replies = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          from(t, `10.16.0.${i + 1}`, `${auth}/password/reset`, {
            identity: customer.identity,
            code,
            password: newPassword(i),
            password_confirmation: newPassword(i),
          }),
        ),
      );
      const winners = replies.flatMap((reply, i) => (reply.status === 200 ? [i] : []));
      assert.equal(winners.length, 1, statuses(replies));
      for (const reply of replies.filter((r) => r.status !== 200)) {
        assert.equal(reply.status, 422, JSON.stringify(reply.body));
        assert.equal(reply.body.code, 'invalid_identity_challenge');
      }

      const consumed = await count(
        t,
        `SELECT count(*)::int AS n FROM challenges WHERE purpose = 'password_reset' AND consumed_at IS NOT NULL`,
      );
      assert.equal(consumed, 1, 'one challenge consumed');
      const notices = await count(t, `SELECT count(*)::int AS n FROM outbox WHERE purpose = 'password_changed'`);
      assert.equal(notices, 1, 'one password_changed notice');
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM sessions'), 0, 'the earlier session ended');
      const [winner] = winners;
      assert.ok(winner !== undefined);
      const relogin = await t.post(`${auth}/login`, { identity: customer.identity, password: newPassword(winner) });
      assert.equal(relogin.status, 200, 'the winning password is the one stored');
      const loser = winner === 0 ? 1 : 0;
      const other = await from(t, '10.16.1.1', `${auth}/login`, {
        identity: customer.identity,
        password: newPassword(loser),
      });
      assert.equal(other.status, 401, 'a losing password was never stored');
    });
  });

  describe('50 wrong guesses at one code at once', () => {
    test('at most five verification guesses are evaluated, and then even the right code is refused', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      const code = await t.codeFor(customer.identity, 'verification');
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          from(t, `10.50.${i}.1`, `${auth}/verify`, { identity: customer.identity, code: otherThan(code, i + 1) }),
        ),
      );
      for (const reply of replies) {
        assert.equal(reply.status, 422, statuses(replies));
        assert.equal(reply.body.code, 'invalid_identity_challenge');
      }
      const [challenge] = await t.db.query<{ attempts: number; consumed_at: Date | null }>(
        `SELECT attempts, consumed_at FROM challenges WHERE customer_id = $1 AND purpose = 'verification'`,
        [customer.id],
      );
      assert.ok(challenge);
      assert.ok(challenge.attempts <= 5, `attempts recorded: ${challenge.attempts}`);
      assert.equal(challenge.attempts, 5, 'the five allowed attempts were all spent');
      assert.equal(challenge.consumed_at, null);

      const right = await from(t, '10.50.255.1', `${auth}/verify`, { identity: customer.identity, code });
      assert.equal(right.status, 422, JSON.stringify(right.body));
      assert.equal(right.body.code, 'invalid_identity_challenge');
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM customers WHERE verified_at IS NOT NULL'), 0);
    });

    test('at most five reset guesses are evaluated, and then even the right code is refused', async () => {
      const t = await harness.start();
      const customer = await registeredCustomer(t);
      assert.equal((await t.post(`${auth}/password/forgot`, { identity: customer.identity })).status, 202);
      const code = await t.codeFor(customer.identity, 'password_reset');
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          from(t, `10.51.${i}.1`, `${auth}/password/reset`, {
            identity: customer.identity,
            code: otherThan(code, i + 1),
            password: newPassword(i),
            password_confirmation: newPassword(i),
          }),
        ),
      );
      for (const reply of replies) {
        assert.equal(reply.status, 422, statuses(replies));
        assert.equal(reply.body.code, 'invalid_identity_challenge');
      }
      const [challenge] = await t.db.query<{ attempts: number }>(
        `SELECT attempts FROM challenges WHERE customer_id = $1 AND purpose = 'password_reset'`,
        [customer.id],
      );
      assert.ok(challenge);
      assert.ok(challenge.attempts <= 5, `attempts recorded: ${challenge.attempts}`);
      assert.equal(challenge.attempts, 5);

      const right = await from(t, '10.51.255.1', `${auth}/password/reset`, {
        identity: customer.identity,
        code,
        password: 'difference engine 1822',
        password_confirmation: 'difference engine 1822',
      });
      assert.equal(right.status, 422, JSON.stringify(right.body));
      assert.equal(right.body.code, 'invalid_identity_challenge');
      const login = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      assert.equal(login.status, 200, 'the old password still stands');
    });

    test('a right code racing 49 wrong ones at a fresh code is accepted only if it was among the first five evaluated', async () => {
      const evaluations: Evaluation[] = [];
      const t = await harness.start({ overrides: { db: attemptRecordingDatabase(harness.db, evaluations) } });
      const customer = await registeredCustomer(t);
      const code = await t.codeFor(customer.identity, 'verification');
      const guesses = Array.from({ length: 50 }, (_, i) => (i === 25 ? code : otherThan(code, i + 1)));
      const replies = await Promise.all(
        guesses.map((guess, i) =>
          currentGuess.run(guess, () =>
            from(t, `10.52.${i}.1`, `${auth}/verify`, { identity: customer.identity, code: guess }),
          ),
        ),
      );
      const accepted = replies.flatMap((reply, i) => (reply.status === 200 ? [guesses[i]] : []));
      for (const reply of replies.filter((r) => r.status !== 200)) {
        assert.equal(reply.status, 422, statuses(replies));
        assert.equal(reply.body.code, 'invalid_identity_challenge');
      }

      assert.equal(evaluations.length, 50, 'every guess made its attempt');
      const evaluated = evaluations.filter((e) => e.counted).map((e) => e.guess);
      const [challenge] = await t.db.query<{ attempts: number; consumed_at: Date | null }>(
        `SELECT attempts, consumed_at FROM challenges WHERE customer_id = $1 AND purpose = 'verification'`,
        [customer.id],
      );
      assert.ok(challenge);
      assert.equal(challenge.attempts, evaluated.length, 'the counted attempts are the ones recorded');
      assert.ok(evaluated.length <= 5, `evaluated: ${evaluated.length}`);
      // The right code answers 200 exactly when its attempt was one of the (at most five) counted;
      // a guess past the fifth is refused whatever it is.
      assert.deepEqual(accepted, evaluated.includes(code) ? [code] : [], `evaluated ${evaluated.join(',')}`);
      assert.equal(challenge.consumed_at !== null, accepted.length === 1, 'consumed exactly when one answer was 200');
      const verified = await count(t, 'SELECT count(*)::int AS n FROM customers WHERE verified_at IS NOT NULL');
      assert.equal(verified, accepted.length);
    });
  });

  describe('50 registrations of one identity at once', () => {
    test('create one account, one code and one message on a phone store, however the number is typed', async () => {
      const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
      const spellings = ['+14155550123', '+1 415 555 0123', '+1 (415) 555-0123', '+1.415.555.0123', ' +14155550123 '];
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          from(
            t,
            `10.53.${i}.1`,
            `${auth}/register`,
            registration({
              email: undefined,
              phone: spellings[i % spellings.length],
              name: `Racer ${i}`,
              password: newPassword(i),
              password_confirmation: newPassword(i),
            }),
          ),
        ),
      );
      const winners = replies.flatMap((reply, i) => (reply.status === 201 ? [i] : []));
      assert.equal(winners.length, 1, statuses(replies));
      for (const reply of replies.filter((r) => r.status !== 201)) {
        assert.equal(reply.status, 422, JSON.stringify(reply.body));
        assert.equal(reply.body.code, 'identity_unavailable');
      }
      const rows = await t.db.query<{ name: string; identity_value: string }>(
        'SELECT name, identity_value FROM customers',
      );
      const [winner] = winners;
      assert.ok(winner !== undefined);
      assert.deepEqual(rows, [{ name: `Racer ${winner}`, identity_value: '+14155550123' }]);
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM challenges'), 1, 'one verification challenge');
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM outbox'), 1, 'one queued message');
      const login = await t.post(`${auth}/login`, { identity: '+14155550123', password: newPassword(winner) });
      assert.equal(login.status, 200, "the winner's password is the stored one");
    });
  });

  describe('the failed-login limit per identity under a burst', () => {
    test('at nine failures, 20 parallel logins from 20 addresses let exactly one be checked and refuse 19 with 429 before hashing', async () => {
      const hasher = countingHasher();
      const t = await harness.start({ overrides: { hasher } });
      const customer = await registeredCustomer(t);
      for (let i = 0; i < 9; i += 1) {
        const reply = await from(t, `10.54.0.${i + 1}`, `${auth}/login`, {
          identity: customer.identity,
          password: `wrong engine ${i}`,
        });
        assert.equal(reply.status, 401, `failure ${i + 1}`);
      }
      const verificationsBefore = hasher.verifications;
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          from(t, `10.54.1.${i + 1}`, `${auth}/login`, { identity: customer.identity, password: `burst engine ${i}` }),
        ),
      );
      assert.equal(replies.filter((r) => r.status === 401).length, 1, statuses(replies));
      for (const reply of replies.filter((r) => r.status !== 401)) {
        assert.equal(reply.status, 429, JSON.stringify(reply.body));
        assert.equal(reply.body.code, 'rate_limited');
        assert.equal(reply.headers['ratelimit-limit'], '10');
      }
      assert.equal(
        hasher.verifications - verificationsBefore,
        1,
        'only the admitted attempt reached the password hash',
      );
      await t.services.background.drain();
      const failed = await count(t, `SELECT count(*)::int AS n FROM audit_events WHERE event = 'login.failed'`);
      assert.equal(failed, 10, 'ten evaluated failures in all');
    });
  });
});
