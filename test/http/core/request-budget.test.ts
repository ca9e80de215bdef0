import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useHarness, type TestApp } from '../../helpers/harness.js';

/**
 * What each kind of call pays before and after its own work: the hooks Fastify runs for its route,
 * as `printRoutes` lists them. A hook added for every route shows here first, and must be
 * wanted by each kind of call it reaches (the speed it costs is in BENCHMARKS.md).
 */

type Hooks = Record<string, string[]>;

/** The hooks of `METHOD url`, by lifecycle stage, from the route tree Fastify prints. */
function hooksOf(t: TestApp, method: string, url: string): Hooks {
  const lines = t.app.printRoutes({ includeHooks: true, commonPrefix: false }).split('\n');
  const heading = lines.findIndex((line) => line.replace(/^[\s│├└─]+/, '') === `${url.slice(1)} (${method})`);
  assert.ok(heading >= 0, `${method} ${url} is a route`);
  const hooks: Hooks = {};
  for (const line of lines.slice(heading + 1)) {
    const match = /• \((\w+)\) (\[.*\])$/.exec(line);
    if (match === null) break;
    hooks[match[1]!] = (JSON.parse(match[2]!) as string[]).map((name) => name.replace(/\(\)$/, ''));
  }
  return hooks;
}

describe('the hooks each kind of call runs', () => {
  const harness = useHarness();

  test('a liveness probe runs its limit, the common headers and the request log: no cookies, CORS or store gate', async () => {
    const t = await harness.start();
    assert.deepEqual(hooksOf(t, 'GET', '/api/v1/health/live'), {
      onRequest: ['clientKeyOf', 'probeLimit'],
      onSend: ['commonHeaders'],
      onResponse: ['requestLog'],
    });
  });

  test('a session check runs cookies, CORS, the store gate and the session: each of them used', async () => {
    const t = await harness.start();
    assert.deepEqual(hooksOf(t, 'GET', '/api/v1/customer/auth/session'), {
      onRequest: ['clientKeyOf', 'fastifyCookieHandler', 'handleCors', 'storeGate'],
      preValidation: ['accountOf'],
      onSend: ['commonHeaders', 'fastifyCookieOnSendHandler', 'noStore'],
      onResponse: ['requestLog'],
    });
  });

  test('a login runs the same, and reads no session before its body', async () => {
    const t = await harness.start();
    const login = hooksOf(t, 'POST', '/api/v1/customer/auth/login');
    assert.deepEqual(login.onRequest, ['clientKeyOf', 'fastifyCookieHandler', 'handleCors', 'storeGate']);
    assert.deepEqual(login.onSend, ['commonHeaders', 'fastifyCookieOnSendHandler', 'noStore']);
  });
});
