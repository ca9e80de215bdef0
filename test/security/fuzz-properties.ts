import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { problemCatalogue, type ProblemCode } from '../../src/http/core/problems.js';
import { auth, registration, type TestApp } from '../helpers/harness.js';
import type { FuzzCase, Pool, SessionPool, StoreSetup } from './fuzz-cases.js';

/**
 * What the fuzzer checks of every answer (see fuzz.test.ts): documented or catalogued, never a
 * 5xx, and a refusal writes nothing but its own bookkeeping.
 */

let casesSent = 0;

/** How many cases every fuzzer of this process has sent. */
export function fuzzCasesSent(): number {
  return casesSent;
}

export function isProblemCode(code: unknown): code is ProblemCode {
  return typeof code === 'string' && Object.hasOwn(problemCatalogue, code);
}

export function describeCase(fuzz: FuzzCase): string {
  const payload = fuzz.payload === undefined ? '' : String(fuzz.payload).slice(0, 300);
  return `${fuzz.method} ${fuzz.url.slice(0, 200)} ${JSON.stringify(fuzz.headers).slice(0, 300)} ${JSON.stringify(payload)}`;
}

/** Documented success, or a catalogued problem document with a matching status; never a 5xx. */
export function assertDocumentedAnswer(
  response: LightMyRequestResponse,
  success: number[],
  where: string,
  method = 'GET',
): void {
  const status = response.statusCode;
  assert.ok(status < 500, `${where}: answered ${status} ${response.body.slice(0, 500)}`);
  assert.equal(typeof response.headers['x-request-id'], 'string', `${where}: X-Request-ID`);
  const type = String(response.headers['content-type'] ?? '');
  if (success.includes(status)) {
    if (status === 204 || method === 'HEAD') {
      assert.equal(response.body, '', `${where}: 204 has no body`);
      return;
    }
    assert.match(type, /^application\/json/, `${where}: success content type`);
    const body: unknown = JSON.parse(response.body);
    assert.ok(body !== null && typeof body === 'object' && !Array.isArray(body), `${where}: success body is an object`);
    return;
  }
  assert.match(
    type,
    /^application\/problem\+json/,
    `${where}: ${status} is a problem document, got ${type} ${response.body.slice(0, 300)}`,
  );
  if (method === 'HEAD') return;
  const body = JSON.parse(response.body) as Record<string, unknown>;
  assert.ok(isProblemCode(body['code']), `${where}: code ${String(body['code'])} is in the catalogue`);
  assert.equal(problemCatalogue[body['code']].status, status, `${where}: ${String(body['code'])} belongs to ${status}`);
  assert.equal(body['status'], status, `${where}: status field`);
  assert.equal(body['request_id'], response.headers['x-request-id'], `${where}: request_id`);
  if (body['code'] === 'validation_failed') {
    const errors = body['errors'] as Record<string, unknown> | undefined;
    assert.ok(errors !== undefined && typeof errors === 'object', `${where}: errors present`);
    assert.ok(Object.keys(errors).length > 0, `${where}: at least one failing field`);
    for (const [field, messages] of Object.entries(errors)) {
      assert.ok(
        Array.isArray(messages) && messages.length > 0 && messages.every((m) => typeof m === 'string' && m !== ''),
        `${where}: errors.${field} is a non-empty list of messages`,
      );
    }
  }
}

/** Every row of every table, each as its JSON text, by table. */
export type Snapshot = Map<string, string[]>;

/** One statement that reads every table of the schema, found when the fuzzer starts. */
export async function snapshotReader(t: TestApp): Promise<() => Promise<Snapshot>> {
  const tables = await t.db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`,
  );
  assert.ok(tables.length >= 6, `tables: ${tables.map((table) => table.name).join(', ')}`);
  const sql = tables
    .map(({ name }) => `SELECT '${name}' AS name, to_jsonb(x)::text AS row FROM "${name}" x`)
    .join(' UNION ALL ');
  return async () => {
    const snapshot: Snapshot = new Map(tables.map(({ name }) => [name, []]));
    for (const { name, row } of await t.db.query<{ name: string; row: string }>(sql)) snapshot.get(name)!.push(row);
    return snapshot;
  };
}

/** The rows each table lost and gained, as parsed objects. */
export function changes(before: Snapshot, after: Snapshot) {
  const result: Array<{
    table: string;
    removed: Array<Record<string, unknown>>;
    added: Array<Record<string, unknown>>;
  }> = [];
  for (const [table, rows] of after) {
    const left = new Map<string, number>();
    for (const row of before.get(table) ?? []) left.set(row, (left.get(row) ?? 0) + 1);
    const added: string[] = [];
    for (const row of rows) {
      const n = left.get(row) ?? 0;
      if (n > 0) left.set(row, n - 1);
      else added.push(row);
    }
    const removed = [...left].flatMap(([row, n]) => Array<string>(n).fill(row));
    if (removed.length > 0 || added.length > 0) {
      const parse = (row: string) => JSON.parse(row) as Record<string, unknown>;
      result.push({ table, removed: removed.map(parse), added: added.map(parse) });
    }
  }
  return result;
}

/** The path of a URL, without its query. */
function routeOf(url: string): string {
  return url.split('?')[0]!;
}

const reauthenticating = new Set([
  `${auth}/password/change`,
  `${auth}/identity/change`,
  `${auth}/account/delete`,
  `${auth}/passkeys/register`,
]);
const ceremonies = new Set([`${auth}/passkeys/register`, `${auth}/passkeys/login`]);

/**
 * Fails when a refused request wrote anything beyond the bookkeeping of its refusal:
 * - one code's attempt counted (a 422 invalid_identity_challenge);
 * - a `login.failed` (401, or a 422 from a code login, which is a login), `rate_limited` (429) or
 *   `reauthentication.failed` (a 422 for a wrong current password) audit event added;
 * - the challenge a refused passkey ceremony presented, spent;
 * - the session a refused signed-in call presented, seen: its `last_seen_at` moved on (which it
 *   does at most every 5 minutes), nothing else.
 */
export function assertRefusalWroteNothing(
  before: Snapshot,
  after: Snapshot,
  status: number,
  code: string,
  where: string,
  url: string,
) {
  const route = routeOf(url);
  for (const { table, removed, added } of changes(before, after)) {
    const detail = `${where}: a ${status} ${code} changed ${table}: removed ${JSON.stringify(removed)}, added ${JSON.stringify(added)}`;
    if (table === 'challenges' && code === 'invalid_identity_challenge' && removed.length === 1 && added.length === 1) {
      const [was] = removed;
      const now = added[0]!;
      assert.deepEqual(now, { ...was, attempts: Number(was!['attempts']) + 1 }, detail);
      continue;
    }
    if (table === 'passkey_challenges' && ceremonies.has(route) && removed.length === 1 && added.length === 0) continue;
    if (table === 'sessions' && removed.length === 1 && added.length === 1) {
      const [was] = removed;
      const now = added[0]!;
      assert.deepEqual({ ...now, last_seen_at: was!['last_seen_at'] }, was, detail);
      assert.ok(Date.parse(String(now['last_seen_at'])) > Date.parse(String(was!['last_seen_at'])), detail);
      continue;
    }
    const codeLoginRefused = route === `${auth}/code/login` && code === 'invalid_identity_challenge';
    const allowedEvents = new Set<unknown>([
      ...(status === 401 || codeLoginRefused ? ['login.failed'] : []),
      ...(status === 429 ? ['rate_limited'] : []),
      ...(status === 422 && reauthenticating.has(route) ? ['reauthentication.failed'] : []),
    ]);
    if (table === 'audit_events' && removed.length === 0 && added.every((row) => allowedEvents.has(row['event']))) {
      continue;
    }
    assert.fail(detail);
  }
}

/**
 * A fuzzer that sends one case, waits for any work behind the answer, and checks the properties.
 * `prepare` may fill a case in just before it is sent (a fresh passkey challenge): what it writes
 * is not the case's doing.
 */
export async function fuzzer(t: TestApp, prepare?: (fuzz: FuzzCase) => Promise<FuzzCase>) {
  const snapshot = await snapshotReader(t);
  let rows = await snapshot();
  let addressCounter = 0;
  const statuses = new Map<string, number>();
  const send = async (fuzz: FuzzCase, success: number[]): Promise<void> => {
    casesSent += 1;
    addressCounter += 1;
    t.clock.advance(7);
    if (prepare !== undefined) {
      fuzz = await prepare(fuzz);
      rows = await snapshot();
    }
    const response = await t.app.inject({
      method: fuzz.method as 'GET',
      url: fuzz.url,
      headers: fuzz.headers,
      remoteAddress: `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`,
      ...(fuzz.payload === undefined ? {} : { payload: fuzz.payload }),
    });
    await t.services.background.drain();
    const where = describeCase(fuzz);
    const problem =
      String(response.headers['content-type']).startsWith('application/problem+json') && response.body !== '';
    const code = problem ? String(response.json().code) : '';
    statuses.set(
      `${response.statusCode} ${code}`.trim(),
      (statuses.get(`${response.statusCode} ${code}`.trim()) ?? 0) + 1,
    );
    assertDocumentedAnswer(response, success, where, fuzz.method);
    const now = await snapshot();
    if (response.statusCode >= 400) assertRefusalWroteNothing(rows, now, response.statusCode, code, where, fuzz.url);
    rows = now;
  };
  /** How often each status (and problem code) was answered, for the test's diagnostics. */
  const tally = () =>
    [...statuses]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ');
  return { send, tally };
}

/** A verified customer with a session, and a live verification-free reset code, to aim the fuzz at. */
export async function seed(t: TestApp, store: StoreSetup): Promise<{ pool: Pool; sessions: SessionPool }> {
  const password = 'analytical engine 1843';
  const field = store.env['STORE_IDENTITY_MODE'] === 'phone' ? 'phone' : 'email';
  const registered = await t.post(`${auth}/register`, registration({ email: undefined, [field]: store.identity }));
  assert.equal(registered.status, 201);
  const verification = await t.codeFor(store.identity, 'verification');
  assert.equal((await t.post(`${auth}/verify`, { identity: store.identity, code: verification })).status, 200);
  const login = await t.post(`${auth}/login`, { identity: store.identity, password });
  assert.equal(login.status, 200);
  const session = login.cookies.find((c) => c.name === 'storefront_session')?.value;
  const xsrf = login.cookies.find((c) => c.name === 'XSRF-TOKEN')?.value;
  assert.ok(session !== undefined && xsrf !== undefined);
  assert.equal((await t.post(`${auth}/password/forgot`, { identity: store.identity })).status, 202);
  const reset = await t.codeFor(store.identity, 'password_reset');
  return {
    pool: {
      identityField: field,
      identity: store.identity,
      password,
      currentPasswords: [password],
      codes: [verification, reset, '000000', '123456'],
      ids: ['0'],
    },
    sessions: { session, xsrf },
  };
}
