import fc from 'fast-check';
import { api, auth } from '../helpers/harness.js';

/**
 * What the fuzzer sends: every endpoint with its documented successes, the stores it runs in, and
 * the arbitraries of bodies, headers, queries and paths (plausible values mixed with hostile ones).
 */

export type Field =
  | 'name'
  | 'email'
  | 'phone'
  | 'password'
  | 'password_confirmation'
  | 'identity'
  | 'code'
  | 'current_password'
  | 'credential';

export interface Endpoint {
  name: string;
  method: 'GET' | 'POST';
  /** May hold `:id`, filled with one of the pool's ids or anything else. */
  path: string;
  success: number[];
  fields: Field[];
  /** A signed-in call: most cases carry the seeded customer's session, so they reach the handler. */
  signedIn?: boolean;
  /** A passkey ceremony: most cases carry a fresh challenge cookie from this kind of options call. */
  ceremony?: 'register' | 'login';
}

export const endpoints: Endpoint[] = [
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

export interface StoreSetup {
  label: string;
  env: Record<string, string>;
  identity: string;
}

export const stores: StoreSetup[] = [
  { label: 'email store', env: {}, identity: 'ada@example.com' },
  {
    label: 'phone store requiring verification behind a trusted proxy',
    env: { STORE_IDENTITY_MODE: 'phone', STORE_VERIFICATION_REQUIRED: 'true', TRUST_PROXY: 'true' },
    identity: '+14155550123',
  },
];

// ---------------------------------------------------------------------------------------------
// Arbitraries

export const chars = (min: number, max: number) => fc.integer({ min, max }).map((c) => String.fromCharCode(c));
export const printable = fc.string({ unit: chars(0x20, 0x7e), maxLength: 120 });
export const controlCharacters = fc.string({
  unit: fc.oneof(chars(0x00, 0x1f), chars(0x7f, 0x9f)),
  minLength: 1,
  maxLength: 40,
});
export const loneSurrogates = fc
  .array(fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', 'a', '1', '@', '\u0000', '+'), {
    minLength: 1,
    maxLength: 40,
  })
  .map((parts) => parts.join(''));
export const huge = fc
  .tuple(fc.integer({ min: 256, max: 20_000 }), fc.constantFrom('a', '1', 'é', '\u0000', '😀', ' ', 'a1', '\ud800'))
  .map(([n, unit]) => unit.repeat(Math.ceil(n / unit.length)));
export const nasty = fc.constantFrom(
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
export const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  controlCharacters,
  loneSurrogates,
  huge,
  nasty,
);
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }) },
);

export const sixDigits = fc.integer({ min: 0, max: 999_999 }).map((n) => String(n).padStart(6, '0'));
export const phones = fc.oneof(
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
export const emails = fc.oneof(
  fc.emailAddress(),
  fc.constantFrom('ADA@Example.com ', 'nobody@example.com', 'a@b', '@', 'a@-b.com', `${'a'.repeat(250)}@x.io`),
);

/**
 * Text as people type it: its ASCII digits written in the Arabic-Indic or Extended Arabic-Indic
 * digits the service reads as ASCII, in full-width or Devanagari look-alikes it refuses, mixed
 * digit by digit, or wrapped in the right-to-left marks an Arabic text field adds.
 */
const digitZeros = [0x30, 0x0660, 0x06f0, 0xff10, 0x0966, 0x1d7ce];
export function retyped(text: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const inScript = (value: string, zeros: number[]) => {
    let i = 0;
    return value.replace(/[0-9]/g, (digit) => String.fromCodePoint(zeros[i++ % zeros.length]! + Number(digit)));
  };
  return fc.oneof(
    fc.tuple(text, fc.constantFrom(...digitZeros)).map(([value, zero]) => inScript(value, [zero])),
    fc
      .tuple(text, fc.array(fc.constantFrom(...digitZeros), { minLength: 2, maxLength: 8 }))
      .map(([value, zeros]) => inScript(value, zeros)),
    fc
      .tuple(text, fc.constantFrom('\u200f', '\u200e', '\u061c', '\u2067', '\u2069', '\u202b'), fc.boolean())
      .map(([value, mark, before]) => (before ? `${mark}${value}` : `${value}${mark}`)),
  );
}
/** Internationalized domains, written every way, and domains that have no IDNA form. */
export const internationalEmails = fc.oneof(
  fc.constantFrom(
    'ada@bücher.example',
    'ADA@BÜCHER.EXAMPLE',
    'ada@xn--bcher-kva.example',
    'ada@مثال.example',
    'ada@example.рф',
    'ada@ｅｘａｍｐｌｅ。com',
    'ada@faß.de',
    'ada@xn--zz.example',
    'ada@xn--.example',
    'ada@xn--bcher-kva.xn--',
    'ada@１２３',
    'ada@bü\u200dcher.example',
    'ada@\u200fbücher.example',
    'adà@bücher.example',
    `ada@${'ü'.repeat(64)}.example`,
  ),
  fc
    .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }), fc.constantFrom('.example', '', '.рф'))
    .map(([label, tld]) => `ada@${label}${tld}`),
);

export interface Pool {
  identityField: 'email' | 'phone';
  identity: string;
  password: string;
  /** What `current_password` offers besides wrong ones: the password, or not when success would end the session. */
  currentPasswords: string[];
  codes: string[];
  /** Public handles a path's `:id` may name: another session of the customer, their passkey. */
  ids: string[];
}

/**
 * In a case's body, a credential the fuzzer replaces as it sends the case: a real one, made by the
 * seeded software authenticator for a fresh challenge, with one member replaced (or none).
 */
export const realCredential = '__real_credential__';
export type CredentialMutation = [path: string, value: unknown] | null;

const base64urlText = fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('base64url'));
const credentialMembers = [
  'id',
  'rawId',
  'type',
  'response',
  'response.clientDataJSON',
  'response.authenticatorData',
  'response.attestationObject',
  'response.signature',
  'response.userHandle',
  'response.transports',
  'clientExtensionResults',
  'authenticatorAttachment',
];

/** Credentials: real ones with a member replaced, made-up ones of the right shape, and anything else. */
export const credentials: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .option(
        fc.tuple(
          fc.constantFrom(...credentialMembers),
          fc.oneof({ weight: 3, arbitrary: base64urlText }, { weight: 1, arbitrary: anyJson }),
        ),
        { freq: 6 },
      )
      .map((mutation): Record<string, CredentialMutation> => ({ [realCredential]: mutation })),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        id: base64urlText,
        rawId: base64urlText,
        type: fc.constantFrom('public-key', 'password', ''),
        response: fc.record(
          {
            clientDataJSON: base64urlText,
            authenticatorData: base64urlText,
            attestationObject: base64urlText,
            signature: base64urlText,
            userHandle: base64urlText,
          },
          { requiredKeys: [] },
        ),
        clientExtensionResults: fc.constant({}),
      },
      { requiredKeys: ['type'] },
    ),
  },
  { weight: 1, arbitrary: anyJson },
);

export function plausible(field: Field, pool: Pool): fc.Arbitrary<unknown> {
  switch (field) {
    case 'name':
      return fc.oneof(fc.constant('Ada Lovelace'), fc.string({ unit: 'grapheme', maxLength: 130 }));
    case 'email':
      return fc.oneof(fc.constant(pool.identity), emails, emails, internationalEmails, retyped(emails));
    case 'phone':
      return fc.oneof(fc.constant(pool.identity), phones, retyped(fc.constant(pool.identity)), retyped(phones));
    case 'identity':
      return fc.oneof(
        fc.constant(pool.identity),
        emails,
        phones,
        internationalEmails,
        retyped(fc.constant(pool.identity)),
        retyped(phones),
      );
    case 'password':
    case 'password_confirmation':
      return fc.oneof(
        fc.constantFrom(pool.password, 'analytical engine 1844', 'password1', 'short1', 'nodigitshere'),
        fc.string({ unit: 'grapheme', minLength: 6, maxLength: 40 }).map((s) => `${s}a1`),
      );
    case 'code':
      return fc.oneof(
        fc.constantFrom(...pool.codes),
        sixDigits,
        retyped(fc.constantFrom(...pool.codes)),
        retyped(sixDigits),
      );
    case 'current_password':
      return fc.constantFrom(...pool.currentPasswords, 'analytical engine 1844', 'password1', 'x');
    case 'credential':
      return credentials;
  }
}

export function fieldValue(field: Field, pool: Pool): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 3, arbitrary: plausible(field, pool) }, { weight: 2, arbitrary: anyJson });
}

/**
 * Half the bodies carry every field the store expects with a plausible value (one of them now
 * and then replaced by anything at all), so they get past validation into the domain; the other
 * half are any subset of the fields with any values, plus unknown keys.
 */
export function objectBody(fields: Field[], pool: Pool): fc.Arbitrary<Record<string, unknown>> {
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
export function rawBodies(fields: Field[], pool: Pool): fc.Arbitrary<string | Buffer> {
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

export function payloads(fields: Field[], pool: Pool): fc.Arbitrary<string | Buffer | undefined> {
  return fc.oneof(
    { weight: 6, arbitrary: objectBody(fields, pool).map((body) => JSON.stringify(body)) },
    { weight: 4, arbitrary: rawBodies(fields, pool) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

export const contentTypes = fc.oneof(
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

export interface SessionPool {
  session: string;
  xsrf: string;
}

export function headerArbitrary(sessions: SessionPool): fc.Arbitrary<Record<string, string>> {
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
export const queries = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      printable.map((q) => encodeURI(q)),
      fc.constantFrom('%', '%zz', '%E0%A4%A', 'a=1&a=2', '__proto__[x]=1'),
    ),
  },
);

export interface FuzzCase {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: string | Buffer | undefined;
}

/** In a case's Cookie header, a challenge cookie the fuzzer fills with a fresh one as it sends the case. */
export const freshChallenge = '__fresh_challenge__';

/**
 * Headers that reach a signed-in or ceremony handler: the seeded session, and for a ceremony mostly
 * a fresh challenge cookie, with a few other headers of any value. No Origin or Sec-Fetch-Site, so
 * the caller is not a browser and the CSRF token is not asked for (the CSRF suites cover that).
 */
function reachingHeaders(endpoint: Endpoint, sessions: SessionPool): fc.Arbitrary<Record<string, string>> {
  const challenge =
    endpoint.ceremony === undefined
      ? fc.constant(false)
      : fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) });
  return fc
    .tuple(
      fc.dictionary(fc.constantFrom('x-request-id', 'user-agent', 'accept-language', 'x-forwarded-for'), printable, {
        maxKeys: 2,
      }),
      endpoint.signedIn === true ? fc.constant(true) : fc.boolean(),
      challenge,
    )
    .map(([headers, withSession, withChallenge]) => {
      const cookie = [
        ...(withSession ? [`storefront_session=${sessions.session}`] : []),
        ...(withChallenge ? [`storefront_passkey_challenge=${freshChallenge}`] : []),
      ].join('; ');
      return cookie === '' ? headers : { ...headers, cookie };
    });
}

/** What a path's `:id` is given: one of the pool's handles, any segment, or one that does not decode. */
function ids(pool: Pool): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...pool.ids) },
    { weight: 2, arbitrary: fc.webSegment() },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%00', '..', 'a'.repeat(300), '%E0%A4%A') },
  );
}

export function caseArbitrary(endpoint: Endpoint, pool: Pool, sessions: SessionPool): fc.Arbitrary<FuzzCase> {
  // GET endpoints get a body now and then too: it must not matter.
  const body =
    endpoint.method === 'POST'
      ? payloads(endpoint.fields, pool)
      : fc.oneof(
          { weight: 9, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: payloads(endpoint.fields, pool) },
        );
  const headers =
    endpoint.signedIn === true || endpoint.ceremony !== undefined
      ? fc.oneof(
          { weight: 4, arbitrary: reachingHeaders(endpoint, sessions) },
          { weight: 1, arbitrary: headerArbitrary(sessions) },
        )
      : headerArbitrary(sessions);
  const path = endpoint.path.includes(':id')
    ? ids(pool).map((id) => endpoint.path.replace(':id', id))
    : fc.constant(endpoint.path);
  return fc.tuple(body, contentTypes, headers, queries, path).map(([payload, type, headers, query, path]) => ({
    method: endpoint.method,
    url: query === undefined ? path : `${path}?${query}`,
    headers: { ...headers, ...(type === undefined || payload === undefined ? {} : { 'content-type': type }) },
    payload,
  }));
}

export const unknownRoutes = fc
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
export function successFor(method: string, url: string): number[] {
  if (method === 'OPTIONS') return [204];
  const endpoint = endpoints.find(
    (e) => e.path === url && (e.method === method || (method === 'HEAD' && e.method === 'GET')),
  );
  return endpoint?.success ?? [];
}
