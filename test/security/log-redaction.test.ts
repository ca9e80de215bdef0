import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createServiceFastify } from '../../src/http/core/common.js';
import { firstStoreId } from '../../src/store/store.js';
import { adminAppOf } from '../helpers/admin.js';
import { signedIn } from '../helpers/customers.js';
import { useHarness } from '../helpers/harness.js';
import { capturingLogger } from '../helpers/logs.js';

/*
 * No log line holds an identity or a token, whatever a client puts in a query string, a header
 * or a body: every route of the customer app and of the admin listener is called with them.
 */

const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const shopperEmail = 'query-secret.shopper@example.com';
const tokenLike = 'tok_Qx7vLr2Wm9Zp4Ks8Jd3Hn6Tb';
/** Parameters some route reads, or a client might send, offered to every route. */
const extraParameters = ['identity', 'email', 'token', 'xsrf_token', 'code', 'state', 'return_to', 'session', 'lang'];

interface Route {
  method: string;
  /** The route's pattern, as Fastify and the log line's `route` name it. */
  pattern: string;
}

/** Every route of an app, read from `printRoutes`' tree: each line's name continues its parent's. */
function routesOf(app: FastifyInstance): Route[] {
  const routes: Route[] = [];
  const parents: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (match === null) continue;
    const depth = match[1]!.length / 4;
    const pattern = (parents[depth - 1] ?? '') + match[2]!;
    parents[depth] = pattern;
    for (const method of match[3]?.split(', ') ?? []) routes.push({ method, pattern });
  }
  return routes;
}

interface OpenApiOperation {
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { content: Record<string, { schema?: { properties?: Record<string, unknown> } }> };
}
type OpenApiDocument = { paths: Record<string, Record<string, OpenApiOperation>> };

/** The operation the OpenAPI document describes for a route, if it describes one. */
function operationOf(document: OpenApiDocument, route: Route): OpenApiOperation | undefined {
  const path = route.pattern.replace(/:([a-z_]+)/g, '{$1}');
  return document.paths[path]?.[route.method.toLowerCase()];
}

function documentedRoutes(document: OpenApiDocument): string[] {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path.replace(/\{([a-z_]+)\}/g, ':$1')}`),
  );
}

/** Each secret as it may appear in a line: as given, and percent-encoded as a query carries it. */
function formsOf(secret: string): string[] {
  return [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)];
}

function assertNoSecret(lines: Array<Record<string, unknown>>, secrets: string[]): void {
  for (const line of lines) {
    const text = JSON.stringify(line);
    for (const secret of secrets) {
      for (const form of formsOf(secret)) assert.ok(!text.includes(form), `a log line holds ${secret}: ${text}`);
    }
  }
}

interface Call {
  method: string;
  url: string;
  pattern: string | null;
  headers: Record<string, string>;
  body?: Record<string, string>;
}

/** A call of `route` with `value` in every query parameter (and body field) it declares, and in the extra ones if told. */
function callOf(
  route: Route,
  document: OpenApiDocument,
  value: string,
  {
    pathValues,
    headers,
    extras,
  }: { pathValues: (pattern: string) => Record<string, string>; headers: Record<string, string>; extras: boolean },
): Call {
  const operation = operationOf(document, route);
  const declared = (operation?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
  const names = new Set([...declared, ...(extras ? extraParameters : [])]);
  const query = new URLSearchParams([...names].map((name) => [name, value]));
  const path = route.pattern
    .replace(/:([a-z_]+)/g, (_all, name: string) => pathValues(route.pattern)[name]!)
    .replace('*', 'x');
  const fields = Object.keys(operation?.requestBody?.content['application/json']?.schema?.properties ?? {});
  return {
    method: route.method,
    url: `${path.startsWith('/') ? path : `/${path}`}?${query}`,
    pattern: route.pattern,
    headers,
    ...(fields.length > 0 && { body: Object.fromEntries(fields.map((field) => [field, value])) }),
  };
}

/** Calls that end what later calls use (the session, the store) go last. */
function endsSomething(call: Call): boolean {
  return call.method === 'DELETE' || /logout|revoke|delete|unlink/.test(call.url.split('?')[0]!);
}

/** Each call from an address of its own, so that the per-address limits let it through to the route. */
async function send(app: FastifyInstance, call: Call, index: number): Promise<number> {
  const response = await app.inject({
    method: call.method as 'GET',
    url: call.url,
    remoteAddress: `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`,
    headers: call.body === undefined ? call.headers : { ...call.headers, 'content-type': 'application/json' },
    ...(call.body !== undefined && { payload: JSON.stringify(call.body) }),
  });
  return response.statusCode;
}

describe('the request log', () => {
  const harness = useHarness();

  test('no log line of any route of either listener holds an identity or a token sent in a query, a header or a body', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken }, logLevel: 'trace' });
    const admin = await adminAppOf(t);
    const shopper = await signedIn(t, { email: shopperEmail });
    const customerDocument = t.app.swagger() as unknown as OpenApiDocument;
    const adminDocument = admin.swagger() as unknown as OpenApiDocument;
    const customerRoutes = routesOf(t.app);
    const adminRoutes = routesOf(admin);

    // The enumeration misses no documented route, nor the undocumented page and CSRF cookie.
    const listed = new Set([...customerRoutes, ...adminRoutes].map((route) => `${route.method} ${route.pattern}`));
    for (const route of [...documentedRoutes(customerDocument), ...documentedRoutes(adminDocument)]) {
      assert.ok(listed.has(route), `${route} is enumerated`);
    }
    for (const route of ['GET /', 'GET /sanctum/csrf-cookie', 'GET /admin/v1/openapi.json']) {
      assert.ok(listed.has(route), `${route} is enumerated`);
    }

    const values = [shopper.identity, tokenLike, shopper.xsrf, shopper.session, adminToken];
    const pathValues = (pattern: string) => ({
      id: pattern.includes('/stores/:id') ? firstStoreId : 'google',
      host: 'localhost',
      customer_id: shopper.id,
      provider: 'google',
    });
    const customerHeaders = {
      cookie: `storefront_session=${shopper.session}; XSRF-TOKEN=${shopper.xsrf}`,
      'x-xsrf-token': shopper.xsrf,
      authorization: `Bearer ${tokenLike}`,
    };
    const adminHeaders = { authorization: `Bearer ${adminToken}`, cookie: `storefront_session=${shopper.session}` };
    const calls = (routes: Route[], document: OpenApiDocument, headers: Record<string, string>) =>
      values
        .flatMap((value) =>
          [false, true].flatMap((extras) =>
            routes.map((route) => callOf(route, document, value, { pathValues, headers, extras })),
          ),
        )
        .sort((a, b) => Number(endsSomething(a)) - Number(endsSomething(b)));
    const unmatched = (prefix: string, headers: Record<string, string>): Call[] =>
      values.map((value) => ({
        method: 'GET',
        url: `${prefix}/nowhere?identity=${encodeURIComponent(value)}&${encodeURIComponent(value)}=1`,
        pattern: null,
        headers,
      }));

    const statuses: Array<[call: string, status: number]> = [];
    for (const [app, list] of [
      [
        t.app,
        [
          ...calls(customerRoutes, customerDocument, customerHeaders),
          ...unmatched('/api/v1/customer/auth', customerHeaders),
        ],
      ],
      [admin, [...calls(adminRoutes, adminDocument, adminHeaders), ...unmatched('/admin/v1', adminHeaders)]],
    ] as const) {
      for (const call of list) {
        const before = t.logs.length;
        statuses.push([`${call.method} ${call.url}`, await send(app, call, statuses.length)]);
        // Each call still writes its line, naming the route by its pattern.
        const lines = t.logs.slice(before).filter((line) => line['msg'] === 'request');
        if (call.url.startsWith('/api/v1/health/') && lines.length === 0) continue; // a probe answered 2xx
        assert.equal(lines.length, 1, `one request line for ${call.method} ${call.url}`);
        // A path with a trailing slash is served by the route without one (the documents' pages),
        // and a wildcard answers a file it does not have as not found, through no route.
        const route = lines[0]!['route'];
        const trimmed = (pattern: string | null) => pattern?.replace(/(.)\/$/, '$1') ?? null;
        if (!(call.pattern?.includes('*') && route === null))
          assert.equal(trimmed(route as string | null), trimmed(call.pattern));
      }
    }
    await t.deliver();

    assert.ok(statuses.length > 600, `${statuses.length} calls`);
    // Secrets reached the routes, not only their validation: the customer read found the shopper,
    // once for each value sent beside it.
    const read = `GET /admin/v1/stores/${firstStoreId}/customers/${shopper.id}?`;
    assert.deepEqual(
      statuses.filter(([call]) => call === read).map(([, status]) => status),
      values.map(() => 200),
    );
    assertNoSecret(t.logs, values);
    const metrics = await t.services.metrics.registry.metrics();
    for (const value of values) assert.ok(!metrics.includes(value) && !metrics.includes(encodeURIComponent(value)));
  });

  test('a line that logs a request whole shows its path, never its query values or headers', async () => {
    const { logger, lines } = capturingLogger('trace');
    const app = createServiceFastify(logger, { trustProxy: false });
    app.get('/lookup', async (request) => {
      request.log.info({ req: request }, 'looked up');
      return {};
    });
    try {
      await app.inject({
        method: 'GET',
        url: `/lookup?identity=${encodeURIComponent(shopperEmail)}`,
        headers: { authorization: `Bearer ${tokenLike}`, cookie: `storefront_session=${tokenLike}` },
      });
      const line = lines.find((candidate) => candidate['msg'] === 'looked up');
      assert.deepEqual(line?.['req'], { method: 'GET', url: '/lookup' });
      assertNoSecret(lines, [shopperEmail, tokenLike]);
    } finally {
      await app.close();
    }
  });
});
