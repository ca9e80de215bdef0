import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sessionAbsoluteLifetimeSeconds, sessionIdleTimeoutSeconds } from '../../../src/auth/tables/sessions.js';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { adminAppOf } from '../../helpers/admin.js';
import { adminGuard, AdminTokens, tokenIdOf } from '../../../src/http/admin/tokens.js';
import { createServiceFastify, handleError, setCommonHeaders } from '../../../src/http/core/common.js';
import { counterKey, limits } from '../../../src/http/core/rate-limit.js';
import { firstStoreId, updateStore } from '../../../src/store/store.js';
import { signedIn, withSession } from '../../helpers/customers.js';
import {
  api,
  auth,
  injector,
  testSecret,
  toReply,
  useHarness,
  type Reply,
  type TestApp,
} from '../../helpers/harness.js';
import { capturingLogger } from '../../helpers/logs.js';
import { serviceBackend } from '../../helpers/service-backend.js';
import { startService } from '../../helpers/service-process.js';
import { assertRedoclyClean } from '../../helpers/openapi-lint.js';
import { SpentCounters } from '../../helpers/counters.js';
import { recording, type Recorded } from '../../helpers/recording-db.js';

const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const introspectionToken = 'introspection-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const nextIntrospectionToken = 'introspection-token-CCCCCCCCCCCCCCCCCCCCCCCCCCCC';
const introspectPath = '/admin/v1/sessions/introspect';
const tokens = { ADMIN_TOKENS: adminToken, INTROSPECTION_TOKENS: `${introspectionToken}, ${nextIntrospectionToken}` };

interface WithAdmin {
  t: TestApp;
  admin: FastifyInstance;
  introspect(body: unknown, options?: { token?: string | null; address?: string }): Promise<Reply>;
  adminGet(url: string, token?: string | null): Promise<Reply>;
}

/** The harness's service with its admin app beside it, built on the same services as serve() builds it. */
async function startWithAdmin(
  harness: ReturnType<typeof useHarness>,
  env: Record<string, string> = tokens,
  overrides = {},
): Promise<WithAdmin> {
  const t = await harness.start({ env, overrides });
  const admin = await adminAppOf(t);
  const bearer = (token: string | null | undefined): Record<string, string> =>
    token === null ? {} : { authorization: `Bearer ${token ?? introspectionToken}` };
  const inject = injector(admin);
  return {
    t,
    admin,
    async introspect(body, { token, address } = {}) {
      if (address === undefined) return inject('POST', introspectPath, body, bearer(token));
      return toReply(
        await admin.inject({
          method: 'POST',
          url: introspectPath,
          remoteAddress: address,
          headers: { 'content-type': 'application/json', ...bearer(token) },
          payload: JSON.stringify(body),
        }),
      );
    },
    adminGet: (url, token) => inject('GET', url, undefined, bearer(token)),
  };
}

function assertProblem(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/);
  assert.equal(reply.body.code, code);
  assert.equal(reply.body.type, 'about:blank');
  assert.equal(reply.body.status, status);
  assert.equal(reply.body.request_id, reply.headers['x-request-id']);
}

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig({ APP_SECRET: testSecret, DATA_DIR: '/nonexistent', ...env });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('the admin listener configuration', () => {
  test('starts no admin listener without a token, and defaults to 127.0.0.1:3001 with one', () => {
    const base = { APP_SECRET: testSecret, DATA_DIR: '/nonexistent' };
    assert.equal(loadConfig(base).admin, undefined);
    assert.deepEqual(loadConfig({ ...base, ...tokens }).admin, {
      port: 3001,
      host: '127.0.0.1',
      adminTokens: [adminToken],
      introspectionTokens: [introspectionToken, nextIntrospectionToken],
    });
    const only = loadConfig({ ...base, INTROSPECTION_TOKENS: introspectionToken, ADMIN_PORT: '4001' }).admin;
    assert.deepEqual(only?.adminTokens, []);
    assert.equal(only?.port, 4001);
  });

  test('refuses a short token, naming the variable and the place but never the token', () => {
    const short = 'too-short-a-token';
    for (const variable of ['ADMIN_TOKENS', 'INTROSPECTION_TOKENS']) {
      const error = configError({ [variable]: `${'x'.repeat(40)},${short}` });
      assert.equal(error.variable, variable);
      assert.match(error.message, /token 2 of 2 must be at least 32 characters/);
      assert.ok(!error.message.includes(short));
    }
    assert.equal(configError({ ADMIN_TOKENS: `${'x'.repeat(40)} y` }).variable, 'ADMIN_TOKENS');
  });

  test('refuses one token in both lists, an address without a token, and the customer port', () => {
    assert.equal(
      configError({ ADMIN_TOKENS: adminToken, INTROSPECTION_TOKENS: adminToken }).variable,
      'INTROSPECTION_TOKENS',
    );
    assert.equal(configError({ ADMIN_PORT: '4001' }).variable, 'ADMIN_PORT');
    assert.equal(configError({ ADMIN_HOST: '0.0.0.0' }).variable, 'ADMIN_HOST');
    assert.equal(configError({ ...tokens, PORT: '4000', ADMIN_PORT: '4000' }).variable, 'ADMIN_PORT');
    assert.equal(configError({ ...tokens, METRICS_PORT: '3001' }).variable, 'ADMIN_PORT');
    assert.equal(configError({ ...tokens, ADMIN_PORT: 'x' }).variable, 'ADMIN_PORT');
    // Both on free ports of their own: allowed, as the tests start them.
    assert.equal(loadConfig({ APP_SECRET: testSecret, PORT: '0', ADMIN_PORT: '0', ...tokens }).admin?.port, 0);
  });
});

describe('the admin listener', () => {
  const harness = useHarness();

  describe('tokens', () => {
    test('no token, a wrong one or another scheme: 401 unauthenticated with WWW-Authenticate: Bearer', async () => {
      const { admin, introspect, adminGet } = await startWithAdmin(harness);
      const none = await introspect({ session: 'x' }, { token: null });
      assertProblem(none, 401, 'unauthenticated');
      assert.match(String(none.headers['www-authenticate']), /^Bearer realm="[^"]+"$/);
      const wrong = await introspect({ session: 'x' }, { token: `${introspectionToken}x` });
      assertProblem(wrong, 401, 'unauthenticated');
      assert.match(String(wrong.headers['www-authenticate']), /^Bearer .*error="invalid_token"/);
      for (const authorization of [
        `Basic ${introspectionToken}`,
        introspectionToken,
        'Bearer',
        `Bearer ${introspectionToken} x`,
      ]) {
        const reply = await injector(admin)('POST', introspectPath, { session: 'x' }, { authorization });
        assertProblem(reply, 401, 'unauthenticated');
      }
      // Nothing about the listener is told without a token, not even which paths exist.
      assertProblem(await adminGet('/admin/v1/nothing', null), 401, 'unauthenticated');
      assertProblem(await adminGet('/admin/v1/openapi.json', null), 401, 'unauthenticated');
    });

    test('the scheme is read in any case, and every listed token works', async () => {
      const { admin, introspect } = await startWithAdmin(harness);
      for (const token of [adminToken, introspectionToken, nextIntrospectionToken]) {
        assert.equal((await introspect({ session: 'x' }, { token })).status, 200, token);
      }
      const lower = await injector(admin)(
        'POST',
        introspectPath,
        { session: 'x' },
        { authorization: `bearer ${adminToken}` },
      );
      assert.equal(lower.status, 200);
    });

    test('a token rotated out of the list is refused from the next start', async () => {
      const before = await startWithAdmin(harness);
      assert.equal((await before.introspect({ session: 'x' }, { token: introspectionToken })).status, 200);
      const after = await startWithAdmin(harness, {
        ADMIN_TOKENS: adminToken,
        INTROSPECTION_TOKENS: nextIntrospectionToken,
      });
      assertProblem(await after.introspect({ session: 'x' }, { token: introspectionToken }), 401, 'unauthenticated');
      assert.equal((await after.introspect({ session: 'x' }, { token: nextIntrospectionToken })).status, 200);
    });

    test('logs name a token by the first 12 hex characters of its SHA-256, never the token', async () => {
      const { t, introspect } = await startWithAdmin(harness);
      await introspect({ session: 'x' });
      await introspect({ session: 'x' }, { token: adminToken });
      const lines = t.logs.filter((line) => line['listener'] === 'admin');
      assert.deepEqual(
        lines.map((line) => line['token']),
        [tokenIdOf(introspectionToken), tokenIdOf(adminToken)],
      );
      assert.match(tokenIdOf(adminToken), /^[0-9a-f]{12}$/);
      const everything = JSON.stringify(t.logs);
      for (const token of [adminToken, introspectionToken]) assert.ok(!everything.includes(token));
    });

    test('an introspection token may not call a route only admin tokens may: 403 forbidden', async () => {
      // No such route exists yet; the guard every admin route runs behind is tried on one.
      const app = createServiceFastify(capturingLogger().logger, { trustProxy: false });
      app.decorateRequest('adminCaller', null);
      app.setErrorHandler(handleError);
      app.addHook('onSend', async (request, reply) => setCommonHeaders(request, reply));
      app.addHook(
        'onRequest',
        adminGuard(new AdminTokens({ adminTokens: [adminToken], introspectionTokens: [introspectionToken] })),
      );
      app.get('/admin/v1/only-admins', async () => ({ ok: true }));
      app.get('/admin/v1/anyone', { config: { introspectionTokens: true } }, async () => ({ ok: true }));
      const get = (url: string, token: string) =>
        injector(app)('GET', url, undefined, { authorization: `Bearer ${token}` });
      try {
        assertProblem(await get('/admin/v1/only-admins', introspectionToken), 403, 'forbidden');
        assert.equal((await get('/admin/v1/only-admins', adminToken)).status, 200);
        assert.equal((await get('/admin/v1/anyone', introspectionToken)).status, 200);
        assert.equal((await get('/admin/v1/nothing-here', introspectionToken)).status, 404);
      } finally {
        await app.close();
      }
    });

    test('with a token, an unknown path is 404 and another method 405, as problem documents', async () => {
      const { adminGet, admin } = await startWithAdmin(harness);
      assertProblem(await adminGet('/admin/v1/nothing'), 404, 'not_found');
      assertProblem(await adminGet('/api/v1/health/live'), 404, 'not_found');
      const get = await adminGet(introspectPath);
      assertProblem(get, 405, 'method_not_allowed');
      assert.equal(get.headers['allow'], 'POST');
      const text = await admin.inject({
        method: 'POST',
        url: introspectPath,
        headers: { authorization: `Bearer ${introspectionToken}`, 'content-type': 'text/plain' },
        payload: 'session=x',
      });
      assert.equal(text.statusCode, 415);
      assert.equal(text.json().code, 'unsupported_media_type');
    });
  });

  describe('POST /admin/v1/sessions/introspect', () => {
    test('the cookie form and the session form answer the live session, its customer and the store', async () => {
      const { t, introspect } = await startWithAdmin(harness);
      const customer = await signedIn(t);
      const me = await t.get(`${auth}/session`, withSession(customer.session));
      const [listed] = (await t.get(`${auth}/sessions`, withSession(customer.session))).body.sessions;
      const expected = {
        active: true,
        customer: me.body.customer,
        session: { id: listed.id, created_at: listed.created_at, expires_at: listed.expires_at },
        store: { id: 'default', status: 'active' },
      };
      const byCookie = await introspect({ cookie: `theme=dark; storefront_session=${customer.session}; cart=3` });
      assert.equal(byCookie.status, 200);
      assert.deepEqual(byCookie.body, expected);
      assert.equal(byCookie.headers['cache-control'], 'no-store');
      assert.deepEqual((await introspect({ session: customer.session })).body, expected);
      const [row] = await t.db.query<{ id_hash: string }>('SELECT id_hash FROM sessions');
      for (const secret of [customer.session, row!.id_hash]) assert.ok(!JSON.stringify(byCookie.body).includes(secret));
    });

    test('is not written to the audit trail one by one', async () => {
      const { t, introspect } = await startWithAdmin(harness);
      const customer = await signedIn(t);
      const auditedRows = async () => {
        await t.services.background.drain();
        return (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events'))[0]!.n;
      };
      const before = await auditedRows();
      for (const body of [{ session: customer.session }, { session: 'x' }, { cookie: '' }]) await introspect(body);
      assert.equal(await auditedRows(), before);
    });

    test('active:false for an unknown session, a garbled one, and a cookie header without the session cookie', async () => {
      const { t, introspect } = await startWithAdmin(harness);
      const customer = await signedIn(t);
      const [row] = await t.db.query<{ id_hash: string }>('SELECT id_hash FROM sessions');
      for (const body of [
        { session: 'A'.repeat(43) },
        { session: row!.id_hash },
        { session: `${customer.session}x` },
        { cookie: 'theme=dark; cart=3' },
        { cookie: '' },
        { cookie: `other_session=${customer.session}` },
      ]) {
        const reply = await introspect(body);
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.body, { active: false }, JSON.stringify(body));
      }
    });

    test('a session ended by logout or revoked from the account area is inactive at once', async () => {
      const { t, introspect } = await startWithAdmin(harness);
      const customer = await signedIn(t);
      assert.equal((await introspect({ session: customer.session })).body.active, true);
      assert.equal((await t.post(`${auth}/logout`, undefined, withSession(customer.session))).status, 200);
      assert.deepEqual((await introspect({ session: customer.session })).body, { active: false });

      const phone = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      const laptop = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
      const [phoneSession, laptopSession] = [phone, laptop].map(
        (reply) => reply.cookies.find((c) => c.name === 'storefront_session')!.value,
      );
      const target = (await introspect({ session: phoneSession! })).body.session.id;
      const revoked = await t.post(`${auth}/sessions/${target}/revoke`, undefined, withSession(laptopSession!));
      assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
      assert.deepEqual((await introspect({ session: phoneSession! })).body, { active: false });
      assert.equal((await introspect({ session: laptopSession! })).body.active, true);
    });

    test('an expired session is inactive: idle timeout and absolute lifetime; introspection slides the idle window', async () => {
      const { t, introspect } = await startWithAdmin(harness);
      const idle = await signedIn(t);
      t.clock.advance(sessionIdleTimeoutSeconds + 1);
      assert.deepEqual((await introspect({ session: idle.session })).body, { active: false });

      const used = (await t.post(`${auth}/login`, { identity: idle.identity, password: idle.password })).cookies.find(
        (c) => c.name === 'storefront_session',
      )!.value;
      // Asked after 10 days and again 10 days later: 20 days, past the idle timeout, yet alive, as
      // the session check would keep it.
      const day = 86_400;
      t.clock.advance(10 * day);
      assert.equal((await introspect({ session: used })).body.active, true);
      t.clock.advance(10 * day);
      assert.equal((await introspect({ session: used })).body.active, true);
      assert.equal((await t.get(`${auth}/session`, withSession(used))).status, 200, 'the customer API agrees');
      // Used all along, it still ends at its absolute lifetime.
      t.clock.advance(sessionAbsoluteLifetimeSeconds - 20 * day);
      assert.deepEqual((await introspect({ session: used })).body, { active: false });
      assert.equal((await t.get(`${auth}/session`, withSession(used))).status, 401);
    });

    test('a paused store still answers, reporting its status, while the customer API refuses', async () => {
      const { t, introspect } = await startWithAdmin(harness);
      const customer = await signedIn(t);
      for (const status of ['paused', 'closed'] as const) {
        assert.equal((await updateStore(t.db, t.clock, { status })).ok, true);
        t.services.store.invalidate();
        const reply = await introspect({ session: customer.session });
        assert.equal(reply.status, 200);
        assert.equal(reply.body.active, true);
        assert.deepEqual(reply.body.store, { id: 'default', status });
        assert.equal((await t.get(`${auth}/session`, withSession(customer.session))).status, 503);
      }
    });

    test('the body: exactly one of cookie and session, nothing else, each a string', async () => {
      const { introspect } = await startWithAdmin(harness);
      const refusals: Array<[unknown, Record<string, string[]>]> = [
        [{}, { body: ['Send exactly one of cookie and session.'] }],
        [{ cookie: 'a=b', session: 'x' }, { body: ['Send exactly one of cookie and session.'] }],
        // `store` and `host` are fields now (design: many stores); any other is still refused.
        [{ session: 'x', shop: 'default' }, { shop: ['Is not a field of this request.'] }],
        [{ session: 5 }, { session: ['Must be a string.'] }],
        [{ session: '' }, { session: ['Must not be empty.'] }],
        [{ cookie: null }, { cookie: ['Must be a string.'] }],
        [[], { body: ['Must be a JSON object.'] }],
      ];
      for (const [body, errors] of refusals) {
        const reply = await introspect(body);
        assertProblem(reply, 422, 'validation_failed');
        assert.deepEqual(reply.body.errors, errors, JSON.stringify(body));
      }
      assertProblem(await introspect('{"session":'), 422, 'validation_failed');
    });

    test('310 introspections from one address all answer 200: no per-address limit, a per-token one', async () => {
      assert.ok(limits.anyCall.limit < 310, 'more than the shopper-facing limit of an address');
      const { t, introspect } = await startWithAdmin(harness);
      const customer = await signedIn(t);
      const address = '203.0.113.9';
      for (let batch = 0; batch < 31; batch += 1) {
        const replies = await Promise.all(
          Array.from({ length: 10 }, () => introspect({ session: customer.session }, { address })),
        );
        for (const reply of replies) assert.equal(reply.status, 200, JSON.stringify(reply.body));
      }
      const nowMs = t.clock.now().getTime();
      const keys = t.services.keys.counters;
      const perToken = await t.services.counters.peek(
        counterKey(keys, limits.introspections, tokenIdOf(introspectionToken)),
        nowMs,
      );
      assert.equal(perToken.count, 310, 'counted per token in the shared counter store');
      // Neither outside every store nor in the store's name.
      for (const store of [undefined, firstStoreId]) {
        assert.equal(
          (await t.services.counters.peek(counterKey(keys, limits.anyCall, address, store), nowMs)).count,
          0,
        );
      }
      const shopper = await t.app.inject({
        method: 'GET',
        url: `${auth}/session`,
        remoteAddress: address,
        headers: withSession(customer.session),
      });
      assert.equal(shopper.statusCode, 200, "the address's shopper-facing allowance is untouched");
    });

    test('past 100,000 a minute a token is refused 429 rate_limited, and another token is not', async () => {
      // A counter store that has already counted 100,000 introspections of the first token.
      const counters = new SpentCounters(limits.introspections.limit);
      const { t, introspect } = await startWithAdmin(harness, tokens, { counters });
      counters.key = counterKey(t.services.keys.counters, limits.introspections, tokenIdOf(introspectionToken));
      const refused = await introspect({ session: 'x' });
      assertProblem(refused, 429, 'rate_limited');
      assert.equal(refused.headers['ratelimit-limit'], String(limits.introspections.limit));
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.equal((await introspect({ session: 'x' }, { token: nextIntrospectionToken })).status, 200);
    });
  });

  describe('what an introspection reads', () => {
    const log: Recorded[] = [];

    /** Statements of the answers: the store cache's change feed polls on its own clock. */
    const answerStatements = () => log.map((entry) => entry.sql.trim()).filter((sql) => !/\bs\.version > /.test(sql));

    test('once the store is cached, one statement a call, however the body names the store', async () => {
      const { t, introspect } = await startWithAdmin(harness, tokens, { db: recording(harness.db, log) });
      const customer = await signedIn(t);
      const bodies = [
        { session: customer.session },
        { session: customer.session, store: firstStoreId },
        { session: customer.session, store: 'default' },
        { session: customer.session, host: 'shop.example' },
      ];
      for (const body of bodies) assert.equal((await introspect(body)).body.active, true, 'warms the cache');
      for (const body of bodies) {
        log.length = 0;
        assert.equal((await introspect(body)).body.active, true);
        assert.deepEqual(
          answerStatements().map((sql) => sql.split(/\s+/).slice(0, 2).join(' ')),
          ['SELECT c.id,'],
          `${JSON.stringify(Object.keys(body))}: ${answerStatements().join('\n')}`,
        );
      }
    });
  });

  describe('the documents and the customer port', () => {
    test('the customer port answers 404 for every admin path, token or not, and its document has none of them', async () => {
      const { t } = await startWithAdmin(harness);
      const customer = await signedIn(t);
      const authorization = `Bearer ${adminToken}`;
      for (const [method, url] of [
        ['POST', introspectPath],
        ['GET', '/admin/v1/openapi.json'],
        ['GET', '/admin/v1/'],
        ['GET', '/admin'],
      ] as const) {
        const reply = await injector(t.app)(
          method,
          url,
          method === 'POST' ? { session: customer.session } : undefined,
          { authorization },
        );
        assertProblem(reply, 404, 'not_found');
      }
      const document = (await t.get(`${api}/openapi.json`)).body;
      assert.deepEqual(
        Object.keys(document.paths).filter((url) => url.startsWith('/admin')),
        [],
      );
      assert.ok(!JSON.stringify(document).includes('introspect'));
    });

    test('the admin OpenAPI document: its own, any token reads it, it lints clean with Redocly', async () => {
      const { t, adminGet } = await startWithAdmin(harness);
      const reply = await adminGet('/admin/v1/openapi.json');
      assert.equal(reply.status, 200);
      const document = reply.body;
      assert.equal(document.openapi, '3.1.0');
      // Its own calls; the store calls are test/http/admin/stores.test.ts's.
      assert.ok(Object.keys(document.paths).includes(introspectPath));
      const operation = document.paths[introspectPath].post;
      assert.equal(operation.operationId, 'introspectSession');
      assert.deepEqual(operation.security, [{ bearer: [] }]);
      assert.deepEqual(Object.keys(operation.responses).sort(), [
        '200',
        '401',
        '404',
        '413',
        '415',
        '422',
        '429',
        '500',
        '503',
      ]);
      // The Customer is the customer API's own schema.
      const customerDocument = (await t.get(`${api}/openapi.json`)).body;
      const customerSchema =
        customerDocument.paths['/api/v1/customer/auth/session'].get.responses['200'].content['application/json'].schema
          .properties.customer;
      const active = operation.responses['200'].content['application/json'].schema.anyOf.find(
        (schema: any) => schema.properties.customer !== undefined,
      );
      assert.deepEqual(active.properties.customer, customerSchema);
      await assertRedoclyClean(document);
      assert.equal((await adminGet('/admin/v1/openapi.json', adminToken)).status, 200);
    });
  });
});

describe('the admin listener of a running service', () => {
  test('binds a port of its own beside the customer port, which does not serve it', async () => {
    const backend = await serviceBackend('admin-listener');
    const service = await startService({ ...backend.env, ADMIN_PORT: '0', INTROSPECTION_TOKENS: introspectionToken });
    try {
      assert.ok(service.adminUrl, 'the listening line names the admin address');
      assert.notEqual(new URL(service.adminUrl).port, new URL(service.url).port);
      assert.equal(new URL(service.adminUrl).hostname, '127.0.0.1');
      const authorization = `Bearer ${introspectionToken}`;
      const call = (base: string, body: unknown) =>
        fetch(`${base}${introspectPath}`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });

      const register = await fetch(`${service.url}${auth}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Ada',
          email: 'ada@example.com',
          password: 'analytical engine 1843',
          password_confirmation: 'analytical engine 1843',
        }),
      });
      assert.equal(register.status, 201, await register.text());
      const login = await fetch(`${service.url}${auth}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identity: 'ada@example.com', password: 'analytical engine 1843' }),
      });
      assert.equal(login.status, 200);
      const cookie = login.headers
        .getSetCookie()
        .map((line) => line.split(';')[0])
        .join('; ');

      const active = await call(service.adminUrl, { cookie });
      assert.equal(active.status, 200);
      const body = (await active.json()) as { active: boolean; customer: { identity: { value: string } } };
      assert.equal(body.active, true);
      assert.equal(body.customer.identity.value, 'ada@example.com');
      assert.deepEqual(await (await call(service.adminUrl, { session: 'A'.repeat(43) })).json(), { active: false });

      const onCustomerPort = await call(service.url, { cookie });
      assert.equal(onCustomerPort.status, 404);
      assert.equal(((await onCustomerPort.json()) as { code: string }).code, 'not_found');
      const customerOnAdmin = await fetch(`${service.adminUrl}/api/v1/health/live`);
      assert.equal(customerOnAdmin.status, 401);
      await customerOnAdmin.arrayBuffer();
    } finally {
      assert.equal(await service.stop(), 0, 'both listeners close on SIGTERM');
      await backend.remove();
    }
  });
});
