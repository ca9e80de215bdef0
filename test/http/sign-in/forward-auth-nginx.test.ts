import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startNginx, type Nginx } from '../../helpers/nginx.js';
import { serviceBackend, type ServiceBackend } from '../../helpers/service-backend.js';
import { setStoreStatus, startService, type ServiceProcess } from '../../helpers/service-process.js';

/**
 * Forward auth behind a real nginx: `auth_request` asks the service about every request for the
 * application, and only a signed-in shopper's requests reach it, carrying who they are.
 */

interface Addresses {
  /** Where nginx listens. */
  listen: string;
  /** The service, host:port. */
  service: string;
  /** The application behind the proxy, host:port. */
  app: string;
}

/**
 * The contents of nginx's http block for forward auth: the service's API on the shop's own origin
 * (so its cookie is the shop's), and everything else for signed-in shoppers only. This is the text
 * docs show, with their addresses.
 */
function forwardAuthSite({ listen, service, app }: Addresses): string {
  return `upstream storefront_auth {
    server ${service};
}

upstream shop_app {
    server ${app};
}

server {
    listen ${listen};

    # Sign-in, logout and the rest of the service's API, on the shop's own origin.
    location /api/ {
        proxy_pass http://storefront_auth;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }

    # Everything else is for signed-in shoppers: a 401 from /_auth is the shopper's answer.
    location / {
        auth_request /_auth;
        auth_request_set $customer_id $upstream_http_x_customer_id;
        auth_request_set $customer_identity_type $upstream_http_x_customer_identity_type;
        auth_request_set $customer_identity $upstream_http_x_customer_identity;
        auth_request_set $customer_verified $upstream_http_x_customer_verified;
        auth_request_set $store_id $upstream_http_x_store_id;
        # Set, not passed on: whatever the shopper sent under these names is replaced.
        proxy_set_header X-Customer-Id $customer_id;
        proxy_set_header X-Customer-Identity-Type $customer_identity_type;
        proxy_set_header X-Customer-Identity $customer_identity;
        proxy_set_header X-Customer-Verified $customer_verified;
        proxy_set_header X-Store-Id $store_id;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_pass http://shop_app;
    }

    # The check: the shopper's headers (the session cookie) without the body.
    location = /_auth {
        internal;
        proxy_pass http://storefront_auth/api/v1/customer/auth/forward;
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
        proxy_set_header X-Original-URI $request_uri;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }
}`;
}

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request to nginx, with exactly these headers (no client adds any of its own). */
function call(url: string, method: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method,
        agent: false,
        headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: text }));
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

const cookieName = 'storefront_session';
const shopper = { name: 'Ada Lovelace', email: 'ada@example.com', password: 'analytical engine 1843' };
const forged = {
  'x-customer-id': 'forged',
  'x-customer-identity-type': 'phone',
  'x-customer-identity': 'grace@example.com',
  'x-customer-verified': 'true',
  'x-store-id': 'another-store',
};

describe('forward auth behind nginx', { timeout: 180_000 }, () => {
  let backend: ServiceBackend;
  let service: ServiceProcess;
  let nginx: Nginx;
  let application: http.Server;
  /** Every request the application behind nginx received. */
  const received: Received[] = [];
  let session = '';
  let customerId = '';

  const through = (path: string, method = 'GET', headers: Record<string, string> = {}, body?: unknown) =>
    call(`${nginx.url}${path}`, method, headers, body);
  const withSession = (headers: Record<string, string> = {}) => ({ cookie: `${cookieName}=${session}`, ...headers });
  /** The forward-auth check of the request with this X-Request-ID, as the service's request log shows it. */
  async function checkOf(requestId: string): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const line = service.logs.find(
        (entry) => entry['reqId'] === requestId && entry['route'] === '/api/v1/customer/auth/forward',
      );
      if (line !== undefined) return line;
      assert.ok(Date.now() < deadline, `the service logged no check of ${requestId}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  before(async () => {
    backend = await serviceBackend('forward_nginx');
    // Behind nginx: each shopper is counted by the address nginx forwards, not by nginx's own.
    service = await startService({ ...backend.env, TRUST_PROXY: 'true' });
    application = http.createServer((request, response) => {
      received.push({ method: request.method!, url: request.url!, headers: request.headers });
      request.resume();
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ method: request.method, url: request.url, headers: request.headers }));
    });
    await new Promise<void>((resolve) => application.listen(0, '127.0.0.1', resolve));
    const app = `127.0.0.1:${(application.address() as AddressInfo).port}`;
    const serviceAddress = new URL(service.url).host;
    nginx = await startNginx((port) => forwardAuthSite({ listen: `127.0.0.1:${port}`, service: serviceAddress, app }));
  });

  after(async () => {
    await nginx?.stop();
    await new Promise((resolve) => application?.close(resolve));
    await service?.stop();
    await backend?.remove();
  });

  test('without a session nginx answers 401 and the application is never reached', async () => {
    for (const [method, headers] of [
      ['GET', {}],
      ['POST', {}],
      ['GET', { cookie: `${cookieName}=${'A'.repeat(43)}` }],
      ['GET', forged],
    ] as const) {
      const answer = await through('/orders/7', method, headers);
      assert.equal(answer.status, 401, `${method} ${JSON.stringify(headers)}: ${answer.body}`);
    }
    assert.deepEqual(received, []);
  });

  test("signed in through nginx, the application receives the shopper's identity", async () => {
    const signUp = { ...shopper, password_confirmation: shopper.password };
    const registered = await through('/api/v1/customer/auth/register', 'POST', {}, signUp);
    assert.equal(registered.status, 201, registered.body);
    customerId = JSON.parse(registered.body).id;
    const credentials = { identity: shopper.email, password: shopper.password };
    const login = await through('/api/v1/customer/auth/login', 'POST', {}, credentials);
    assert.equal(login.status, 200, login.body);
    const cookie = (login.headers['set-cookie'] ?? []).find((line) => line.startsWith(`${cookieName}=`));
    assert.ok(cookie, 'the session cookie is set through nginx');
    session = cookie.split(';')[0]!.slice(cookieName.length + 1);

    const answer = await through('/orders/7?page=2', 'GET', withSession());
    assert.equal(answer.status, 200, answer.body);
    const { url, headers } = received.at(-1)!;
    assert.equal(url, '/orders/7?page=2');
    assert.equal(headers['x-customer-id'], customerId);
    assert.equal(headers['x-customer-identity-type'], 'email');
    assert.equal(headers['x-customer-identity'], shopper.email);
    assert.equal(headers['x-customer-verified'], 'false');
    assert.equal(headers['x-store-id'], 'default');
  });

  test('headers the shopper sends under those names never reach the application', async () => {
    const before = received.length;
    const answer = await through('/orders', 'GET', withSession(forged));
    assert.equal(answer.status, 200, answer.body);
    assert.equal(received.length, before + 1);
    const { headers, url } = received.at(-1)!;
    assert.equal(url, '/orders');
    assert.deepEqual(
      Object.fromEntries(Object.keys(forged).map((name) => [name, headers[name]])),
      {
        'x-customer-id': customerId,
        'x-customer-identity-type': 'email',
        'x-customer-identity': shopper.email,
        'x-customer-verified': 'false',
        'x-store-id': 'default',
      },
      'each header holds the service’s value, once',
    );
    const raw = JSON.stringify(headers);
    for (const value of Object.values(forged)) assert.ok(!raw.includes(`"${value}"`), `${value} is not passed on`);
  });

  test('a POST is checked too: nginx asks with GET, the application gets the POST', async () => {
    // The subrequest carries the shopper's headers, X-Request-ID too: its log line is found by it.
    const requestId = `forward-post-${process.pid}`;
    const answer = await through('/orders', 'POST', withSession({ 'x-request-id': requestId }), { item: 'tea' });
    assert.equal(answer.status, 200, answer.body);
    const { method, headers } = received.at(-1)!;
    assert.equal(method, 'POST');
    assert.equal(headers['x-customer-id'], customerId);
    const check = await checkOf(requestId);
    assert.equal(check['method'], 'GET');
    assert.equal(check['status'], 200);
  });

  test('a paused store fails closed: nginx answers 500 and the application is not reached', async () => {
    await setStoreStatus(service, backend.env, 'paused');
    try {
      const before = received.length;
      const answer = await through('/orders', 'GET', withSession());
      assert.equal(answer.status, 500);
      assert.equal(received.length, before);
      assert.match(nginx.errorLog(), /auth request unexpected status: 503/);
    } finally {
      await setStoreStatus(service, backend.env, 'active');
    }
    assert.equal((await through('/orders', 'GET', withSession())).status, 200);
  });

  test('after logout nginx answers 401 again', async () => {
    const logout = await through('/api/v1/customer/auth/logout', 'POST', withSession());
    assert.equal(logout.status, 200, logout.body);
    const before = received.length;
    assert.equal((await through('/orders', 'GET', withSession())).status, 401);
    assert.equal(received.length, before);
  });
});
