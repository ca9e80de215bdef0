import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { firstStoreId, loadStore } from '../../../src/store/store.js';
import { api, createHarness, type Reply, type TestApp } from '../../helpers/harness.js';

type SearchBehaviour = 'healthy' | 'failing' | 'hanging' | 'redirecting';

/**
 * A Meilisearch stand-in: answers GET /health as told, and remembers what it was asked. When
 * redirecting, /health points to a page that answers 200, as a proxy's sign-in page would.
 */
async function startSearch() {
  let behaviour: SearchBehaviour = 'healthy';
  const requests: string[] = [];
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    if (behaviour === 'hanging') {
      hanging.push(response);
      return;
    }
    if (behaviour === 'redirecting') {
      if (request.url === '/health') response.writeHead(302, { location: '/sign-in' }).end();
      else response.writeHead(200, { 'content-type': 'text/html' }).end('<p>sign in</p>');
      return;
    }
    response.writeHead(behaviour === 'healthy' ? 200 : 500, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ status: behaviour === 'healthy' ? 'available' : 'unavailable' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    set(next: SearchBehaviour) {
      behaviour = next;
      requests.length = 0;
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function assertNotReady(reply: Reply, checks: Record<string, boolean>): void {
  assert.equal(reply.status, 503, JSON.stringify(reply.body));
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/);
  assert.equal(reply.body.code, 'deployment_not_ready');
  assert.equal(reply.body.request_id, reply.headers['x-request-id']);
  assert.deepEqual(reply.body.checks, checks, 'the same four booleans as a ready answer');
}

async function storeDetails(t: TestApp) {
  const store = await loadStore(t.db, { id: firstStoreId });
  assert.ok(store);
  return { store_id: store.id, store_status: store.status };
}

describe('platform endpoints', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  let search: Awaited<ReturnType<typeof startSearch>>;
  before(async () => {
    harness = await createHarness();
    search = await startSearch();
  });
  after(async () => {
    await harness.close();
    await search.close();
  });

  test('GET /platform names the platform "Storefront" by default and reports api_version v1', async () => {
    const t = await harness.start();
    const reply = await t.get(`${api}/platform`);
    assert.equal(reply.status, 200);
    assert.match(String(reply.headers['content-type']), /^application\/json/);
    assert.deepEqual(reply.body, { name: 'Storefront', api_version: 'v1' });
  });

  test('GET /platform reports the configured PLATFORM_NAME', async () => {
    const t = await harness.start({ env: { PLATFORM_NAME: 'Acme Outfitters' } });
    assert.deepEqual((await t.get(`${api}/platform`)).body, { name: 'Acme Outfitters', api_version: 'v1' });
  });

  test('GET /health/live answers 200 {status: ok}', async () => {
    const t = await harness.start();
    const reply = await t.get(`${api}/health/live`);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { status: 'ok' });
  });

  test('GET /health/ready with every dependency up answers 200 with all four checks true and the store details', async () => {
    const t = await harness.start();
    const reply = await t.get(`${api}/health/ready`);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.match(String(reply.headers['content-type']), /^application\/json/);
    assert.deepEqual(reply.body, {
      status: 'ok',
      checks: { database: true, cache: true, search: true, store: true },
      details: { ...(await storeDetails(t)), store_status: 'active' },
    });
    assert.equal(typeof reply.body.details.store_id, 'string');
    assert.notEqual(reply.body.details.store_id, '');
  });

  test('while the instance drains for shutdown, readiness answers 503 deployment_not_ready at once, though every check passes, and answers say Connection: close', async () => {
    const t = await harness.start();
    assert.equal((await t.get(`${api}/health/ready`)).status, 200);
    t.app.draining = true;
    const reply = await t.get(`${api}/health/ready`);
    assert.equal(reply.status, 503);
    assert.equal(reply.body.code, 'deployment_not_ready');
    assert.deepEqual(reply.body.checks, { database: true, cache: true, search: true, store: true });
    assert.equal(reply.headers['connection'], 'close');
    const live = await t.get(`${api}/health/live`);
    assert.equal(live.status, 200, 'liveness stays up: the process still serves');
    assert.equal(live.headers['connection'], 'close');
  });

  test('readiness asks the configured search engine GET /health and reports search true when it answers 200', async () => {
    search.set('healthy');
    const t = await harness.start({ env: { SEARCH_URL: search.url } });
    const reply = await t.get(`${api}/health/ready`);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.deepEqual(reply.body.checks, { database: true, cache: true, search: true, store: true });
    assert.deepEqual(search.requests, ['GET /health']);
  });

  test('a search engine answering 500 makes readiness answer 503 deployment_not_ready with checks.search false', async () => {
    search.set('failing');
    const t = await harness.start({ env: { SEARCH_URL: search.url } });
    const reply = await t.get(`${api}/health/ready`);
    assertNotReady(reply, { database: true, cache: true, search: false, store: true });
    assert.deepEqual(reply.body.details, await storeDetails(t), 'details are present once the store resolved');
    assert.deepEqual(search.requests, ['GET /health']);
  });

  test('a search engine whose /health answers with a redirect is reported as search false, and the redirect is not followed', async () => {
    search.set('redirecting');
    const t = await harness.start({ env: { SEARCH_URL: search.url } });
    assertNotReady(await t.get(`${api}/health/ready`), { database: true, cache: true, search: false, store: true });
    assert.deepEqual(search.requests, ['GET /health']);
  });

  test('a search engine that never answers gets a readiness answer once the 1-second check limit passes, with search false', async () => {
    search.set('hanging');
    const t = await harness.start({ env: { SEARCH_URL: search.url } });
    const started = performance.now();
    const reply = await t.get(`${api}/health/ready`);
    const elapsedMs = performance.now() - started;
    // At least the limit: the engine really hung and the limit ended the wait. Under 2 s: a busy host
    // gets a second of slack over the limit (the 1.5 s bound is for a quiet one), while a limit
    // that is missing or twice too long still fails.
    assert.ok(elapsedMs >= 950 && elapsedMs < 2_000, `answered after ${Math.round(elapsedMs)} ms`);
    assertNotReady(reply, { database: true, cache: true, search: false, store: true });
    assert.equal(search.requests.length, 1, 'the engine was asked');
  });

  test('a search engine that cannot be reached at all is reported as search false', async () => {
    const closed = await startSearch();
    const url = closed.url;
    await closed.close();
    const t = await harness.start({ env: { SEARCH_URL: url } });
    assertNotReady(await t.get(`${api}/health/ready`), { database: true, cache: true, search: false, store: true });
  });

  test('a failing cache makes readiness answer 503 with checks.cache false', async () => {
    const t = await harness.start({
      overrides: {
        counters: {
          increment: async (_key, windowSeconds, nowMs) => ({ count: 1, resetAtMs: nowMs + windowSeconds * 1000 }),
          peek: async (_key, nowMs) => ({ count: 0, resetAtMs: nowMs }),
          delete: async () => {},
          ping: async () => {
            throw new Error('connection refused');
          },
          close: async () => {},
        },
      },
    });
    const reply = await t.get(`${api}/health/ready`);
    assertNotReady(reply, { database: true, cache: false, search: true, store: true });
    assert.deepEqual(reply.body.details, await storeDetails(t));
  });

  test('platform endpoints need no session, no CSRF token and accept cross-site browser requests', async () => {
    const t = await harness.start();
    const crossSite = {
      origin: 'https://evil.example',
      'sec-fetch-site': 'cross-site',
      cookie: 'storefront_session=bogus; XSRF-TOKEN=bogus',
    };
    for (const path of ['/platform', '/health/live', '/health/ready']) {
      const reply = await t.get(`${api}${path}`, crossSite);
      assert.equal(reply.status, 200, `${path}: ${JSON.stringify(reply.body)}`);
      assert.equal(reply.headers['set-cookie'], undefined, `${path} sets no cookie`);
    }
  });
});
