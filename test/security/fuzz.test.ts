import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { problemCatalogue, type ProblemCode } from '../../src/http/problems.js';
import { updateStore } from '../../src/store/store.js';
import { api, auth, createHarness, registration, type TestApp } from '../helpers/harness.js';

/**
 * Property-based fuzzing of every endpoint through app.inject. For any request at all:
 *   1. the answer is never a 5xx;
 *   2. it is a documented success status of that endpoint, or a problem document whose `code`
 *      is in the catalogue with that very status;
 *   3. a 4xx answer leaves every row of every table as it was, but for the bookkeeping of the
 *      refusal itself: a wrong code's counted attempt (`challenges.attempts` + 1 on one row, for a
 *      422 invalid_identity_challenge), and a new `login.failed` (401, or a refused sign-in code's
 *      422) or `rate_limited` (429) audit event.
 * The store runs with the harness's fast hasher, a fake clock moved 7 seconds per case (so the
 * per-minute limits do not turn every case into a 429, while a code stays live for ~85 cases) and
 * a fresh client address per case.
 */

const runsPerEndpointAndStore = 500;
const runsForUnknownRoutes = 300;
let totalCases = 0;

type Field = 'name' | 'email' | 'phone' | 'password' | 'password_confirmation' | 'identity' | 'code';

interface Endpoint {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  success: number[];
  fields: Field[];
}

const endpoints: Endpoint[] = [
  {
    name: 'register',
    method: 'POST',
    path: `${auth}/register`,
    success: [201],
    fields: ['name', 'email', 'phone', 'password', 'password_confirmation'],
  },
  { name: 'verify', method: 'POST', path: `${auth}/verify`, success: [200], fields: ['identity', 'code'] },
  {
    name: 'resend verification',
    method: 'POST',
    path: `${auth}/verification/resend`,
    success: [202],
    fields: ['identity'],
  },
  { name: 'login', method: 'POST', path: `${auth}/login`, success: [200], fields: ['identity', 'password'] },
  { name: 'forgot password', method: 'POST', path: `${auth}/password/forgot`, success: [202], fields: ['identity'] },
  {
    name: 'reset password',
    method: 'POST',
    path: `${auth}/password/reset`,
    success: [200],
    fields: ['identity', 'code', 'password', 'password_confirmation'],
  },
  { name: 'sign-in code request', method: 'POST', path: `${auth}/code/request`, success: [202], fields: ['identity'] },
  {
    name: 'sign-in code login',
    method: 'POST',
    path: `${auth}/code/login`,
    success: [200],
    fields: ['identity', 'code'],
  },
  { name: 'logout', method: 'POST', path: `${auth}/logout`, success: [200], fields: [] },
  { name: 'who am I', method: 'GET', path: `${auth}/session`, success: [200], fields: [] },
  { name: 'csrf cookie', method: 'GET', path: `${api}/csrf-cookie`, success: [204], fields: [] },
  { name: 'sanctum csrf cookie', method: 'GET', path: '/sanctum/csrf-cookie', success: [204], fields: [] },
  { name: 'platform info', method: 'GET', path: `${api}/platform`, success: [200], fields: [] },
  { name: 'liveness', method: 'GET', path: `${api}/health/live`, success: [200], fields: [] },
  { name: 'readiness', method: 'GET', path: `${api}/health/ready`, success: [200], fields: [] },
];

interface StoreSetup {
  label: string;
  env: Record<string, string>;
  identity: string;
}

const stores: StoreSetup[] = [
  { label: 'email store', env: {}, identity: 'ada@example.com' },
  {
    label: 'phone store requiring verification behind a trusted proxy',
    env: { STORE_IDENTITY_MODE: 'phone', STORE_VERIFICATION_REQUIRED: 'true', TRUST_PROXY: 'true' },
    identity: '+14155550123',
  },
];

// ---------------------------------------------------------------------------------------------
// Arbitraries

const chars = (min: number, max: number) => fc.integer({ min, max }).map((c) => String.fromCharCode(c));
const printable = fc.string({ unit: chars(0x20, 0x7e), maxLength: 120 });
const controlCharacters = fc.string({
  unit: fc.oneof(chars(0x00, 0x1f), chars(0x7f, 0x9f)),
  minLength: 1,
  maxLength: 40,
});
const loneSurrogates = fc
  .array(fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', 'a', '1', '@', '\u0000', '+'), {
    minLength: 1,
    maxLength: 40,
  })
  .map((parts) => parts.join(''));
const huge = fc
  .tuple(fc.integer({ min: 256, max: 20_000 }), fc.constantFrom('a', '1', 'é', '\u0000', '😀', ' ', 'a1', '\ud800'))
  .map(([n, unit]) => unit.repeat(Math.ceil(n / unit.length)));
const nasty = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '\u202e',
  '\ufeff',
  '\u2028',
  "' OR 1=1 --",
  '"; DROP TABLE customers; --',
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%00',
  '__proto__',
  'constructor',
  'null',
  'true',
  '0',
  '-1',
  '1e309',
  'NaN',
);
const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  controlCharacters,
  loneSurrogates,
  huge,
  nasty,
);
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }) },
);

const sixDigits = fc.integer({ min: 0, max: 999_999 }).map((n) => String(n).padStart(6, '0'));
const phones = fc.oneof(
  fc.constantFrom(
    '+14155550123',
    '+1 (415) 555-0199',
    '+442079460000',
    '+999',
    '+1 123 456 7890',
    '+',
    '+0',
    '14155550123',
  ),
  fc.string({ unit: chars(0x30, 0x39), minLength: 1, maxLength: 20 }).map((digits) => `+${digits}`),
  fc.integer({ min: 0, max: 999 }).map((n) => `+44 20 7946 0${String(n).padStart(3, '0')}`),
);
const emails = fc.oneof(
  fc.emailAddress(),
  fc.constantFrom('ADA@Example.com ', 'nobody@example.com', 'a@b', '@', 'a@-b.com', `${'a'.repeat(250)}@x.io`),
);

interface Pool {
  identityField: 'email' | 'phone';
  identity: string;
  password: string;
  codes: string[];
}

function plausible(field: Field, pool: Pool): fc.Arbitrary<unknown> {
  switch (field) {
    case 'name':
      return fc.oneof(fc.constant('Ada Lovelace'), fc.string({ unit: 'grapheme', maxLength: 130 }));
    case 'email':
      return fc.oneof(fc.constant(pool.identity), emails, emails);
    case 'phone':
      return fc.oneof(fc.constant(pool.identity), phones);
    case 'identity':
      return fc.oneof(fc.constant(pool.identity), emails, phones);
    case 'password':
    case 'password_confirmation':
      return fc.oneof(
        fc.constantFrom(pool.password, 'analytical engine 1844', 'password1', 'short1', 'nodigitshere'),
        fc.string({ unit: 'grapheme', minLength: 6, maxLength: 40 }).map((s) => `${s}a1`),
      );
    case 'code':
      return fc.oneof(fc.constantFrom(...pool.codes), sixDigits);
  }
}

function fieldValue(field: Field, pool: Pool): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 3, arbitrary: plausible(field, pool) }, { weight: 2, arbitrary: anyJson });
}

/**
 * Half the bodies carry every field the store expects with a plausible value (one of them now
 * and then replaced by anything at all), so they get past validation into the domain; the other
 * half are any subset of the fields with any values, plus unknown keys.
 */
function objectBody(fields: Field[], pool: Pool): fc.Arbitrary<Record<string, unknown>> {
  const unusedIdentity: Field = pool.identityField === 'email' ? 'phone' : 'email';
  const expected = fields.filter((field) => field !== unusedIdentity);
  const nearValid = fc
    .tuple(
      fc.record(
        Object.fromEntries(expected.map((field) => [field, plausible(field, pool)])) as Record<
          string,
          fc.Arbitrary<unknown>
        >,
      ),
      fc.oneof(
        { weight: 2, arbitrary: fc.constant(undefined) },
        {
          weight: 1,
          arbitrary: fc.tuple(fc.constantFrom(...(expected.length > 0 ? expected : ['identity' as Field])), anyJson),
        },
      ),
      fc.boolean(),
    )
    .map(([body, mutation, confirm]) => {
      const result: Record<string, unknown> = { ...body };
      if (confirm && 'password' in result) result['password_confirmation'] = result['password'];
      if (mutation !== undefined) result[mutation[0]] = mutation[1];
      return result;
    });
  const model = Object.fromEntries(fields.map((field) => [field, fieldValue(field, pool)])) as Record<
    string,
    fc.Arbitrary<unknown>
  >;
  const anyShape = fc
    .tuple(
      fc.record(model, { requiredKeys: [] }),
      fc.dictionary(fc.string({ maxLength: 12 }), anyJson, { maxKeys: 3 }),
      fc.boolean(),
    )
    .map(([known, extra, confirm]) => {
      const body: Record<string, unknown> = { ...extra, ...known };
      if (confirm && 'password' in body) body['password_confirmation'] = body['password'];
      return body;
    });
  return fc.oneof(nearValid, anyShape);
}

/** Raw JSON text that JSON.stringify would never produce. */
function rawBodies(fields: Field[], pool: Pool): fc.Arbitrary<string | Buffer> {
  const key = fields.length > 0 ? fc.constantFrom(...fields) : fc.constantFrom('identity', 'password');
  const value = (field: Field) => plausible(field, pool).map((v) => JSON.stringify(v));
  const duplicateKeys = fc
    .tuple(key, fc.array(fc.tuple(key, fc.boolean()), { minLength: 1, maxLength: 4 }))
    .chain(([first, rest]) =>
      fc.tuple(
        ...[first, ...rest.map(([k]) => k)].map((k) => value(k as Field).map((v) => `${JSON.stringify(k)}:${v}`)),
      ),
    )
    .map((pairs) => `{${[...pairs, ...pairs.slice().reverse()].join(',')}}`);
  const deepNesting = fc
    .tuple(fc.integer({ min: 1, max: 6_000 }), fc.constantFrom('[', '{"a":'), key)
    .map(([depth, open, k]) => {
      const close = open === '[' ? ']' : '}';
      return `{${JSON.stringify(k)}:${open.repeat(depth)}1${close.repeat(depth)}}`;
    });
  const escapedSurrogates = fc
    .tuple(key, fc.constantFrom('\\ud800', '\\udfff', '\\ud800\\ud800', '\\udc00\\ud800', '\\u0000', 'a\\ud83d'))
    .map(([k, escape]) => `{${JSON.stringify(k)}:"${escape}@example.com","password":"x${escape}1"}`);
  const invalidUtf8 = fc
    .uint8Array({ minLength: 1, maxLength: 64 })
    .map((bytes) =>
      Buffer.concat([Buffer.from('{"identity":"'), Buffer.from([0xff, 0xfe, ...bytes, 0xc0]), Buffer.from('"}')]),
    );
  const truncated = objectBody(fields, pool)
    .map((body) => JSON.stringify(body))
    .chain((text) => fc.integer({ min: 0, max: Math.max(0, text.length - 1) }).map((cut) => text.slice(0, cut)));
  const oversized = objectBody(fields, pool).chain((body) =>
    fc
      .integer({ min: 16 * 1024 + 1, max: 24 * 1024 })
      .map((size) => JSON.stringify({ ...body, padding: 'p'.repeat(size) })),
  );
  const notAnObject = fc.oneof(
    hostileString,
    anyJson.map((v) => JSON.stringify(v) ?? 'undefined'),
  );
  const prototypeKeys = fc
    .constantFrom(
      '{"__proto__":{"x":1}}',
      '{"constructor":{"prototype":{"x":1}}}',
      '{"identity":"a@b.co","__proto__":null}',
    )
    .map((text) => text);
  return fc.oneof(
    duplicateKeys,
    deepNesting,
    escapedSurrogates,
    invalidUtf8,
    truncated,
    oversized,
    notAnObject,
    prototypeKeys,
  );
}

function payloads(fields: Field[], pool: Pool): fc.Arbitrary<string | Buffer | undefined> {
  return fc.oneof(
    { weight: 6, arbitrary: objectBody(fields, pool).map((body) => JSON.stringify(body)) },
    { weight: 4, arbitrary: rawBodies(fields, pool) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const contentTypes = fc.oneof(
  { weight: 24, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/problem+json',
      'application/jsonx',
      'text/json',
      '*/*',
      ';',
    ),
  },
  { weight: 1, arbitrary: printable },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

interface SessionPool {
  session: string;
  xsrf: string;
}

function headerArbitrary(sessions: SessionPool): fc.Arbitrary<Record<string, string>> {
  const cookie = fc.oneof(
    printable,
    printable.map((v) => `storefront_session=${v}`),
    fc.constant(`storefront_session=${sessions.session}`),
    fc.constant(`XSRF-TOKEN=${sessions.xsrf}; storefront_session=${sessions.session}`),
    printable.map((v) => `storefront_session=${sessions.session}; storefront_session=${v}`),
    fc.constantFrom('storefront_session=%E0%A4%A', 'storefront_session="unterminated', '=; =; =', 'storefront_session'),
  );
  const random = fc.dictionary(
    fc.constantFrom(
      'x-request-id',
      'accept',
      'x-forwarded-for',
      'user-agent',
      'accept-language',
      'authorization',
      'forwarded',
      'x-real-ip',
      'referer',
      'x-xsrf-token',
      'x-fuzz',
    ),
    printable,
    { maxKeys: 4 },
  );
  // Mostly without Origin and Sec-Fetch-Site, so the requests reach the handlers.
  const browser = fc.oneof(
    { weight: 9, arbitrary: fc.constant({}) },
    {
      weight: 1,
      arbitrary: fc.record(
        {
          origin: fc.oneof(
            fc.constantFrom('null', 'https://evil.example', 'http://localhost:80', 'http://localhost'),
            printable,
          ),
          'sec-fetch-site': fc.oneof(fc.constantFrom('cross-site', 'same-site', 'same-origin', 'none'), printable),
          'x-xsrf-token': fc.oneof(fc.constant(sessions.xsrf), printable),
        },
        { requiredKeys: [] },
      ),
    },
  );
  return fc
    .tuple(random, fc.option(cookie, { nil: undefined }), browser)
    .map(([headers, cookieValue, browserHeaders]) => ({
      ...headers,
      ...(cookieValue === undefined ? {} : { cookie: cookieValue }),
      ...(browserHeaders as Record<string, string>),
    }));
}

/** A query string on one case in four. */
const queries = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      printable.map((q) => encodeURI(q)),
      fc.constantFrom('%', '%zz', '%E0%A4%A', 'a=1&a=2', '__proto__[x]=1'),
    ),
  },
);

interface FuzzCase {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: string | Buffer | undefined;
}

function caseArbitrary(endpoint: Endpoint, pool: Pool, sessions: SessionPool): fc.Arbitrary<FuzzCase> {
  // GET endpoints get a body now and then too: it must not matter.
  const body =
    endpoint.method === 'POST'
      ? payloads(endpoint.fields, pool)
      : fc.oneof(
          { weight: 9, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: payloads(endpoint.fields, pool) },
        );
  return fc.tuple(body, contentTypes, headerArbitrary(sessions), queries).map(([payload, type, headers, query]) => ({
    method: endpoint.method,
    url: query === undefined ? endpoint.path : `${endpoint.path}?${query}`,
    headers: { ...headers, ...(type === undefined || payload === undefined ? {} : { 'content-type': type }) },
    payload,
  }));
}

const unknownRoutes = fc
  .tuple(
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH') },
      { weight: 1, arbitrary: fc.constantFrom('HEAD', 'OPTIONS') },
    ),
    fc.oneof(
      { weight: 3, arbitrary: fc.webSegment().map((segment) => `${api}/${segment}`) },
      { weight: 3, arbitrary: fc.webSegment().map((segment) => `${auth}/${segment}`) },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          ...endpoints.map((endpoint) => endpoint.path),
          `${api}/customer/auth/login/`,
          `${api}//platform`,
          `${api}/customer/auth/../auth/login`,
          '/API/V1/PLATFORM',
          '/api/v2/platform',
          '/%2e%2e/etc/passwd',
          '/sanctum/csrf-cookie/x',
        ),
      },
      // Percent-encodings that do not decode.
      { weight: 1, arbitrary: fc.constantFrom(`${api}/%zz`, `${auth}/%E0%A4%A`, `${auth}/login%`, `${api}/%C0%AF`) },
    ),
  )
  .map(([method, url]) => ({ method, url }));

/** What a method and path may answer with besides problem documents: a route's success, or a CORS preflight's 204. */
function successFor(method: string, url: string): number[] {
  if (method === 'OPTIONS') return [204];
  const endpoint = endpoints.find(
    (e) => e.path === url && (e.method === method || (method === 'HEAD' && e.method === 'GET')),
  );
  return endpoint?.success ?? [];
}

// ---------------------------------------------------------------------------------------------
// Properties

function isProblemCode(code: unknown): code is ProblemCode {
  return typeof code === 'string' && Object.hasOwn(problemCatalogue, code);
}

function describeCase(fuzz: FuzzCase): string {
  const payload = fuzz.payload === undefined ? '' : String(fuzz.payload).slice(0, 300);
  return `${fuzz.method} ${fuzz.url.slice(0, 200)} ${JSON.stringify(fuzz.headers).slice(0, 300)} ${JSON.stringify(payload)}`;
}

/** Documented success, or a catalogued problem document with a matching status; never a 5xx. */
function assertDocumentedAnswer(
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
type Snapshot = Map<string, string[]>;

/** One statement that reads every table of the schema, found when the fuzzer starts. */
async function snapshotReader(t: TestApp): Promise<() => Promise<Snapshot>> {
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
function changes(before: Snapshot, after: Snapshot) {
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

/**
 * Fails when a refused request wrote anything beyond the bookkeeping of its refusal: one code's
 * attempt counted (a 422 invalid_identity_challenge), or a `login.failed` (401, or a 422 from a
 * code login, which is a login) or `rate_limited` (429) audit event added.
 */
function assertRefusalWroteNothing(
  before: Snapshot,
  after: Snapshot,
  status: number,
  code: string,
  where: string,
  url: string,
) {
  for (const { table, removed, added } of changes(before, after)) {
    const detail = `${where}: a ${status} ${code} changed ${table}: removed ${JSON.stringify(removed)}, added ${JSON.stringify(added)}`;
    if (table === 'challenges' && code === 'invalid_identity_challenge' && removed.length === 1 && added.length === 1) {
      const [was] = removed;
      const now = added[0]!;
      assert.deepEqual(now, { ...was, attempts: Number(was!['attempts']) + 1 }, detail);
      continue;
    }
    const codeLoginRefused = url.split('?')[0] === `${auth}/code/login` && code === 'invalid_identity_challenge';
    const allowedEvent =
      status === 401 || codeLoginRefused ? 'login.failed' : status === 429 ? 'rate_limited' : undefined;
    if (table === 'audit_events' && removed.length === 0 && added.every((row) => row['event'] === allowedEvent)) {
      continue;
    }
    assert.fail(detail);
  }
}

/** A fuzzer that sends one case, waits for any work behind the answer, and checks the properties. */
async function fuzzer(t: TestApp) {
  const snapshot = await snapshotReader(t);
  let rows = await snapshot();
  let addressCounter = 0;
  const statuses = new Map<string, number>();
  const send = async (fuzz: FuzzCase, success: number[]): Promise<void> => {
    totalCases += 1;
    addressCounter += 1;
    t.clock.advance(7);
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
async function seed(t: TestApp, store: StoreSetup): Promise<{ pool: Pool; sessions: SessionPool }> {
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
      codes: [verification, reset, '000000', '123456'],
    },
    sessions: { session, xsrf },
  };
}

describe('fuzzing every endpoint', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  before(async () => {
    harness = await createHarness();
  });
  after(async () => harness.close());

  for (const store of stores) {
    describe(store.label, () => {
      for (const endpoint of endpoints) {
        test(`${endpoint.method} ${endpoint.path} (${endpoint.name}) never answers 5xx, answers only documented statuses or catalogued problems, and writes nothing when it refuses`, async (context) => {
          const t = await harness.start({ env: store.env });
          // Signing in with a code is off by default (every call 404); on here, so its paths are fuzzed.
          assert.ok((await updateStore(t.db, t.clock, { signInWithCode: true })).ok);
          t.services.store.invalidate();
          const { pool, sessions } = await seed(t, store);
          const { send, tally } = await fuzzer(t);
          await fc.assert(
            fc.asyncProperty(caseArbitrary(endpoint, pool, sessions), (fuzz) => send(fuzz, endpoint.success)),
            { numRuns: runsPerEndpointAndStore },
          );
          context.diagnostic(tally());
        });
      }

      test("any method on unknown, known and undecodable paths answers the route's own success, a preflight 204 or a catalogued problem, and writes nothing", async (context) => {
        const t = await harness.start({ env: store.env });
        const { sessions } = await seed(t, store);
        const { send, tally } = await fuzzer(t);
        await fc.assert(
          fc.asyncProperty(unknownRoutes, headerArbitrary(sessions), async (route, headers) => {
            await send({ ...route, headers, payload: undefined }, successFor(route.method, route.url));
          }),
          { numRuns: runsForUnknownRoutes },
        );
        context.diagnostic(tally());
      });
    });
  }

  describe('cases the fuzzing turned up', () => {
    for (const [method, url] of [
      ['GET', `${api}/%zz`],
      ['POST', `${auth}/%E0%A4%A`],
    ] as const) {
      test(`${method} ${url}, whose percent-encoding does not decode, answers a catalogued problem document with X-Request-ID and no framework text`, async () => {
        const t = await harness.start();
        const response = await t.app.inject({
          method,
          url,
          headers: { 'content-type': 'application/json' },
          ...(method === 'POST' ? { payload: '{}' } : {}),
        });
        assert.doesNotMatch(response.body, /FST_|is not a valid url component/, 'no framework error text');
        assertDocumentedAnswer(response, [], `${method} ${url}`, method);
      });
    }

    test('an OPTIONS request that is not a CORS preflight answers 204 or a catalogued problem document, never a text error', async () => {
      const t = await harness.start({ env: { CORS_ALLOWED_ORIGINS: 'https://shop.example' } });
      const plain = await t.app.inject({ method: 'OPTIONS', url: `${auth}/login` });
      assertDocumentedAnswer(plain, [204], 'OPTIONS without Origin', 'OPTIONS');
      const noMethod = await t.app.inject({
        method: 'OPTIONS',
        url: `${auth}/login`,
        headers: { origin: 'https://shop.example' },
      });
      assertDocumentedAnswer(noMethod, [204], 'OPTIONS without Access-Control-Request-Method', 'OPTIONS');
    });
  });

  test('ran at least 10,000 cases in all', (t) => {
    t.diagnostic(`fuzz cases: ${totalCases}`);
    assert.ok(totalCases >= 10_000, `${totalCases} cases`);
  });
});
