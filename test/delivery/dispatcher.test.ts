import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Dispatcher, type DispatcherOptions } from '../../src/delivery/dispatcher.js';
import type { Transports } from '../../src/delivery/message.js';
import {
  claimDueMessages,
  enqueueMessage,
  listOutbox,
  retryOutboxMessage,
  type NewMessage,
} from '../../src/delivery/outbox.js';
import { unsealContent } from '../../src/delivery/seal.js';
import { createLogTransport } from '../../src/delivery/transports/log.js';
import { auth, useHarness, RecordingTransport, registration, type TestApp } from '../helpers/harness.js';
import { onlyOutboxRow, outboxRows } from './servers.js';
import { codeIn } from '../helpers/assertions.js';
import { resetWithCode } from '../helpers/customers.js';
import { forceNestedLoopRescans } from '../helpers/query-plans.js';
import type { Database } from '../../src/storage/database.js';
import { recording, type Recorded } from '../helpers/recording-db.js';
import { defaultStore } from '../helpers/database.js';

const notice: NewMessage = {
  channel: 'email',
  purpose: 'password_changed',
  to: 'ada@example.com',
  customerId: null,
  storeName: 'My Store',
  language: 'en',
};

function enqueue(t: TestApp, message: NewMessage = notice): Promise<string> {
  return enqueueMessage(defaultStore(t.db), { clock: t.clock, keys: t.services.keys }, message);
}

/** A dispatcher of its own on the test's service parts, sending both channels through `transport`. */
function dispatcherFor(
  t: TestApp,
  transport: Transports['email'],
  options: Partial<DispatcherOptions> = {},
  db: Database = t.db,
): Dispatcher {
  const transports: Transports = { email: transport, sms: transport };
  return new Dispatcher({ db, clock: t.clock, keys: t.services.keys, transports, logger: t.services.logger }, options);
}

/** A queued message that every attempt fails to send, tried until it is given up or 20 rounds pass. */
async function failingMessage(t: TestApp): Promise<string> {
  const id = await enqueue(t);
  t.outbox.failNext = 1_000;
  for (let i = 0; i < 20 && (await onlyOutboxRow(t.db)).status === 'pending'; i += 1) {
    await t.deliver();
    t.clock.advance(600);
  }
  return id;
}

/** Matches the code as a whole token, not as digits inside a longer number or id. */
function codePattern(code: string): RegExp {
  return new RegExp(`(?<![A-Za-z0-9])${code}(?![A-Za-z0-9])`);
}

/** Registers (which must succeed) and reads the code in the verification message still queued. */
async function registeredWithQueuedCode(t: TestApp): Promise<string> {
  assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
  const row = await onlyOutboxRow(t.db);
  return codeIn(unsealContent(t.services.keys.outbox, row.sealed_body!).text);
}

/** A delivery sends nothing, and the only message is dropped with its body gone. */
async function assertDroppedUnsent(t: TestApp): Promise<void> {
  assert.deepEqual(await t.deliver(), []);
  const row = await onlyOutboxRow(t.db);
  assert.equal(row.status, 'dropped');
  assert.equal(row.sealed_body, null);
}

describe('the outbox dispatcher', () => {
  const harness = useHarness();

  test('a failing message is retried after 5, 10, 20 … seconds, capped at 10 minutes, and failed when the hour is over', async () => {
    const t = await harness.start();
    const id = await enqueue(t);
    t.outbox.failNext = 1_000;
    const expectedDelays = [5, 10, 20, 40, 80, 160, 320, 600, 600, 600, 600];
    const start = t.clock.now().getTime();

    for (const [index, delay] of expectedDelays.entries()) {
      const attemptAt = t.clock.now().getTime();
      await t.deliver();
      const row = await onlyOutboxRow(t.db);
      assert.equal(row.status, 'pending', `pending after attempt ${index + 1}`);
      assert.equal(row.attempts, index + 1);
      assert.equal(row.last_error, 'recording transport told to fail');
      assert.equal(row.next_attempt_at.getTime() - attemptAt, delay * 1000, `delay after attempt ${index + 1}`);

      t.clock.advance(delay - 1);
      await t.deliver();
      assert.equal((await onlyOutboxRow(t.db)).attempts, index + 1, 'nothing is tried before the retry is due');
      t.clock.advance(1);
    }

    // Attempt 12 at 3035 s: the next one would fall after the one-hour window.
    assert.equal(t.clock.now().getTime() - start, 3035 * 1000);
    await t.deliver();
    const failed = await onlyOutboxRow(t.db);
    assert.equal(failed.id, id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.attempts, 12);
    assert.equal(failed.last_error, 'recording transport told to fail');
    assert.equal(t.outbox.sent.length, 0);

    t.outbox.failNext = 0;
    t.clock.advance(3600);
    await t.deliver();
    assert.equal(t.outbox.sent.length, 0, 'a failed message stays failed until an operator retries it');
  });

  test('a message that fails once is sent on its retry and its body is erased', async () => {
    const t = await harness.start();
    t.outbox.failNext = 1;
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    assert.deepEqual(await t.deliver(), []);
    t.clock.advance(5);
    const sent = await t.deliver();
    assert.equal(sent.length, 1);
    const row = await onlyOutboxRow(t.db);
    assert.equal(row.status, 'sent');
    assert.equal(row.attempts, 2);
    assert.equal(row.sealed_body, null);
    assert.equal(row.last_error, null);
  });

  test('a queued body is sealed: the code is not in the row, and the sealed text opens to the message with the code', async () => {
    const t = await harness.start();
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    const [row] = await t.db.query<Record<string, unknown>>('SELECT * FROM outbox');
    assert.ok(row !== undefined && typeof row['sealed_body'] === 'string');

    const opened = unsealContent(t.services.keys.outbox, row['sealed_body'] as string);
    const code = codeIn(opened.text);
    assert.doesNotMatch(JSON.stringify(row), new RegExp(code), 'no column of the row holds the code in plain text');
    assert.doesNotMatch(row['sealed_body'] as string, /verification code/i);

    const [delivered] = await t.deliver();
    assert.ok(delivered);
    assert.equal(codeIn(delivered.content.text), code);
    assert.equal((await onlyOutboxRow(t.db)).sealed_body, null, 'a sent message keeps no body');
  });

  test('a message whose code was already used is dropped, not sent', async () => {
    const t = await harness.start();
    const code = await registeredWithQueuedCode(t);
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code })).status, 200);

    await assertDroppedUnsent(t);
  });

  test('a message whose code was replaced by a resend is dropped and only the new code is sent', async () => {
    const t = await harness.start();
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/verification/resend`, { identity: 'ada@example.com' })).status, 202);

    const sent = await t.deliver();
    assert.equal(sent.length, 1, 'only the newest code goes out');
    const [first, second] = await outboxRows(t.db);
    assert.equal(first?.status, 'dropped');
    assert.equal(first?.sealed_body, null);
    assert.equal(second?.status, 'sent');
    assert.equal(sent[0]!.id, second!.id);
    const code = codeIn(sent[0]!.content.text);
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code })).status, 200);
  });

  test('a message whose code expired before it could be sent is dropped, not sent', async () => {
    const t = await harness.start();
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    t.clock.advance(10 * 60);
    await assertDroppedUnsent(t);
  });

  test('the log transport writes the code to the log', async () => {
    const t = await harness.start();
    const code = await registeredWithQueuedCode(t);
    const logTransport = createLogTransport(t.services.logger);
    const dispatcher = dispatcherFor(t, logTransport);
    assert.equal(await dispatcher.drain(), 1);

    const lines = t.logs.filter((line) => codePattern(code).test(JSON.stringify(line)));
    assert.ok(lines.length >= 1, 'a log line holds the code');
    assert.ok(lines.some((line) => line['to'] === 'ada@example.com'));
    assert.equal((await onlyOutboxRow(t.db)).status, 'sent');
  });

  test('with a transport other than the log, no log line contains a code across register, verify, forgot and reset', async () => {
    const t = await harness.start();
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    const verificationCode = await t.codeFor('ada@example.com', 'verification');
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: verificationCode })).status, 200);
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code: '000000' })).status, 422);
    t.clock.advance(61);
    const { code: resetCode, reply: reset } = await resetWithCode(t, 'ada@example.com', 'difference engine 1822');
    assert.equal(reset.status, 200);
    assert.equal((await t.deliver()).length, 1, 'the password-changed notice is sent');
    assert.equal(
      (await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'difference engine 1822' })).status,
      200,
    );

    assert.ok(t.logs.length >= 8, 'requests and deliveries were logged');
    for (const code of [verificationCode, resetCode]) {
      const leaking = t.logs.filter((line) => codePattern(code).test(JSON.stringify(line)));
      assert.deepEqual(leaking, [], `no log line contains ${code}`);
    }
  });

  test('two dispatchers draining one outbox at the same time send each of 200 messages exactly once', async () => {
    const t = await harness.start();
    const ids = new Set<string>();
    for (let i = 0; i < 200; i += 1) {
      ids.add(await enqueue(t, { ...notice, to: `customer${i}@example.com` }));
    }
    const recorders = [new RecordingTransport(), new RecordingTransport()];
    const dispatchers = recorders.map((recorder) => dispatcherFor(t, recorder));

    const handled = await Promise.all(dispatchers.map((dispatcher) => dispatcher.drain()));
    assert.equal(handled[0]! + handled[1]!, 200);
    assert.ok(
      handled.every((n) => n > 0),
      `both dispatchers took part (${handled.join(' + ')})`,
    );
    const sentIds = recorders.flatMap((recorder) => recorder.sent.map((message) => message.id));
    assert.equal(sentIds.length, 200, 'no message was sent twice');
    assert.deepEqual(new Set(sentIds), ids, 'every message was sent');

    const statuses = await t.db.query<{ status: string; attempts: number; n: number }>(
      'SELECT status, attempts, count(*)::int AS n FROM outbox GROUP BY status, attempts',
    );
    assert.deepEqual(statuses, [{ status: 'sent', attempts: 1, n: 200 }]);
  });

  test('a claim leases at most its limit whatever plan the server picks', async () => {
    const t = await harness.start();
    for (const to of ['one@example.com', 'two@example.com', 'three@example.com']) await enqueue(t, { ...notice, to });
    const now = t.clock.now();
    // A rescanned LIMIT … FOR UPDATE SKIP LOCKED skips the rows the statement itself just leased
    // and hands over the next ones: without a batch picked once, this leased all three (and a
    // dispatcher sent past its batch and its hourly budget).
    const claimed = await t.db.transaction(async (tx) => {
      await forceNestedLoopRescans(tx);
      return claimDueMessages(tx, now, new Date(now.getTime() + 60_000), 1);
    });
    assert.equal(claimed.length, 1);
    assert.equal((await t.db.query('SELECT id FROM outbox WHERE locked_until IS NOT NULL')).length, 1);
  });

  test('while the hourly budget is spent a queued message sets off no pass, and the regular pass sends once it frees', async () => {
    const t = await harness.start();
    const statements: Recorded[] = [];
    const recorder = new RecordingTransport();
    const dispatcher = dispatcherFor(
      t,
      recorder,
      { budgetPerHour: 1, pollIntervalMs: 60 * 60 * 1000 },
      recording(t.db, statements),
    );
    const counts = () => statements.filter((statement) => statement.sql.includes('count(*)')).length;
    for (const to of ['one@example.com', 'two@example.com']) await enqueue(t, { ...notice, to });
    dispatcher.start();
    await dispatcher.nextPass();
    assert.equal(recorder.sent.length, 1, 'one message fits the budget');
    const countsWhenSpent = counts();

    for (const to of ['three@example.com', 'four@example.com', 'five@example.com']) {
      await enqueue(t, { ...notice, to });
      dispatcher.nudge();
    }
    // A nudge starts its pass from a 0 ms timer, which fires before this one.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await dispatcher.stop();
    assert.equal(counts(), countsWhenSpent, 'no pass counted the outbox again');
    assert.equal(recorder.sent.length, 1);

    t.clock.advance(60 * 60 + 1);
    dispatcher.start();
    await dispatcher.nextPass();
    await dispatcher.stop();
    assert.equal(recorder.sent.length, 2, 'the regular pass sends what the freed budget allows');
  });

  test('stop ends a running dispatch after the batch in flight and leaves the rest in the outbox', async () => {
    const t = await harness.start();
    for (const to of ['one@example.com', 'two@example.com', 'three@example.com']) await enqueue(t, { ...notice, to });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let firstSend: () => void = () => undefined;
    const sending = new Promise<void>((resolve) => (firstSend = resolve));
    const sent: string[] = [];
    const gated: Transports['email'] = {
      name: 'gated',
      async send(message) {
        firstSend();
        await held;
        sent.push(message.to);
      },
    };
    const dispatcher = dispatcherFor(t, gated, { batchSize: 1 });
    dispatcher.start();
    await sending;
    const stopped = dispatcher.stop();
    release();
    await stopped;
    assert.equal(sent.length, 1);
    const statuses = (await outboxRows(t.db)).map((row) => row.status).sort();
    assert.deepEqual(statuses, ['pending', 'pending', 'sent']);
  });

  test('listOutbox lists newest first and filters by status', async () => {
    const t = await harness.start();
    const first = await enqueue(t, { ...notice, to: 'one@example.com' });
    const second = await enqueue(t, { ...notice, to: 'two@example.com' });
    await t.deliver();
    const third = await enqueue(t, { ...notice, to: 'three@example.com' });

    const all = await listOutbox(defaultStore(t.db));
    assert.deepEqual(
      all.map((entry) => entry.id),
      [third, second, first],
    );
    const pending = await listOutbox(defaultStore(t.db), 'pending');
    assert.deepEqual(
      pending.map((entry) => entry.id),
      [third],
    );
    assert.equal(pending[0]!.recipient, 'three@example.com');
    assert.equal(pending[0]!.attempts, 0);
    assert.equal(pending[0]!.sent_at, null);
    assert.equal(pending[0]!.next_attempt_at, t.clock.now().toISOString());
    const sent = await listOutbox(defaultStore(t.db), 'sent');
    assert.deepEqual(
      sent.map((entry) => entry.id),
      [second, first],
    );
    assert.equal(sent[0]!.sent_at, t.clock.now().toISOString());
    assert.ok(!('sealed_body' in sent[0]!), 'the listing never shows a body');

    const more: string[] = [];
    for (let i = 0; i < 10; i += 1) more.push(await enqueue(t, { ...notice, to: `more${i}@example.com` }));
    const listed = (await listOutbox(defaultStore(t.db))).map((entry) => entry.id);
    assert.deepEqual(listed, [...more.reverse(), third, second, first], 'ids order as numbers, not as text');
  });

  test('retryOutboxMessage puts a failed message back in the queue, refuses a sent one, and knows no unknown id', async () => {
    const t = await harness.start();
    const id = await failingMessage(t);
    assert.equal((await onlyOutboxRow(t.db)).status, 'failed');

    assert.equal(await retryOutboxMessage(defaultStore(t.db), t.clock, id), 'retried');
    const retried = await onlyOutboxRow(t.db);
    assert.equal(retried.status, 'pending');
    assert.equal(retried.attempts, 0);
    assert.equal(retried.last_error, null);
    assert.equal(retried.next_attempt_at.getTime(), t.clock.now().getTime());
    assert.equal(
      await retryOutboxMessage(defaultStore(t.db), t.clock, id),
      'not_retryable',
      'a pending message is not retried again',
    );

    t.outbox.failNext = 0;
    const sent = await t.deliver();
    assert.deepEqual(
      sent.map((message) => message.id),
      [id],
    );
    assert.equal((await onlyOutboxRow(t.db)).status, 'sent');

    assert.equal(await retryOutboxMessage(defaultStore(t.db), t.clock, id), 'not_retryable');
    assert.equal((await onlyOutboxRow(t.db)).status, 'sent');
    assert.equal(await retryOutboxMessage(defaultStore(t.db), t.clock, '999999'), 'not_found');
    assert.equal(await retryOutboxMessage(defaultStore(t.db), t.clock, 'abc'), 'not_found');
    assert.equal(await retryOutboxMessage(defaultStore(t.db), t.clock, '1; DROP TABLE outbox'), 'not_found');
  });

  test('the delivery window starts at the first attempt: a message that waited in the outbox (a spent budget) is retried after one failure', async () => {
    const t = await harness.start();
    await enqueue(t);
    // Two hours in the outbox before its first attempt, as a long import's invitations wait for the budget.
    t.clock.advance(2 * 3600);
    t.outbox.failNext = 1;
    await t.deliver();
    const row = await onlyOutboxRow(t.db);
    assert.equal(row.status, 'pending', 'one failure of a first attempt does not fail it');
    assert.equal(row.next_attempt_at.getTime() - t.clock.now().getTime(), 5_000);
    t.clock.advance(5);
    assert.equal((await t.deliver()).length, 1);
  });

  test('a retried message gets a fresh delivery window', async () => {
    const t = await harness.start();
    const id = await failingMessage(t);
    assert.equal(await retryOutboxMessage(defaultStore(t.db), t.clock, id), 'retried');
    await t.deliver();
    const row = await onlyOutboxRow(t.db);
    assert.equal(row.status, 'pending', 'one failure after a retry does not fail it at once');
    assert.equal(row.attempts, 1);
    assert.equal(row.next_attempt_at.getTime() - t.clock.now().getTime(), 5_000);
  });
});
