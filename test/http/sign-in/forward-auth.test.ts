import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sessionIdleTimeoutSeconds } from '../../../src/auth/tables/sessions.js';
import { headerValue } from '../../../src/http/sign-in/forward-auth.js';
import { updateStore } from '../../../src/store/store.js';
import { auth, registeredCustomer, toReply, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { cookieValue, sessionCookie, signedIn, withSession } from '../../helpers/customers.js';

const forward = `${auth}/forward`;
const minute = 60;

/** The check as a proxy makes it: GET with the shopper's headers, from the proxy's address. */
function check(t: TestApp, session?: string, headers: Record<string, string> = {}): Promise<Reply> {
  return t.get(forward, { ...(session === undefined ? {} : withSession(session)), ...headers });
}

/** A 401 with nothing in it but the common headers: no body, no media type. */
function assertBareRefusal(reply: Reply, where: string): void {
  assert.equal(reply.status, 401, `${where}: ${reply.status} ${reply.raw.body}`);
  assert.equal(reply.raw.body, '', `${where}: no body`);
  assert.equal(reply.headers['content-type'], undefined, `${where}: no media type`);
  assert.equal(reply.headers['x-customer-id'], undefined, `${where}: no identity`);
  assert.equal(reply.headers['cache-control'], 'no-store', `${where}: never stored`);
}

/** Logs the customer in (which must succeed): a new session's cookie. */
async function sessionOf(t: TestApp, customer: { identity: string; password: string }): Promise<string> {
  const reply = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return cookieValue(reply, sessionCookie);
}

function identityHeaders(reply: Reply) {
  return {
    id: reply.headers['x-customer-id'],
    type: reply.headers['x-customer-identity-type'],
    identity: reply.headers['x-customer-identity'],
    verified: reply.headers['x-customer-verified'],
    store: reply.headers['x-store-id'],
  };
}

describe('forward auth', () => {
  const harness = useHarness();

  test('a live session answers 200 with no body and the identity headers (email store, verified customer)', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    const code = await t.codeFor(customer.identity, 'verification');
    assert.equal((await t.post(`${auth}/verify`, { identity: customer.identity, code })).status, 200);
    // Another customer signed in too: the answer names the session's own customer.
    await signedIn(t, { email: 'grace@example.com' });
    const reply = await check(t, await sessionOf(t, customer));
    assert.equal(reply.status, 200, reply.raw.body);
    assert.equal(reply.raw.body, '');
    assert.equal(reply.headers['content-type'], undefined);
    assert.equal(reply.headers['cache-control'], 'no-store');
    assert.deepEqual(identityHeaders(reply), {
      id: customer.id,
      type: 'email',
      identity: 'ada@example.com',
      verified: 'true',
      store: 'default',
    });
  });

  test('an unverified customer is named too, with X-Customer-Verified false', async () => {
    const t = await harness.start();
    const customer = await signedIn(t);
    const reply = await check(t, customer.session);
    assert.equal(reply.status, 200);
    assert.deepEqual(identityHeaders(reply), {
      id: customer.id,
      type: 'email',
      identity: 'ada@example.com',
      verified: 'false',
      store: 'default',
    });
  });

  test('a phone store names the customer by the E.164 number', async () => {
    const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone' } });
    const customer = await signedIn(t, { email: undefined, phone: '+1 (415) 555-0123' });
    const reply = await check(t, customer.session);
    assert.equal(reply.status, 200);
    assert.deepEqual(identityHeaders(reply), {
      id: customer.id,
      type: 'phone',
      identity: '+14155550123',
      verified: 'false',
      store: 'default',
    });
  });

  test('an email with a % in it is sent percent-encoded, so it decodes back to itself', async () => {
    const t = await harness.start();
    const customer = await signedIn(t, { email: 'ada%shop@example.com' });
    const reply = await check(t, customer.session);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['x-customer-identity'], 'ada%25shop@example.com');
    assert.equal(decodeURIComponent(String(reply.headers['x-customer-identity'])), 'ada%shop@example.com');
  });

  test('HEAD answers as GET, without a body', async () => {
    const t = await harness.start();
    const customer = await signedIn(t);
    const head = toReply(await t.app.inject({ method: 'HEAD', url: forward, headers: withSession(customer.session) }));
    assert.equal(head.status, 200);
    assert.equal(head.raw.body, '');
    assert.equal(head.headers['x-customer-id'], customer.id);
    const anonymous = toReply(await t.app.inject({ method: 'HEAD', url: forward }));
    assert.equal(anonymous.status, 401);
  });

  test('no cookie, an unknown one, a signed-out, a revoked and an expired session answer 401 with no body', async () => {
    const t = await harness.start();
    assertBareRefusal(await check(t), 'no cookie');
    assertBareRefusal(await check(t, 'A'.repeat(43)), 'unknown session');
    assertBareRefusal(await check(t, ''), 'empty cookie');

    const customer = await signedIn(t);
    assert.equal((await t.post(`${auth}/logout`, undefined, withSession(customer.session))).status, 200);
    assertBareRefusal(await check(t, customer.session), 'signed out');

    const phone = await sessionOf(t, customer);
    const laptop = await sessionOf(t, customer);
    assert.equal((await check(t, phone)).status, 200);
    const revoked = await t.post(`${auth}/sessions/revoke-others`, undefined, withSession(laptop));
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
    assertBareRefusal(await check(t, phone), 'revoked from another device');

    assert.equal((await check(t, laptop)).status, 200);
    t.clock.advance(sessionIdleTimeoutSeconds + 1);
    assertBareRefusal(await check(t, laptop), 'idle past the timeout');
  });

  test('slides the idle window as Who am I does', async () => {
    const t = await harness.start();
    const customer = await signedIn(t);
    const lastSeen = async () =>
      (await t.db.query<{ last_seen_at: Date }>('SELECT last_seen_at FROM sessions'))[0]!.last_seen_at.toISOString();
    t.clock.advance(6 * minute);
    assert.equal((await check(t, customer.session)).status, 200);
    assert.equal(await lastSeen(), t.clock.now().toISOString());
    // Checked within each idle window, the session outlives the idle timeout (not its 30-day lifetime).
    for (let i = 0; i < 2; i += 1) {
      t.clock.advance(sessionIdleTimeoutSeconds - minute);
      assert.equal((await check(t, customer.session)).status, 200, `check ${i}`);
    }
  });

  test('a paused store answers 503 store_unavailable, even with a live session', async () => {
    const t = await harness.start();
    const customer = await signedIn(t);
    assert.equal((await updateStore(t.db, t.clock, { status: 'paused' })).ok, true);
    t.services.store.invalidate();
    for (const session of [customer.session, undefined]) {
      const reply = await check(t, session);
      assert.equal(reply.status, 503);
      assert.equal(reply.body.code, 'store_unavailable');
      assert.equal(reply.headers['x-customer-id'], undefined);
      assert.equal(reply.headers['cache-control'], 'no-store');
    }
  });

  test('takes the browser headers a proxy passes on as they are: no CSRF check on GET', async () => {
    const t = await harness.start();
    const customer = await signedIn(t);
    const crossSite = { origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' };
    assert.equal((await check(t, customer.session, crossSite)).status, 200);
  });

  test("with COOKIE_DOMAIN, a browser's check needs the shop's Host: the proxy must pass it on", async () => {
    const t = await harness.start({ env: { COOKIE_DOMAIN: 'shop.test' } });
    const customer = await signedIn(t);
    const browser = { 'sec-fetch-site': 'same-origin' };
    assert.equal((await check(t, customer.session, { ...browser, host: 'shop.test' })).status, 200);
    // What nginx sends without `proxy_set_header Host $host`: its upstream's name.
    const upstreamName = await check(t, customer.session, { ...browser, host: 'storefront_auth' });
    assert.equal(upstreamName.status, 421);
    assert.equal(upstreamName.body.code, 'misdirected_request');
  });

  test('answers any other method 405 with Allow: GET, HEAD', async () => {
    const t = await harness.start();
    const customer = await signedIn(t);
    const reply = await t.post(forward, undefined, withSession(customer.session));
    assert.equal(reply.status, 405);
    assert.equal(reply.headers['allow'], 'GET, HEAD');
  });

  test("is counted by the any-call limit under each shopper's forwarded address behind a trusted proxy", async () => {
    const t = await harness.start({ env: { TRUST_PROXY: 'true' } });
    const customer = await signedIn(t);
    const shopper = (address: string) => check(t, customer.session, { 'x-forwarded-for': address });
    for (let i = 0; i < 300; i += 1) assert.equal((await shopper('198.51.100.1')).status, 200, `call ${i}`);
    const limited = await shopper('198.51.100.1');
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'rate_limited');
    assert.equal((await shopper('198.51.100.2')).status, 200, 'another shopper behind the same proxy');
  });
});

describe('forward auth header values', () => {
  test('pass visible ASCII unchanged and percent-encode everything else, and %', () => {
    assert.equal(headerValue('ada@example.com'), 'ada@example.com');
    assert.equal(headerValue('+14155550123'), '+14155550123');
    assert.equal(headerValue("o'brien+shop!#$&*=?^_`{|}~@example.com"), "o'brien+shop!#$&*=?^_`{|}~@example.com");
    assert.equal(headerValue('josé@exämple.com'), 'jos%C3%A9@ex%C3%A4mple.com');
    assert.equal(headerValue('100%'), '100%25');
    assert.equal(headerValue('a%b@example.com'), 'a%25b@example.com', 'an email may hold a %');
    assert.equal(
      headerValue('a b\r\nX-Customer-Id: forged\t\u0000\u007f'),
      'a%20b%0D%0AX-Customer-Id:%20forged%09%00%7F',
    );
    assert.equal(headerValue('👍'), '%F0%9F%91%8D');
    assert.equal(decodeURIComponent(headerValue('josé 100% ✓')), 'josé 100% ✓');
  });
});
