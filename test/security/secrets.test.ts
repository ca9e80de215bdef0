import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { createSession, hashSessionId } from '../../src/auth/tables/sessions.js';
import type { StoreQueryable } from '../../src/storage/database.js';
import { api, auth, useHarness, registration, type TestApp } from '../helpers/harness.js';
import { cookieValue, sessionCookie } from '../helpers/customers.js';

/**
 * Secrets at rest and in logs. A full journey through every endpoint is walked the way a browser
 * walks it (CSRF token in cookie and header), every secret it handles is collected, and then every
 * row of every table (taken at several moments, so messages waiting in the outbox are seen too)
 * and every log line are searched for each of them in plain text.
 */

/** Every row of every table in the database, as JSON text, one entry per row. */
async function dumpDatabase(t: TestApp): Promise<{ tables: string[]; rows: string[] }> {
  const tables = (
    await t.db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
    )
  ).map((row) => row.table_name);
  const rows: string[] = [];
  for (const table of tables) {
    const result = await t.db.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM "${table}" t`);
    rows.push(...result.map((r) => `${table}: ${r.row}`));
  }
  return { tables, rows };
}

interface Secret {
  label: string;
  value: string;
  /** Codes are digits: match them only where no other digit touches them. */
  pattern: RegExp;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function secret(label: string, value: string): Secret {
  assert.ok(value.length >= 6, `${label} is long enough to search for`);
  const digits = /^\d+$/.test(value);
  return { label, value, pattern: digits ? new RegExp(`(?<!\\d)${value}(?!\\d)`) : new RegExp(escapeRegExp(value)) };
}

function leaks(texts: string[], secrets: Secret[]): string[] {
  const found: string[] = [];
  for (const s of secrets) {
    const hit = texts.find((text) => s.pattern.test(text));
    if (hit !== undefined) found.push(`${s.label} in ${hit.slice(0, 200)}`);
  }
  return found;
}

describe('secrets at rest and in logs', () => {
  const harness = useHarness();

  test('after a journey through every endpoint no table row and no log line holds a password, code, session id or XSRF token', async () => {
    const t = await harness.start();
    const firstPassword = 'analytical engine 1843';
    const secondPassword = 'difference engine 1822';
    const wrongPassword = 'babbage cabbage 1791';
    const tokens: string[] = [];
    const sessions: string[] = [];
    const codes: string[] = [];
    const snapshots: string[] = [];
    const snapshot = async () => snapshots.push(...(await dumpDatabase(t)).rows);

    // A browser: the token goes in the XSRF-TOKEN cookie and the X-XSRF-TOKEN header.
    let token = cookieValue(await t.get(`${api}/csrf-cookie`), 'XSRF-TOKEN');
    tokens.push(token);
    const browser = (session?: string) => ({
      'sec-fetch-site': 'same-origin',
      'x-xsrf-token': token,
      cookie: [`XSRF-TOKEN=${token}`, ...(session === undefined ? [] : [`${sessionCookie}=${session}`])].join('; '),
    });
    const sanctum = await t.get('/sanctum/csrf-cookie');
    tokens.push(cookieValue(sanctum, 'XSRF-TOKEN'));

    const registered = await t.post(
      `${auth}/register`,
      registration({ password: firstPassword, password_confirmation: firstPassword }),
      browser(),
    );
    assert.equal(registered.status, 201);
    const identity = registered.body.identity.value as string;
    await t.services.background.drain();
    await snapshot(); // the verification message waits in the outbox
    codes.push(await t.codeFor(identity, 'verification'));
    assert.equal((await t.post(`${auth}/verify`, { identity, code: codes[0] }, browser())).status, 200);
    assert.equal((await t.post(`${auth}/verification/resend`, { identity }, browser())).status, 202);

    assert.equal((await t.post(`${auth}/login`, { identity, password: wrongPassword }, browser())).status, 401);
    const login = await t.post(`${auth}/login`, { identity, password: firstPassword }, browser());
    assert.equal(login.status, 200);
    sessions.push(cookieValue(login, sessionCookie));
    token = cookieValue(login, 'XSRF-TOKEN');
    tokens.push(token);
    assert.equal((await t.get(`${auth}/session`, { cookie: `${sessionCookie}=${sessions[0]}` })).status, 200);
    assert.equal((await t.get(`${api}/csrf-cookie`, { cookie: `${sessionCookie}=${sessions[0]}` })).status, 204);
    await snapshot(); // a live session

    const logout = await t.post(`${auth}/logout`, undefined, browser(sessions[0]));
    assert.equal(logout.status, 200);
    token = cookieValue(logout, 'XSRF-TOKEN');
    tokens.push(token);

    assert.equal((await t.post(`${auth}/password/forgot`, { identity }, browser())).status, 202);
    await t.services.background.drain();
    await snapshot(); // the reset message waits in the outbox
    codes.push(await t.codeFor(identity, 'password_reset'));
    const reset = await t.post(
      `${auth}/password/reset`,
      { identity, code: codes[1], password: secondPassword, password_confirmation: secondPassword },
      browser(),
    );
    assert.equal(reset.status, 200);
    await snapshot(); // the password-changed notice waits in the outbox
    await t.deliver();

    const again = await t.post(`${auth}/login`, { identity, password: secondPassword }, browser());
    assert.equal(again.status, 200);
    sessions.push(cookieValue(again, sessionCookie));
    tokens.push(cookieValue(again, 'XSRF-TOKEN'));
    assert.equal((await t.get(`${auth}/session`, { cookie: `${sessionCookie}=${sessions[1]}` })).status, 200);
    await t.services.background.drain();
    const final = await dumpDatabase(t);
    snapshots.push(...final.rows);

    // The search is not vacuous: every table was read and the journey left its traces.
    for (const table of ['audit_events', 'challenges', 'customers', 'outbox', 'sessions', 'stores']) {
      assert.ok(final.tables.includes(table), `table ${table} was scanned`);
      assert.ok(
        final.rows.some((row) => row.startsWith(`${table}: `)),
        `table ${table} has rows`,
      );
    }
    assert.ok(
      snapshots.some((row) => row.startsWith('outbox: ') && /"sealed_body":"[^"]+"/.test(row)),
      'a waiting message was seen',
    );
    assert.equal(t.logs.filter((line) => line['msg'] === 'request').length, 14, 'a log line per request');
    assert.equal(codes.length, 2);
    assert.equal(sessions.length, 2);
    assert.equal(tokens.length, 5);

    const secrets: Secret[] = [
      secret('first password', firstPassword),
      secret('second password', secondPassword),
      secret('wrong password', wrongPassword),
      ...codes.map((code, i) => secret(`code ${i + 1}`, code)),
      ...sessions.map((id, i) => secret(`session id ${i + 1}`, id)),
      ...tokens.flatMap((value, i) => {
        const [nonce = '', mac = ''] = value.split('.');
        return [
          secret(`XSRF token ${i + 1}`, value),
          secret(`XSRF nonce ${i + 1}`, nonce),
          secret(`XSRF MAC ${i + 1}`, mac),
        ];
      }),
    ];
    assert.deepEqual(leaks(snapshots, secrets), [], 'secrets in the database');
    assert.deepEqual(
      leaks(
        t.logs.map((line) => JSON.stringify(line)),
        secrets,
      ),
      [],
      'secrets in the logs',
    );
  });

  test('session cookies carry 32 random bytes: 43 base64url characters that decode to 32 bytes', async () => {
    const t = await harness.start();
    const customer = await t.post(`${auth}/register`, registration());
    assert.equal(customer.status, 201);
    const ids = new Set<string>();
    for (let i = 0; i < 5; i += 1) {
      const login = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
      const id = cookieValue(login, sessionCookie);
      assert.match(id, /^[A-Za-z0-9_-]{43}$/);
      const bytes = Buffer.from(id, 'base64url');
      assert.equal(bytes.length, 32, 'at least 128 bits: 256');
      assert.equal(bytes.toString('base64url'), id, 'canonical base64url');
      ids.add(id);
    }
    assert.equal(ids.size, 5);
  });

  test('100,000 session ids made by createSession are distinct, stored only as their SHA-256, with every bit position balanced', async () => {
    const inserted: unknown[][] = [];
    const recorder: StoreQueryable = {
      storeId: 'default',
      async query<Row>(_sql: string, params: readonly unknown[] = []) {
        inserted.push([...params]);
        return [{}] as Row[];
      },
      async exec() {},
    };
    const clock = { now: () => new Date('2026-01-15T10:00:00Z') };
    const count = 100_000;
    const ids = new Set<string>();
    const ones = new Array<number>(256).fill(0);
    for (let i = 0; i < count; i += 1) {
      const opening = { customerId: '00000000-0000-4000-8000-000000000001', credentialVersion: 1 };
      const { sessionId } = (await createSession(recorder, clock, opening))!.session;
      ids.add(sessionId);
      const bytes = Buffer.from(sessionId, 'base64url');
      for (let bit = 0; bit < 256; bit += 1) ones[bit]! += (bytes[bit >> 3]! >> (bit & 7)) & 1;
    }
    assert.equal(ids.size, count, 'no collision');
    assert.equal(inserted.length, count);
    const [first] = inserted;
    assert.ok(first);
    const firstId = [...ids][0]!;
    // The store's id comes first, then the id's hash.
    assert.deepEqual(first.slice(0, 2), ['default', hashSessionId(firstId)]);
    assert.equal(first[1], createHash('sha256').update(firstId).digest('base64url'));
    for (const params of inserted)
      assert.ok(!params.some((p) => typeof p === 'string' && ids.has(p)), 'the id itself is never stored');
    // Each bit is 1 half the time; six standard deviations either side (sd = 158 at 100,000).
    const bound = 6 * Math.sqrt(count / 4);
    const skewed = ones.flatMap((n, bit) => (Math.abs(n - count / 2) > bound ? [`bit ${bit}: ${n}`] : []));
    assert.deepEqual(skewed, []);
  });

  test('a cookie for a deleted customer is dead, even after the identity registers again', async () => {
    const t = await harness.start();
    const registered = await t.post(`${auth}/register`, registration());
    assert.equal(registered.status, 201);
    const login = await t.post(`${auth}/login`, { identity: 'ada@example.com', password: 'analytical engine 1843' });
    const id = cookieValue(login, sessionCookie);
    const cookie = { cookie: `${sessionCookie}=${id}` };
    assert.equal((await t.get(`${auth}/session`, cookie)).status, 200);

    await t.db.query('DELETE FROM customers WHERE id = $1', [registered.body.id]);
    const dead = await t.get(`${auth}/session`, cookie);
    assert.equal(dead.status, 401);
    assert.equal(dead.body.code, 'unauthenticated');

    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    const stillDead = await t.get(`${auth}/session`, cookie);
    assert.equal(stillDead.status, 401);
    assert.equal(stillDead.body.code, 'unauthenticated');
    assert.equal((await t.post(`${auth}/logout`, undefined, cookie)).status, 401);
  });
});
