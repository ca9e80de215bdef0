import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createArgon2Hasher } from '../src/auth/rules/password.js';
import { consumeChallenge, issueChallenge } from '../src/auth/tables/codes.js';
import { createSession, findSessionCustomer, hashSessionId } from '../src/auth/tables/sessions.js';
import { runAdminCommand } from '../src/cli/commands.js';
import { ConfigError, defaultRetention, loadConfig } from '../src/config.js';
import { enqueueMessage } from '../src/delivery/outbox.js';
import { prune, type PruneLimits, type RemovedRows } from '../src/janitor.js';
import { deriveKeys } from '../src/keys.js';
import { createLogger, openServices } from '../src/services.js';
import type { Database, Queryable, StoreDatabase } from '../src/storage/database.js';
import { MemoryCounterStore } from '../src/storage/counters.js';
import { migrate } from '../src/storage/migrations.js';
import { openPostgres } from '../src/storage/postgres.js';
import { testArgon2 } from './helpers/argon2.js';
import { FakeClock } from './helpers/clock.js';
import { openTestDatabase, seedFirstStore, truncateAll, type TestDatabase } from './helpers/database.js';
import { capturingLogger } from './helpers/logs.js';
import { runCli } from './helpers/service-process.js';

const day = 24 * 60 * 60;
const secret = 'janitor-test-secret-janitor-test-secret-0123';
const keys = deriveKeys(secret);
const nothing: RemovedRows = {
  sessions: 0,
  challenges: 0,
  outbox: 0,
  webhook_events: 0,
  audit_events: 0,
  known_devices: 0,
  passkey_challenges: 0,
  pending_sign_ins: 0,
  idempotency_keys: 0,
  provider_states: 0,
};

/** A fake clock that moves to "start + offset seconds", so each step reads as a point on one timeline. */
function timeline() {
  const clock = new FakeClock();
  const start = clock.now().getTime();
  const at = (offsetSeconds: number) => new Date(start + offsetSeconds * 1000);
  const moveTo = (offsetSeconds: number) => clock.advance(offsetSeconds - (clock.now().getTime() - start) / 1000);
  return { clock, at, moveTo };
}

describe('the janitor', () => {
  let database: TestDatabase;
  let db: Database;
  /** The database as the first store's tables see it. */
  let store: StoreDatabase;
  before(async () => {
    database = await openTestDatabase();
    db = database.db;
    await migrate(db);
  });
  beforeEach(async () => {
    await truncateAll(db);
    store = await seedFirstStore(db);
  });
  after(async () => database.drop());

  async function insertCustomer(createdAt: Date): Promise<string> {
    const id = randomUUID();
    await db.query(
      `INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, created_at, updated_at)
       VALUES ('default', $1, 'Ada', 'email', $2, 'not a hash', $3, $3)`,
      [id, `${id}@example.com`, createdAt],
    );
    return id;
  }

  async function ids(sql: string): Promise<string[]> {
    return (await db.query<{ id: string }>(sql)).map((row) => row.id).sort();
  }

  test('a session is deleted one day after it ended, by idle timeout or by absolute lifetime alike', async () => {
    const { clock, moveTo } = timeline();
    const customerId = await insertCustomer(clock.now());
    const opening = { customerId, credentialVersion: 1 };
    const idle = (await createSession(store, clock, opening))!.session; // never used again: ends at 14 days
    const busy = (await createSession(store, clock, opening))!.session; // used every 10 days: ends at 30 days
    const pass = () => prune({ db, clock, retention: defaultRetention });
    const stored = () => ids('SELECT id_hash AS id FROM sessions');
    for (const offset of [10, 20, 28]) {
      moveTo(offset * day);
      assert.ok(await findSessionCustomer(store, clock, busy.sessionId), `the busy session is live at day ${offset}`);
    }

    moveTo(15 * day - 1);
    assert.equal(await findSessionCustomer(store, clock, idle.sessionId), null, 'the idle session has ended');
    assert.deepEqual(await pass(), nothing, 'it is kept until a whole day has passed since its end');
    moveTo(15 * day);
    assert.deepEqual(await pass(), { ...nothing, sessions: 1 });
    assert.deepEqual(await stored(), [hashSessionId(busy.sessionId)]);

    moveTo(31 * day - 1);
    assert.equal(await findSessionCustomer(store, clock, busy.sessionId), null, 'the busy session has ended');
    assert.deepEqual(await pass(), nothing);
    moveTo(31 * day);
    assert.deepEqual(await pass(), { ...nothing, sessions: 1 });
    assert.deepEqual(await stored(), []);
  });

  test('a code is deleted one day after it was used, replaced or expired; one killed by wrong tries one day after its expiry', async () => {
    const { clock, moveTo } = timeline();
    const deps = { clock, keys };
    const ada = await insertCustomer(clock.now());
    const bob = await insertCustomer(clock.now());
    const used = await issueChallenge(store, deps, ada, 'verification');
    const guessed = await issueChallenge(store, deps, bob, 'verification');
    moveTo(30);
    const wrong = guessed.code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i += 1) assert.equal(await consumeChallenge(store, deps, bob, 'verification', wrong), false);
    assert.equal(await consumeChallenge(store, deps, bob, 'verification', guessed.code), false, 'dead after 5 tries');
    moveTo(60);
    assert.equal(await consumeChallenge(store, deps, ada, 'verification', used.code), true);
    moveTo(120);
    const replaced = await issueChallenge(store, deps, ada, 'password_reset');
    moveTo(180);
    const expired = await issueChallenge(store, deps, ada, 'password_reset'); // never used: expires at 780 s

    // Each code's end, in order: use, replacement, expiry after the wrong tries, plain expiry.
    const ends: Array<[string, number]> = [
      [used.challengeId, 60],
      [replaced.challengeId, 180],
      [guessed.challengeId, 600],
      [expired.challengeId, 780],
    ];
    let remaining = ends.map(([id]) => id).sort();
    for (const [id, end] of ends) {
      moveTo(end + day - 1);
      assert.deepEqual(await prune({ db, clock, retention: defaultRetention }), nothing, `${end} s: not yet`);
      moveTo(end + day);
      assert.deepEqual(await prune({ db, clock, retention: defaultRetention }), { ...nothing, challenges: 1 });
      remaining = remaining.filter((other) => other !== id);
      assert.deepEqual(await ids('SELECT id::text AS id FROM challenges'), remaining);
    }
  });

  test('sent and dropped messages go after 7 days, failed ones after 30, pending ones never', async () => {
    const { clock, at, moveTo } = timeline();
    const message = {
      channel: 'email',
      purpose: 'password_changed',
      customerId: null,
      storeName: 'S',
      language: 'en',
    } as const;
    const enqueue = async (status: string, withBody: boolean) => {
      const id = await enqueueMessage(store, { clock, keys }, { ...message, to: `${status}@example.com` });
      await db.query(
        `UPDATE outbox SET status = $2, updated_at = $3, sealed_body = CASE WHEN $4 THEN sealed_body END WHERE id = $1`,
        [id, status, at(0), withBody],
      );
      return id;
    };
    const sent = await enqueue('sent', false);
    const dropped = await enqueue('dropped', false);
    const failed = await enqueue('failed', true);
    const pending = await enqueue('pending', true);
    const pass = () => prune({ db, clock, retention: defaultRetention });
    const stored = () => ids('SELECT id::text AS id FROM outbox');

    moveTo(7 * day - 1);
    assert.deepEqual(await pass(), nothing);
    moveTo(7 * day);
    assert.deepEqual(await pass(), { ...nothing, outbox: 2 });
    assert.deepEqual(await stored(), [failed, pending].sort());
    assert.ok(!(await stored()).includes(sent) && !(await stored()).includes(dropped));

    moveTo(30 * day - 1);
    assert.deepEqual(await pass(), nothing);
    moveTo(30 * day);
    assert.deepEqual(await pass(), { ...nothing, outbox: 1 });
    moveTo(4000 * day);
    assert.deepEqual(await pass(), nothing);
    assert.deepEqual(await stored(), [pending]);
  });

  test('a code stays while a message that still holds its body points at it, and goes with that message', async () => {
    const { clock, at, moveTo } = timeline();
    const ada = await insertCustomer(clock.now());
    const issued = await issueChallenge(store, { clock, keys }, ada, 'verification');
    const id = await enqueueMessage(
      store,
      { clock, keys },
      {
        channel: 'email',
        purpose: 'verification',
        to: 'ada@example.com',
        customerId: ada,
        storeName: 'S',
        language: 'en',
        code: { value: issued.code, expiresAt: issued.expiresAt },
        challengeId: issued.challengeId,
      },
    );
    await db.query(`UPDATE outbox SET status = 'failed', updated_at = $2 WHERE id = $1`, [id, at(3600)]);

    moveTo(600 + day);
    assert.deepEqual(await prune({ db, clock, retention: defaultRetention }), nothing);
    moveTo(3600 + 30 * day);
    assert.deepEqual(await prune({ db, clock, retention: defaultRetention }), { ...nothing, outbox: 1, challenges: 1 });
  });

  test('audit events go after 400 days by default, or after AUDIT_RETENTION_DAYS', async () => {
    const { clock, at, moveTo } = timeline();
    for (const offset of [0, 1]) {
      await db.query(
        `INSERT INTO audit_events (store_id, occurred_at, event, client_address) VALUES ('default', $1, 'logout', '::1')`,
        [at(offset)],
      );
    }
    const short = loadConfig({ AUDIT_RETENTION_DAYS: '30' }).retention;
    moveTo(30 * day);
    assert.deepEqual(await prune({ db, clock, retention: short }), { ...nothing, audit_events: 1 });
    await db.query(
      `INSERT INTO audit_events (store_id, occurred_at, event, client_address) VALUES ('default', $1, 'logout', '::1')`,
      [at(0)],
    );
    moveTo(400 * day);
    assert.deepEqual(await prune({ db, clock, retention: defaultRetention }), { ...nothing, audit_events: 1 });
    assert.equal((await db.query('SELECT 1 FROM audit_events')).length, 1, 'the event 1 s younger stays');
    moveTo(400 * day + 1);
    assert.deepEqual(await prune({ db, clock, retention: defaultRetention }), { ...nothing, audit_events: 1 });
  });

  test('a pass deletes in batches and stops at its bound; the next pass goes on', async () => {
    const { clock, moveTo } = timeline();
    await db.query(
      `INSERT INTO audit_events (store_id, occurred_at, event, client_address)
       SELECT 'default', $1, 'logout', '::1' FROM generate_series(1, 7)`,
      [clock.now()],
    );
    moveTo(400 * day);
    const batches: number[] = [];
    const deps = {
      db,
      clock,
      retention: defaultRetention,
      removed: (_table: string, rows: number) => void batches.push(rows),
    };
    const limits: PruneLimits = { batchSize: 3, maxBatchesPerTable: 2 };
    assert.deepEqual(await prune(deps, limits), { ...nothing, audit_events: 6 });
    assert.deepEqual(await prune(deps, limits), { ...nothing, audit_events: 1 });
    assert.deepEqual(batches, [3, 3, 1]);
  });

  /** One dead row in each of sessions, outbox, audit_events and known_devices, long past any default retention. */
  async function deadRowsInFourTables(clock: FakeClock) {
    const old = new Date(clock.now().getTime() - 500 * day * 1000);
    const customerId = await insertCustomer(old);
    await db.query(
      `INSERT INTO sessions (store_id, id_hash, customer_id, created_at, last_seen_at, expires_at)
       VALUES ('default', 'dead', $1, $2, $2, $2)`,
      [customerId, old],
    );
    const message = await enqueueMessage(
      store,
      { clock, keys },
      {
        channel: 'email',
        purpose: 'password_changed',
        to: 'ada@example.com',
        customerId,
        storeName: 'S',
        language: 'en',
      },
    );
    await db.query(`UPDATE outbox SET status = 'sent', sealed_body = NULL, updated_at = $2 WHERE id = $1`, [
      message,
      old,
    ]);
    await db.query(
      `INSERT INTO audit_events (store_id, occurred_at, event, client_address) VALUES ('default', $1, 'logout', '::1')`,
      [old],
    );
    await db.query(
      `INSERT INTO known_devices (store_id, customer_id, family, masked_address, last_seen_at)
       VALUES ('default', $1, 'Firefox', '::/48', $2)`,
      [customerId, old],
    );
  }

  async function rowsLeft(): Promise<Record<string, number>> {
    const [row] = await db.query<Record<string, number>>(
      `SELECT (SELECT count(*)::int FROM sessions) AS sessions, (SELECT count(*)::int FROM outbox) AS outbox,
              (SELECT count(*)::int FROM audit_events) AS audit_events,
              (SELECT count(*)::int FROM known_devices) AS known_devices`,
    );
    return row!;
  }

  test('a table whose delete fails is named in the error, and every other table is still pruned', async () => {
    const { clock } = timeline();
    await deadRowsInFourTables(clock);
    // A retention the configuration refuses can still be built in code: its cutoff is before
    // PostgreSQL's earliest timestamp, so the audit_events delete fails in the database itself.
    const retention = { ...defaultRetention, auditDays: 3_000_000 };
    await assert.rejects(prune({ db, clock, retention }), (error: Error & { removed?: RemovedRows }) => {
      assert.match(error.message, /^could not prune audit_events \(timestamp out of range[^)]*\)$/);
      assert.deepEqual(error.removed, { ...nothing, sessions: 1, outbox: 1, known_devices: 1 });
      return true;
    });
    assert.deepEqual(await rowsLeft(), { sessions: 0, outbox: 0, audit_events: 1, known_devices: 0 });
  });

  test('two janitors at once delete every dead row exactly once, without an error', async () => {
    const { clock } = timeline();
    const customerId = await insertCustomer(clock.now());
    const rows = 1_200;
    const old = new Date(clock.now().getTime() - 500 * day * 1000);
    await db.query(
      `INSERT INTO sessions (store_id, id_hash, customer_id, created_at, last_seen_at, expires_at)
       SELECT 'default', 'dead-' || n, $1, $2, $2, $2 FROM generate_series(1, $3::int) AS n`,
      [customerId, old, rows],
    );
    await db.query(
      `INSERT INTO audit_events (store_id, occurred_at, event, client_address)
       SELECT 'default', $1, 'logout', '::1' FROM generate_series(1, $2::int)`,
      [old, rows],
    );
    // On a server, the second janitor is another instance: a pool of its own.
    const other = database.url === undefined ? db : openPostgres(database.url, { max: 2 });
    try {
      const limits: PruneLimits = { batchSize: 50, maxBatchesPerTable: 1_000 };
      const [a, b] = await Promise.all([
        prune({ db, clock, retention: defaultRetention }, limits),
        prune({ db: other, clock, retention: defaultRetention }, limits),
      ]);
      assert.equal(a.sessions + b.sessions, rows);
      assert.equal(a.audit_events + b.audit_events, rows);
      assert.equal((await db.query('SELECT 1 FROM sessions')).length, 0);
      assert.equal((await db.query('SELECT 1 FROM audit_events')).length, 0);
    } finally {
      if (other !== db) await other.close();
    }
  });

  test('each delete selects its rows through an index (EXPLAIN with sequential scans disabled)', async () => {
    const { clock } = timeline();
    const plans: string[] = [];
    await db.transaction(async (tx) => {
      // Tables this small are cheapest to scan; forbidding that shows whether an index can serve.
      await tx.query('SET LOCAL enable_seqscan = off');
      const explaining: Queryable = {
        async query<Row>(sql: string, params?: readonly unknown[]) {
          const plan = await tx.query<Record<string, string>>(`EXPLAIN ${sql}`, params);
          plans.push(plan.map((line) => line['QUERY PLAN']).join('\n'));
          return [{ n: 0 }] as Row[];
        },
        exec: (sql: string) => tx.exec(sql),
      };
      await prune({ db: explaining, clock, retention: defaultRetention });
      // Deleting a code makes PostgreSQL clear outbox.challenge_id in the rows pointing at it.
      await explaining.query('UPDATE ONLY outbox SET challenge_id = NULL WHERE challenge_id = $1', [randomUUID()]);
    });
    const expected = [
      ['sessions', ['sessions_expires', 'sessions_last_seen']],
      ['outbox', ['outbox_finished']],
      ['webhook_events', ['webhook_events_created', 'webhook_deliveries_event']],
      ['challenges', ['challenges_finished', 'outbox_challenge']],
      ['audit_events', ['audit_events_time']],
      ['known_devices', ['known_devices_last_seen']],
      ['passkey_challenges', ['passkey_challenges_expires']],
      ['pending_sign_ins', ['pending_sign_ins_expires']],
      ['idempotency_keys', ['idempotency_keys_created']],
      ['provider_states', ['provider_states_expires']],
      ['outbox.challenge_id', ['outbox_challenge']],
    ] as const;
    assert.equal(plans.length, expected.length);
    for (const [index, [table, indexes]] of expected.entries()) {
      const plan = plans[index]!;
      assert.doesNotMatch(plan, /Seq Scan/, `${table}: ${plan}`);
      for (const name of indexes) assert.match(plan, new RegExp(`\\b${name}\\b`), `${table} uses ${name}: ${plan}`);
    }
  });

  test(
    'every instance runs the janitor from its start and counts what it removed by table',
    { timeout: 30_000 },
    async () => {
      const { clock } = timeline();
      await db.query(
        `INSERT INTO audit_events (store_id, occurred_at, event, client_address) VALUES ('default', $1, 'logout', '::1')`,
        [new Date(clock.now().getTime() - 401 * day * 1000)],
      );
      const config = loadConfig({ APP_SECRET: secret, DATA_DIR: '/nonexistent' });
      const services = await openServices(config, createLogger({ level: 'silent' }), {
        db,
        clock,
        counters: new MemoryCounterStore(),
        hasher: createArgon2Hasher(testArgon2),
        manualDispatch: true,
      });
      try {
        await services.janitor.nextPass();
        assert.equal((await db.query('SELECT 1 FROM audit_events')).length, 0);
        const text = await services.metrics.registry.metrics();
        assert.match(text, /^storefront_janitor_removed_rows_total\{table="audit_events"\} 1$/m);
      } finally {
        await services.close();
      }
    },
  );

  test('a janitor pass that fails is logged, and counted under the name of its loop', async () => {
    // Every batched delete fails, as when the database drops the connection mid-pass.
    const failing: Database = {
      query: <Row>(sql: string, params?: readonly unknown[]) =>
        sql.includes('SKIP LOCKED') ? Promise.reject(new Error('connection lost')) : db.query<Row>(sql, params),
      exec: (sql) => db.exec(sql),
      transaction: (work) => db.transaction(work),
      close: async () => {},
    };
    const { logger, lines } = capturingLogger();
    const config = loadConfig({ APP_SECRET: secret, DATA_DIR: '/nonexistent' });
    const services = await openServices(config, logger, {
      db: failing,
      counters: new MemoryCounterStore(),
      hasher: createArgon2Hasher(testArgon2),
      manualDispatch: true,
    });
    try {
      await services.janitor.nextPass();
      const text = await services.metrics.registry.metrics();
      assert.match(text, /^storefront_background_pass_failures_total\{loop="janitor"\} 1$/m);
      const warning = lines.find((line) => line['msg'] === 'janitor pass failed; will try again');
      // Each table was tried on its own, and each is named with its cause.
      assert.equal(
        (warning?.['err'] as { message?: string } | undefined)?.message,
        `could not prune ${[
          'sessions',
          'outbox',
          'webhook_events',
          'challenges',
          'audit_events',
          'known_devices',
          'passkey_challenges',
          'pending_sign_ins',
          'idempotency_keys',
          'provider_states',
        ]
          .map((table) => `${table} (connection lost)`)
          .join(', ')}`,
      );
    } finally {
      await services.close();
    }
  });

  test('the prune command runs one pass and reports what it removed', async () => {
    const { clock } = timeline();
    await db.query(
      `INSERT INTO audit_events (store_id, occurred_at, event, client_address) VALUES ('default', $1, 'logout', '::1')`,
      [new Date(clock.now().getTime() - 31 * day * 1000)],
    );
    const config = loadConfig({ AUDIT_RETENTION_DAYS: '31' });
    assert.deepEqual(await runAdminCommand({ db, clock, retention: config.retention, config }, { name: 'prune' }), {
      ok: true,
      output: { removed: { ...nothing, audit_events: 1 } },
    });
  });

  // Through the binary on this file's own database, which is a server in both modes.
  test('storefront-auth prune prints what it removed', async () => {
    await db.query(
      `INSERT INTO audit_events (store_id, occurred_at, event, client_address)
       VALUES ('default', now() - interval '2 days', 'logout', '::1')`,
    );
    const child = runCli(['prune'], { DATABASE_URL: database.url!, APP_SECRET: secret, AUDIT_RETENTION_DAYS: '1' });
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise((resolve) => child.once('close', resolve));
    assert.equal(code, 0);
    assert.deepEqual(JSON.parse(stdout), { removed: { ...nothing, audit_events: 1 } });
  });

  // A real failure in the database the command uses: the table is not there under its name.
  test('storefront-auth prune names the table it could not prune, exits 1, and still prunes the others', async () => {
    const { clock } = timeline();
    await deadRowsInFourTables(clock);
    await db.query('ALTER TABLE audit_events RENAME TO audit_events_away');
    try {
      const child = runCli(['prune'], { DATABASE_URL: database.url, APP_SECRET: secret });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise((resolve) => child.once('close', resolve));
      assert.equal(code, 1, stderr);
      assert.equal(stdout, '');
      assert.equal(
        stderr,
        `storefront-auth: could not prune audit_events (relation "audit_events" does not exist); removed ${JSON.stringify(
          { ...nothing, sessions: 1, outbox: 1, known_devices: 1 },
        )}\n`,
      );
    } finally {
      await db.query('ALTER TABLE audit_events_away RENAME TO audit_events');
    }
    assert.deepEqual(await rowsLeft(), { sessions: 0, outbox: 0, audit_events: 1, known_devices: 0 });
  });
});

describe('retention settings', () => {
  test('default to 1 day for sessions and codes, 7 for messages, 30 for failed ones, 400 for audit events, a pass every 300 s', () => {
    const config = loadConfig({});
    assert.deepEqual(config.retention, {
      sessionDays: 1,
      codeDays: 1,
      messageDays: 7,
      failedMessageDays: 30,
      auditDays: 400,
    });
    assert.equal(config.janitorIntervalSeconds, 300);
  });

  test('take fractions of a day and refuse anything that is not a number of at least 0, naming the variable', () => {
    assert.equal(loadConfig({ CODE_RETENTION_DAYS: '0.5' }).retention.codeDays, 0.5);
    const variables = [
      'SESSION_RETENTION_DAYS',
      'CODE_RETENTION_DAYS',
      'MESSAGE_RETENTION_DAYS',
      'FAILED_MESSAGE_RETENTION_DAYS',
      'AUDIT_RETENTION_DAYS',
      'JANITOR_INTERVAL_SECONDS',
    ];
    for (const variable of variables) {
      for (const value of ['-1', 'a week', 'Infinity']) {
        assert.throws(
          () => loadConfig({ [variable]: value }),
          (error: unknown) => error instanceof ConfigError && error.variable === variable,
          `${variable}=${value}`,
        );
      }
    }
    assert.throws(() => loadConfig({ JANITOR_INTERVAL_SECONDS: '1.5' }), ConfigError);
  });
});
