import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { auditRows } from '../../helpers/audit.js';
import { count } from '../../helpers/customers.js';
import { auth, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { consentAt, signingKeys, type ProviderAnswer } from '../../helpers/openid-provider.js';
import {
  addTestProvider,
  comeBack,
  cookieOf,
  sessionCookieName,
  shopHost,
  signedInWith,
  signInWith,
  startAt,
  startCookieName,
  startProvider,
  useProviderSuite,
} from '../../helpers/providers.js';

/**
 * What an attacker (or a broken provider) can do to the way back, against a real provider: every
 * one comes back to `return_to` with `?error=`, opens no session and creates nothing.
 */

/** A refusal: 303 to `location`, no session cookie, no customer. */
async function assertRefused(t: TestApp, reply: Reply, location: string): Promise<void> {
  assert.equal(reply.status, 303, JSON.stringify(reply.body));
  assert.equal(reply.headers.location, location);
  assert.equal(cookieOf(reply, sessionCookieName), undefined);
  assert.equal(await count(t, 'customers'), 0);
  assert.equal(await count(t, 'sessions'), 0);
}

/** The reasons of the failed provider logins, oldest first. */
async function failureReasons(t: TestApp): Promise<string[]> {
  return (await auditRows(t, 'login.failed')).map((row) => row.details['reason'] ?? '');
}

/** The same answer with some of its query parameters changed (undefined: removed). */
function changed(answer: ProviderAnswer, changes: Record<string, string | undefined>): ProviderAnswer {
  assert.equal(answer.kind, 'redirect');
  const url = new URL(answer.url);
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) url.searchParams.delete(name);
    else url.searchParams.set(name, value);
  }
  return { kind: 'redirect', url };
}

/** A started sign-in and the provider's answer to it, not yet brought back. */
async function consented(t: TestApp, login: string, returnTo = '/shop', id = 'google') {
  const start = await startAt(t, id, { returnTo });
  assert.equal(start.reply.status, 302, JSON.stringify(start.reply.body));
  return { cookie: { [startCookieName]: start.cookie }, answer: await consentAt(start.location, login), start };
}

describe('attacks on the way back from the provider', () => {
  const suite = useProviderSuite(async (t, op) => {
    await addTestProvider(t, op);
    await addTestProvider(t, op, { id: 'apple', preset: 'apple' });
  });
  const { op } = suite;
  const begin = async () => (await suite.begin()).t;

  test('a replayed state is refused: the same answer and cookie a second time open no second session', async () => {
    const t = await begin();
    const { cookie, answer } = await consented(t, 'ada');
    const first = await comeBack(t, answer, cookie);
    assert.equal(first.headers.location, '/shop');
    assert.ok(cookieOf(first, sessionCookieName));
    const replayed = await comeBack(t, answer, cookie);
    assert.equal(replayed.headers.location, '/shop?error=provider_error');
    assert.equal(cookieOf(replayed, sessionCookieName), undefined);
    assert.equal(await count(t, 'sessions'), 1);
    assert.deepEqual(await failureReasons(t), ['state_spent']);
    await t.close();
  });

  test('an ID token for another audience is refused', async () => {
    const t = await begin();
    op().misbehave({ audience: 'another-shop' });
    try {
      const walk = await signInWith(t, 'google', 'ada', { returnTo: '/shop' });
      await assertRefused(t, walk.reply, '/shop?error=provider_error');
    } finally {
      op().misbehave({ audience: undefined });
    }
    assert.deepEqual(await failureReasons(t), ['OAUTH_JWT_CLAIM_COMPARISON_FAILED:aud']);
    await t.close();
  });

  test('an ID token whose nonce is not the start’s is refused', async () => {
    const t = await begin();
    const start = await startAt(t, 'google', { returnTo: '/shop' });
    const url = new URL(start.location);
    url.searchParams.set('nonce', 'a-nonce-the-attacker-chose');
    const answer = await consentAt(url.href, 'ada');
    await assertRefused(
      t,
      await comeBack(t, answer, { [startCookieName]: start.cookie }),
      '/shop?error=provider_error',
    );
    assert.deepEqual(await failureReasons(t), ['OAUTH_JWT_CLAIM_COMPARISON_FAILED:nonce']);
    await t.close();
  });

  test('a mix-up is refused: an answer whose iss names another issuer, or none', async () => {
    const t = await begin();
    for (const iss of ['https://accounts.google.com', undefined]) {
      const { cookie, answer } = await consented(t, 'ada');
      await assertRefused(t, await comeBack(t, changed(answer, { iss }), cookie), '/shop?error=provider_error');
    }
    // The checking library names no parameter for these: its code says the answer was refused as invalid.
    assert.deepEqual(await failureReasons(t), ['OAUTH_INVALID_RESPONSE', 'OAUTH_INVALID_RESPONSE']);
    await t.close();
  });

  test('a way back without the start’s cookie, or with a cookie of another provider or another browser, is refused', async () => {
    const t = await begin();
    const { cookie, answer } = await consented(t, 'ada');
    const apple = await startAt(t, 'apple');
    const victim = await startAt(t, 'google', { returnTo: '/mine' });
    await assertRefused(t, await comeBack(t, answer, {}), '/?error=provider_error');
    await assertRefused(t, await comeBack(t, answer, { [startCookieName]: apple.cookie }), '/?error=provider_error');
    await assertRefused(
      t,
      await comeBack(t, answer, { [startCookieName]: 'not-a-sealed-value' }),
      '/?error=provider_error',
    );
    // Login CSRF: the attacker's answer in the victim's browser, which started a sign-in of its own.
    await assertRefused(
      t,
      await comeBack(t, answer, { [startCookieName]: victim.cookie }),
      '/mine?error=provider_error',
    );
    assert.deepEqual(await failureReasons(t), ['no_start', 'no_start', 'no_start', 'state_mismatch']);
    // None of it spent the start that the answer belongs to.
    assert.equal((await comeBack(t, answer, cookie)).headers.location, '/shop');
    await t.close();
  });

  test('a start older than ten minutes is refused, though the provider’s answer is still good', async () => {
    const t = await begin();
    const { cookie, answer } = await consented(t, 'ada');
    t.clock.advance(10 * 60 + 1);
    await assertRefused(t, await comeBack(t, answer, cookie), '/?error=provider_error');
    assert.deepEqual(await failureReasons(t), ['no_start']);
    await t.close();
  });

  test('the provider’s refusal comes back as ?error=provider_refused, without the provider’s text', async () => {
    const t = await begin();
    const start = await startAt(t, 'google', { returnTo: '/shop' });
    const state = new URL(start.location).searchParams.get('state')!;
    const url = `${auth}/providers/google/callback?error=access_denied&error_description=<b>nope</b>&state=${state}&iss=${encodeURIComponent(op().issuer)}`;
    const reply = await t.get(url, { host: shopHost, cookie: `${startCookieName}=${start.cookie}` });
    await assertRefused(t, reply, '/shop?error=provider_refused');
    assert.deepEqual(await failureReasons(t), ['provider:access_denied']);
    await t.close();
  });

  test('a return_to off the store’s origins is replaced by /, and one on its own origin is kept', async () => {
    const t = await begin();
    const refusedAt = async (returnTo: string) => {
      const start = await startAt(t, 'google', { returnTo });
      const state = new URL(start.location).searchParams.get('state')!;
      const url = `${auth}/providers/google/callback?error=access_denied&state=${state}&iss=${encodeURIComponent(op().issuer)}`;
      return (await t.get(url, { host: shopHost, cookie: `${startCookieName}=${start.cookie}` })).headers.location;
    };
    for (const foreign of [
      'https://evil.example/steal',
      '//evil.example/x',
      '/\\evil.example',
      '/\t/evil.example',
      'javascript:alert(1)',
      'http://shop.example.evil.example/',
      // Paths that the URL parser resolves to `//evil.example`, which a browser reads as a host.
      '/.//evil.example/x',
      '/a/..//evil.example',
      '/%2e//evil.example',
      '/.\\\\evil.example',
    ]) {
      assert.equal(await refusedAt(foreign), '/?error=provider_refused', foreign);
    }
    assert.equal(
      await refusedAt('http://shop.example/cart?x=1'),
      'http://shop.example/cart?x=1&error=provider_refused',
    );
    const walk = await signedInWith(t, 'google', 'ada', { returnTo: 'https://evil.example/steal' });
    assert.equal(walk.location, '/');
    const dotted = await signedInWith(t, 'google', 'ada', { returnTo: '/.//evil.example/login' });
    assert.equal(dotted.location, '/');
    await t.close();
  });

  test('an answer of another state, forced on the browser, refuses itself and leaves the sign-in under way intact', async () => {
    const t = await begin();
    const { cookie, answer } = await consented(t, 'ada');
    const forced = changed(answer, { code: 'an-attackers-code', state: 'an-attackers-state' });
    const refused = await comeBack(t, forced, cookie);
    assert.equal(refused.headers.location, '/shop?error=provider_error');
    assert.equal(cookieOf(refused, startCookieName), undefined, 'the start cookie is left as it was');
    const reply = await comeBack(t, answer, cookie);
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.location, '/shop');
    assert.ok(cookieOf(reply, sessionCookieName));
    assert.deepEqual(await failureReasons(t), ['state_mismatch']);
    await t.close();
  });

  test('Apple’s form post without the cookie is sent once more as a GET to the same path, which completes with the cookie', async () => {
    const t = await begin();
    const { cookie, answer } = await consented(t, 'grace', '/shop', 'apple');
    assert.equal(answer.kind, 'form_post');
    const posted = await comeBack(t, answer, {});
    assert.equal(posted.status, 303);
    // The answer waits in a sealed cookie of its own, out of the URL: the code and the name are in
    // no log line and no history entry.
    assert.equal(posted.headers.location, `${auth}/providers/apple/callback`);
    const kept = posted.cookies.find((each) => each.name === 'storefront_provider_answer');
    assert.ok(kept, 'the answer is kept for the GET');
    assert.equal(kept.path, `${auth}/providers/apple/callback`);
    assert.equal(kept.httpOnly, true);
    assert.ok(!kept.value.includes(answer.fields['code']!));
    assert.equal(await count(t, 'sessions'), 0);
    const again = new URL(`http://shop.example${auth}/providers/apple/callback`);
    const reply = await comeBack(
      t,
      { kind: 'redirect', url: again },
      { ...cookie, storefront_provider_answer: kept.value },
    );
    assert.equal(
      reply.cookies.find((each) => each.name === 'storefront_provider_answer')?.maxAge,
      0,
      'read once, then cleared',
    );
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.location, '/shop');
    assert.ok(cookieOf(reply, sessionCookieName));
    await t.close();
  });
});

describe('ID tokens that are forged or expired', () => {
  const harness = useHarness();

  test('an ID token signed by another key under the known key id is refused (the cached keys decide)', async () => {
    const first = await startProvider({ jwks: signingKeys('signing-key') });
    const t = await harness.start({ clockAt: Date.now() });
    await addTestProvider(t, first);
    const genuine = await signedInWith(t, 'google', 'ada').finally(() => first.close());
    // The same issuer, now signing with a key of the forger's under the key id the service knows.
    const forger = await startProvider({ port: first.port, jwks: signingKeys('signing-key') });
    try {
      const walk = await signInWith(t, 'google', 'ada', { returnTo: '/shop' });
      assert.equal(walk.reply.headers.location, '/shop?error=provider_error');
      assert.equal(cookieOf(walk.reply, sessionCookieName), undefined);
      assert.equal(await count(t, 'sessions'), 1);
      assert.deepEqual(await failureReasons(t), ['OAUTH_INVALID_RESPONSE']);
      // Control: a service that never saw the first key accepts the forger's, so the refusal was the signature's.
      const fresh = await harness.start({ clockAt: Date.now() });
      await addTestProvider(fresh, forger);
      assert.notEqual((await signedInWith(fresh, 'google', 'ada')).customer.id, genuine.customer.id);
      await fresh.close();
    } finally {
      await forger.close();
    }
  });

  test('an expired ID token is refused by the service’s clock', async () => {
    const op = await startProvider({ idTokenSeconds: 60 });
    const t = await harness.start({ clockAt: Date.now() });
    try {
      await addTestProvider(t, op);
      const { cookie, answer } = await consented(t, 'ada');
      t.clock.advance(60 + 120);
      await assertRefused(t, await comeBack(t, answer, cookie), '/shop?error=provider_error');
      assert.deepEqual(await failureReasons(t), ['OAUTH_JWT_TIMESTAMP_CHECK_FAILED:exp']);
    } finally {
      await t.close();
      await op.close();
    }
  });
});

/** A server that takes connections and never answers: a provider too slow to wait for. */
async function hangingServer(port = 0): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('a provider that is down or slow', () => {
  const harness = useHarness();
  const timed = async <T>(work: () => Promise<T>) => {
    const began = performance.now();
    const value = await work();
    return { value, ms: performance.now() - began };
  };

  test('a provider that is down sends the browser straight back with ?error=provider_error', async () => {
    const closed = await hangingServer();
    await closed.close();
    const t = await harness.start({ clockAt: Date.now() });
    await addTestProvider(t, { issuer: `http://127.0.0.1:${closed.port}` });
    const { value: start, ms } = await timed(() => startAt(t, 'google', { returnTo: '/shop' }));
    assert.equal(start.reply.status, 302);
    assert.equal(start.location, '/shop?error=provider_error');
    assert.equal(start.cookie, undefined);
    assert.ok(ms < 2000, `${ms} ms`);
    await t.close();
  });

  test('a provider that never answers its discovery is given up after the timeout', async () => {
    const slow = await hangingServer();
    const t = await harness.start({ clockAt: Date.now(), overrides: { providerTimeoutSeconds: 1 } });
    try {
      await addTestProvider(t, { issuer: `http://127.0.0.1:${slow.port}` });
      const { value: start, ms } = await timed(() => startAt(t, 'google', { returnTo: '/shop' }));
      assert.equal(start.location, '/shop?error=provider_error');
      assert.ok(ms >= 900 && ms < 4000, `${ms} ms`);
    } finally {
      await t.close();
      await slow.close();
    }
  });

  test('a token exchange that never answers comes back as ?error=provider_error after the timeout', async () => {
    const op = await startProvider();
    const t = await harness.start({ clockAt: Date.now(), overrides: { providerTimeoutSeconds: 1 } });
    let slow: Awaited<ReturnType<typeof hangingServer>> | undefined;
    try {
      await addTestProvider(t, op);
      const { cookie, answer } = await consented(t, 'ada');
      await op.close();
      // The issuer's port now takes the token request and never answers it.
      slow = await hangingServer(op.port);
      const { value: reply, ms } = await timed(() => comeBack(t, answer, cookie));
      await assertRefused(t, reply, '/shop?error=provider_error');
      assert.ok(ms >= 900 && ms < 4000, `${ms} ms`);
    } finally {
      await t.close();
      await (slow ?? op).close();
    }
  });
});
