import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { listAudit, writeAuditEntry, type AuditEvent } from '../../../src/audit.js';
import { enqueueMessage, markDropped, type NewMessage } from '../../../src/delivery/outbox.js';
import { forStore } from '../../../src/storage/database.js';
import { createStore, firstStoreId } from '../../../src/store/store.js';
import { adminAppOf, adminCaller, type AdminMethod } from '../../helpers/admin.js';
import { assertProblem } from '../../helpers/assertions.js';
import { toReply, useHarness, type TestApp } from '../../helpers/harness.js';
import { adminToken } from '../../helpers/import.js';
import { planNodes } from '../../helpers/query-plans.js';
import { recording, type Recorded } from '../../helpers/recording-db.js';

/** A store's audit trail and message outbox over the admin API: pages, filters, scope, retry. */

type Call = ReturnType<typeof adminCaller>;

const auditOf = (store = 'default') => `/admin/v1/stores/${store}/audit`;
const outboxOf = (store = 'default') => `/admin/v1/stores/${store}/outbox`;
const recordFields = ['client_address', 'customer_id', 'details', 'event', 'id', 'occurred_at', 'request_id'];
const messageFields = [
  'attempts',
  'channel',
  'created_at',
  'id',
  'last_error',
  'next_attempt_at',
  'purpose',
  'recipient',
  'sent_at',
  'status',
];

const notice: NewMessage = {
  channel: 'email',
  purpose: 'password_changed',
  to: 'ada@example.com',
  customerId: null,
  storeName: 'My Store',
  language: 'en',
};

async function start(harness: ReturnType<typeof useHarness>) {
  const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
  const admin = await adminAppOf(t);
  const created = await createStore(t.db, t.clock, {
    slug: 'shop-b',
    name: 'Shop B',
    identityMode: 'email',
    hosts: ['b.shop.test'],
  });
  assert.ok(created.ok, JSON.stringify(created));
  return { t, admin, call: adminCaller(admin, adminToken), other: created.store.id };
}

/** Writes an event to a store's trail a second after the last; `n` tells them apart. */
async function event(t: TestApp, storeId: string, n: number, type: AuditEvent, customerId: string | null = null) {
  t.clock.advance(1);
  await writeAuditEntry(forStore(t.db, storeId), t.clock, {
    event: type,
    customerId,
    details: { n: String(n) },
  });
}

async function auditIds(t: TestApp, storeId: string): Promise<string[]> {
  const rows = await t.db.query<{ id: string }>(
    'SELECT id::text AS id FROM audit_events WHERE store_id = $1 ORDER BY audit_events.id DESC',
    [storeId],
  );
  return rows.map((row) => row.id);
}

/** Every page of `url` at `limit` a page: each page's ids, and that the last says null. */
async function walk(call: Call, url: string, key: 'events' | 'messages', limit: number): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  const join = url.includes('?') ? '&' : '?';
  do {
    const reply = await call('GET', `${url}${join}limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const ids = (reply.body[key] as Array<{ id: string }>).map((entry) => entry.id);
    assert.ok(ids.length <= limit);
    pages.push(ids);
    cursor = reply.body.next_cursor;
    if (cursor !== null) assert.equal(ids.length, limit, 'only the last page is short');
    assert.ok(pages.length <= 50, 'the pages end');
  } while (cursor !== null);
  return pages;
}

/** A message every attempt fails to send, tried until its delivery window is over. */
async function failedMessage(t: TestApp, storeId = firstStoreId, to = 'failing@example.com'): Promise<string> {
  const id = await enqueueMessage(
    forStore(t.db, storeId),
    { clock: t.clock, keys: t.services.keys },
    { ...notice, to },
  );
  t.outbox.failNext = 1_000;
  for (let i = 0; i < 20 && (await statusOf(t, storeId, id)) === 'pending'; i += 1) {
    await t.deliver();
    t.clock.advance(600);
  }
  t.outbox.failNext = 0;
  assert.equal(await statusOf(t, storeId, id), 'failed');
  return id;
}

async function statusOf(t: TestApp, storeId: string, id: string): Promise<string | undefined> {
  const [row] = await t.db.query<{ status: string }>('SELECT status FROM outbox WHERE store_id = $1 AND id = $2', [
    storeId,
    id,
  ]);
  return row?.status;
}

async function auditRowCount(t: TestApp): Promise<number> {
  await t.services.background.drain();
  const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events');
  return row!.n;
}

describe("a store's audit trail and outbox on the admin API", () => {
  const harness = useHarness();

  test('the audit trail pages newest first by cursor: every event once, none missing, the last page null', async () => {
    const { t, call } = await start(harness);
    const events: AuditEvent[] = ['login.succeeded', 'login.failed', 'logout', 'customer.registered'];
    for (let n = 0; n < 11; n += 1) await event(t, firstStoreId, n, events[n % events.length]!, randomUUID());
    const expected = await auditIds(t, firstStoreId);
    assert.equal(expected.length, 11);

    const pages = await walk(call, auditOf(), 'events', 4);
    assert.deepEqual(
      pages.map((page) => page.length),
      [4, 4, 3],
    );
    assert.deepEqual(pages.flat(), expected, 'newest first, each event once, none missing');
    assert.deepEqual(
      (await walk(call, auditOf(), 'events', 11)).map((page) => page.length),
      [11],
      'a page holding the last event says there is no next one',
    );

    const first = await call('GET', `${auditOf()}?limit=2`);
    assert.equal(first.body.events.length, 2);
    const [newest] = first.body.events;
    assert.deepEqual(Object.keys(newest).sort(), recordFields);
    assert.deepEqual(newest.details, { n: '10' });
    assert.equal(newest.occurred_at, t.clock.now().toISOString());
    assert.equal(newest.client_address, null, 'written outside a request');
    assert.doesNotMatch(first.body.next_cursor, /^\d+$/, 'the cursor is not the bare id');

    // An event written between two pages is never on a later page: the pages go back in time.
    await event(t, firstStoreId, 11, 'logout');
    const second = await call('GET', `${auditOf()}?limit=100&cursor=${first.body.next_cursor}`);
    assert.deepEqual(
      second.body.events.map((entry: { id: string }) => entry.id),
      expected.slice(2),
    );
    assert.equal(second.body.next_cursor, null);
  });

  test("customer_id and event narrow the trail, page by page, and only ever show the store's own events", async () => {
    const { t, call, other } = await start(harness);
    const ada = randomUUID();
    const bob = randomUUID();
    let n = 0;
    for (let round = 0; round < 3; round += 1) {
      await event(t, firstStoreId, n++, 'login.succeeded', ada);
      await event(t, firstStoreId, n++, 'login.failed', ada);
      await event(t, firstStoreId, n++, 'login.failed', bob);
      // The same customer id in another store's trail (an id is a store's own; the filter must not cross).
      await event(t, other, n++, 'login.failed', ada);
    }
    const ours = await t.db.query<{ id: string; customer_id: string | null; event: string }>(
      `SELECT id::text AS id, customer_id::text AS customer_id, event FROM audit_events
        WHERE store_id = $1 ORDER BY audit_events.id DESC`,
      [firstStoreId],
    );
    const adas = ours.filter((row) => row.customer_id === ada).map((row) => row.id);
    assert.equal(adas.length, 6);

    assert.deepEqual((await walk(call, `${auditOf()}?customer_id=${ada}`, 'events', 4)).flat(), adas);
    assert.deepEqual((await walk(call, `${auditOf()}?customer_id=${ada}`, 'events', 1)).flat(), adas);
    const failed = ours.filter((row) => row.event === 'login.failed').map((row) => row.id);
    assert.deepEqual((await walk(call, `${auditOf()}?event=login.failed`, 'events', 2)).flat(), failed);
    const adaFailed = ours.filter((row) => row.customer_id === ada && row.event === 'login.failed').map((r) => r.id);
    const both = await call('GET', `${auditOf()}?customer_id=${ada}&event=login.failed`);
    assert.deepEqual(
      both.body.events.map((entry: { id: string }) => entry.id),
      adaFailed,
    );
    assert.ok(
      both.body.events.every(
        (entry: { customer_id: string; event: string }) => entry.customer_id === ada && entry.event === 'login.failed',
      ),
    );
    const nobody = await call('GET', `${auditOf()}?customer_id=${randomUUID()}`);
    assert.deepEqual(nobody.body, { events: [], next_cursor: null });

    // The other store, by its slug and by its id: its own events only, and ours never.
    const theirs = await auditIds(t, other);
    assert.equal(theirs.length, 3);
    for (const name of ['shop-b', other]) {
      assert.deepEqual((await walk(call, auditOf(name), 'events', 2)).flat(), theirs);
      assert.deepEqual((await walk(call, `${auditOf(name)}?customer_id=${ada}`, 'events', 100)).flat(), theirs);
    }
    const everyOfOurs = (await walk(call, auditOf(), 'events', 500)).flat();
    assert.deepEqual(everyOfOurs, await auditIds(t, firstStoreId));
    assert.ok(everyOfOurs.every((id) => !theirs.includes(id)));
    // A cursor from one store's page only narrows another store's trail by id: still its own events.
    const theirPage = await call('GET', `${auditOf('shop-b')}?limit=1`);
    const crossed = await call('GET', `${auditOf()}?cursor=${theirPage.body.next_cursor}`);
    assert.equal(crossed.status, 200);
    assert.ok(crossed.body.events.every((entry: { id: string }) => !theirs.includes(entry.id)));
  });

  test('reading the trail and the outbox writes nothing to the trail', async () => {
    const { t, call } = await start(harness);
    await event(t, firstStoreId, 0, 'logout');
    const before = await auditRowCount(t);
    assert.equal((await call('GET', auditOf())).status, 200);
    assert.equal((await call('GET', outboxOf())).status, 200);
    assert.equal(await auditRowCount(t), before);
  });

  test('a bad cursor, limit or filter is 422 validation_failed naming the field; an unknown store 404', async () => {
    const { call } = await start(harness);
    const cursorOf = (text: string) => Buffer.from(text).toString('base64url');
    for (const url of [auditOf(), outboxOf()]) {
      for (const [query, field] of [
        ['cursor=%2A%2A', 'cursor'],
        [`cursor=${cursorOf('abc')}`, 'cursor'],
        [`cursor=${cursorOf('0')}`, 'cursor'],
        [`cursor=${cursorOf('-5')}`, 'cursor'],
        [`cursor=${cursorOf('1'.repeat(19))}`, 'cursor'],
        ['limit=0', 'limit'],
        ['limit=501', 'limit'],
        ['limit=ten', 'limit'],
        ['limit=-1', 'limit'],
      ] as const) {
        const reply = await call('GET', `${url}?${query}`);
        assertProblem(reply, 422, 'validation_failed');
        assert.deepEqual(Object.keys(reply.body.errors), [field], `${url}?${query}`);
      }
      assertProblem(await call('GET', `${url}?other=1`), 422, 'validation_failed');
    }
    for (const [url, query, field] of [
      [auditOf(), 'customer_id=not-a-uuid', 'customer_id'],
      [auditOf(), 'customer_id=', 'customer_id'],
      [auditOf(), 'event=login.nope', 'event'],
      [auditOf(), 'status=failed', 'status'],
      [outboxOf(), 'status=lost', 'status'],
      [outboxOf(), 'customer_id=0', 'customer_id'],
    ] as const) {
      const reply = await call('GET', `${url}?${query}`);
      assertProblem(reply, 422, 'validation_failed');
      assert.deepEqual(Object.keys(reply.body.errors), [field], `${url}?${query}`);
    }
    for (const [method, url] of [
      ['GET', auditOf('nowhere')],
      ['GET', outboxOf('nowhere')],
      ['POST', `${outboxOf('nowhere')}/1/retry`],
    ] as const)
      assertProblem(await call(method, url), 404, 'store_not_found');
  });

  test('every call answers 401 without a token or with a wrong one', async () => {
    const { admin } = await start(harness);
    const wrong = adminCaller(admin, 'not-the-admin-token-BBBBBBBBBBBBBBBBBBBBBBBB');
    const calls: Array<[AdminMethod, string]> = [
      ['GET', auditOf()],
      ['GET', outboxOf()],
      ['POST', `${outboxOf()}/1/retry`],
    ];
    for (const [method, url] of calls) {
      const none = toReply(await admin.inject({ method, url }));
      assertProblem(none, 401, 'unauthenticated');
      assertProblem(await wrong(method, url), 401, 'unauthenticated');
    }
  });

  test('the outbox pages newest first, filters by status, never shows a body or another store’s messages', async () => {
    const { t, call, other } = await start(harness);
    const enqueue = (storeId: string, to: string) =>
      enqueueMessage(forStore(t.db, storeId), { clock: t.clock, keys: t.services.keys }, { ...notice, to });
    const sent: string[] = [];
    for (let n = 0; n < 5; n += 1) sent.push(await enqueue(firstStoreId, `sent${n}@example.com`));
    const theirs = [await enqueue(other, 'theirs@example.com')];
    await t.deliver();
    const pending: string[] = [];
    for (let n = 0; n < 4; n += 1) pending.push(await enqueue(firstStoreId, `pending${n}@example.com`));
    theirs.push(await enqueue(other, 'theirs2@example.com'));
    const newestFirst = (ids: string[]) => [...ids].sort((a, b) => Number(b) - Number(a));

    const pages = await walk(call, outboxOf(), 'messages', 3);
    assert.deepEqual(
      pages.map((page) => page.length),
      [3, 3, 3],
    );
    assert.deepEqual(pages.flat(), newestFirst([...sent, ...pending]));
    assert.deepEqual((await walk(call, `${outboxOf()}?status=sent`, 'messages', 2)).flat(), newestFirst(sent));
    assert.deepEqual((await walk(call, `${outboxOf()}?status=pending`, 'messages', 2)).flat(), newestFirst(pending));
    assert.deepEqual((await walk(call, `${outboxOf()}?status=failed`, 'messages', 2)).flat(), []);
    assert.deepEqual((await walk(call, outboxOf('shop-b'), 'messages', 1)).flat(), newestFirst(theirs));

    const [newest] = (await call('GET', `${outboxOf()}?limit=1`)).body.messages;
    assert.deepEqual(Object.keys(newest).sort(), messageFields);
    assert.deepEqual(
      [newest.id, newest.recipient, newest.status, newest.purpose, newest.attempts, newest.sent_at],
      [pending.at(-1), 'pending3@example.com', 'pending', 'password_changed', 0, null],
    );
    const [delivered] = (await call('GET', `${outboxOf()}?status=sent&limit=1`)).body.messages;
    assert.equal(delivered.recipient, 'sent4@example.com');
    assert.equal(typeof delivered.sent_at, 'string');
  });

  test('a retry puts a failed message back to pending and it is sent; an unknown id is 404, a sent or dropped one 409', async () => {
    const { t, call, other } = await start(harness);
    const id = await failedMessage(t);
    const [failed] = (await call('GET', `${outboxOf()}?status=failed`)).body.messages;
    assert.equal(failed.id, id);
    assert.equal(failed.last_error !== null, true, 'the listing says why it failed');
    const trail = await auditRowCount(t);

    const retried = await call('POST', `${outboxOf()}/${id}/retry`);
    assert.equal(retried.status, 202, JSON.stringify(retried.body));
    assert.deepEqual(retried.body, { id, status: 'pending' });
    const [again] = (await call('GET', `${outboxOf()}?status=pending`)).body.messages;
    assert.deepEqual(
      [again.id, again.attempts, again.last_error, again.next_attempt_at],
      [id, 0, null, t.clock.now().toISOString()],
    );
    assert.equal(await auditRowCount(t), trail, 'as the command line’s retry, not written to the trail');
    assertProblem(await call('POST', `${outboxOf()}/${id}/retry`), 409, 'message_not_retryable');

    const sent = await t.deliver();
    assert.deepEqual(
      sent.map((message) => message.to),
      ['failing@example.com'],
    );
    assert.equal(await statusOf(t, firstStoreId, id), 'sent');
    assertProblem(await call('POST', `${outboxOf()}/${id}/retry`), 409, 'message_not_retryable');

    const dropped = await enqueueMessage(
      forStore(t.db, firstStoreId),
      { clock: t.clock, keys: t.services.keys },
      { ...notice, to: 'dropped@example.com' },
    );
    await markDropped(t.db, { store_id: firstStoreId, id: dropped }, t.clock.now());
    assertProblem(await call('POST', `${outboxOf()}/${dropped}/retry`), 409, 'message_not_retryable');
    assert.equal(await statusOf(t, firstStoreId, dropped), 'dropped');

    for (const unknown of ['999999', 'abc', '0', '1;%20DROP%20TABLE%20outbox'])
      assertProblem(await call('POST', `${outboxOf()}/${unknown}/retry`), 404, 'not_found');
    // Another store's failed message is unknown here, and stays failed.
    const theirs = await failedMessage(t, other, 'theirs@example.com');
    assertProblem(await call('POST', `${outboxOf()}/${theirs}/retry`), 404, 'not_found');
    assert.equal(await statusOf(t, other, theirs), 'failed');
    assert.equal((await call('POST', `${outboxOf('shop-b')}/${theirs}/retry`)).status, 202);
  });

  test("a customer's page of the trail reads audit_events_customer_id backwards from the cursor, without a sort", async () => {
    const { t } = await start(harness);
    const ada = randomUUID();
    // Many events of many customers, few of them Ada's, with current statistics, as a real trail.
    await t.db.exec(`
      INSERT INTO audit_events (store_id, occurred_at, event, customer_id)
        SELECT 'default', now() - n * interval '1 second', 'login.succeeded', gen_random_uuid()
          FROM generate_series(1, 20000) AS n;
      INSERT INTO audit_events (store_id, occurred_at, event, customer_id)
        SELECT 'default', now() - n * interval '1 second', 'login.failed', '${ada}'
          FROM generate_series(1, 300) AS n;
      INSERT INTO audit_events (store_id, occurred_at, event, customer_id)
        SELECT 'default', now() - n * interval '1 second', 'login.succeeded', gen_random_uuid()
          FROM generate_series(1, 20000) AS n;
      ANALYZE audit_events;
    `);
    const log: Recorded[] = [];
    const [, cursorRow] = await listAudit(forStore(t.db, firstStoreId), { customerId: ada, limit: 2 });
    await listAudit(forStore(recording(t.db, log), firstStoreId), {
      customerId: ada,
      beforeId: cursorRow!.id,
      limit: 101,
    });
    assert.equal(log.length, 1);
    const nodes = await planNodes(t.db, log[0]!.sql, log[0]!.params);
    const scan = nodes.find((node) => node['Index Name'] === 'audit_events_customer_id');
    assert.ok(scan, JSON.stringify(nodes.map((node) => node['Node Type'])));
    assert.equal(scan['Scan Direction'], 'Backward');
    assert.match(scan['Index Cond'] ?? '', /customer_id = .*id < /);
    assert.deepEqual(
      nodes.filter((node) => /Sort|Seq Scan/.test(node['Node Type'])),
      [],
    );
  });
});
