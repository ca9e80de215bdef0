import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore, type StoreChanges } from '../../../src/store/store.js';
import { auth, stableHeaders, useHarness, withoutRequestId, type Reply, type TestApp } from '../../helpers/harness.js';

/**
 * A feature a store setting turns off (`auth.sign_in_with_code`, `auth.passkeys`) is not there:
 * every route of it answers as a path no route has, whatever the method, the media type or the
 * body, so a stranger cannot tell an installed but unused feature from a missing one.
 */

type Feature = 'signInWithCode' | 'passkeys';

/** Every route of each feature: its method and a path that reaches it. */
const featureRoutes: Record<Feature, Array<['GET' | 'POST', string]>> = {
  signInWithCode: [
    ['POST', '/code/request'],
    ['POST', '/code/login'],
  ],
  passkeys: [
    ['POST', '/passkeys/register/options'],
    ['POST', '/passkeys/register'],
    ['GET', '/passkeys'],
    ['POST', '/passkeys/00000000-0000-4000-8000-000000000000/delete'],
    ['POST', '/passkeys/login/options'],
    ['POST', '/passkeys/login'],
  ],
};

const unknownPath = `${auth}/nope`;

/** Requests that a route would refuse on its own before its handler runs, each sent to `path`. */
function oddRequests(t: TestApp, method: 'GET' | 'POST'): Array<[string, (path: string) => Promise<Reply>]> {
  return [
    ['a text/plain body', (path) => t.post(path, 'identity=ada', { 'content-type': 'text/plain' })],
    ['an oversized body', (path) => t.post(path, JSON.stringify({ identity: 'a'.repeat(20_000) }))],
    ['invalid JSON', (path) => t.post(path, '{not json')],
    ['the other method', (path) => (method === 'POST' ? t.get(path) : t.post(path, {}))],
    ['its own method and no body', (path) => (method === 'POST' ? t.post(path) : t.get(path))],
  ];
}

/** The same answer: status, problem document (but its request id) and headers (but those that vary). */
function assertSameAnswer(reply: Reply, expected: Reply, where: string): void {
  assert.equal(reply.status, expected.status, `${where}: ${JSON.stringify(reply.body)}`);
  assert.deepEqual(withoutRequestId(reply.body), withoutRequestId(expected.body), where);
  assert.deepEqual(stableHeaders(reply), stableHeaders(expected), where);
}

async function changeStore(t: TestApp, changes: StoreChanges): Promise<void> {
  const result = await updateStore(t.db, t.clock, changes);
  assert.ok(result.ok);
  t.services.store.invalidate();
}

describe('a feature turned off by its store setting', () => {
  const harness = useHarness();

  for (const feature of ['signInWithCode', 'passkeys'] as const) {
    test(`${feature}: every route answers 404 not_found exactly as an unknown path does, whatever the body or method`, async () => {
      const t = await harness.start();
      assert.equal((await t.services.store.get())[feature], false, 'off by default');
      for (const [method, path] of featureRoutes[feature]) {
        for (const [what, send] of oddRequests(t, method)) {
          const missing = await send(unknownPath);
          assert.equal(missing.status, 404, `an unknown path with ${what}`);
          assert.equal(missing.body.code, 'not_found');
          assertSameAnswer(await send(`${auth}${path}`), missing, `${method} ${path} with ${what}`);
        }
      }
    });

    test(`${feature}: the store gate and the CSRF check answer its routes as they answer an unknown path`, async () => {
      const t = await harness.start();
      const crossSite = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
      const [method, path] = featureRoutes[feature][0]!;
      const send = (url: string, headers: Record<string, string> = {}) =>
        method === 'POST' ? t.post(url, {}, headers) : t.get(url, headers);

      const refused = await send(unknownPath, crossSite);
      assert.equal(refused.body.code, 'untrusted_origin');
      assertSameAnswer(await send(`${auth}${path}`, crossSite), refused, `cross-site ${path}`);

      await changeStore(t, { status: 'paused' });
      const shut = await send(unknownPath);
      assert.equal(shut.body.code, 'store_unavailable');
      assertSameAnswer(await send(`${auth}${path}`), shut, `paused store ${path}`);
    });
  }
});

describe('a path no route has', () => {
  const harness = useHarness();

  test('answers 404 not_found whatever the body, inside the customer prefix and outside it', async () => {
    const t = await harness.start();
    for (const path of [`${auth}/nope`, '/api/v1/nope', '/not-even-the-api']) {
      for (const [what, send] of oddRequests(t, 'POST')) {
        const reply = await send(path);
        assert.equal(reply.status, 404, `${path} with ${what}: ${JSON.stringify(reply.body)}`);
        assert.equal(reply.body.code, 'not_found');
      }
    }
  });
});
