import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { api, auth, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { withSession } from '../../helpers/customers.js';
import { challengeCookieName, cookieOf, cookies, sessionCookieName } from '../../helpers/passkeys.js';
import {
  hostA,
  hostB,
  loginIn,
  refusalShape,
  registerIn,
  signedInIn,
  twoStores,
  verifyIn,
  type StoreSide,
} from '../../helpers/stores.js';
import { SoftAuthenticator } from '../../helpers/webauthn.js';

/**
 * Isolation: two stores on one deployment, told apart by the request's host, share
 * nothing a customer holds. An account, a password, a session, a CSRF token, a code or a passkey
 * of one store is worth nothing in the other, and stays good in its own.
 * (The store gate, the limits and the trail per store: isolation-stores.test.ts.)
 */

const email = 'ada@example.com';
const passwordA = 'analytical engine 1843';
const passwordB = 'difference engine 1822';

function withPassword(password: string) {
  return { password, password_confirmation: password };
}

function assertUnauthenticated(reply: Reply): void {
  assert.equal(reply.status, 401, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'unauthenticated');
  assert.equal(cookieOf(reply, sessionCookieName), undefined, 'no session cookie');
}

function assertInvalidChallenge(reply: Reply): void {
  assert.equal(reply.status, 422, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'invalid_identity_challenge');
  assert.equal(cookieOf(reply, sessionCookieName), undefined, 'no session cookie');
}

async function verifiedAt(t: TestApp, storeId: string, customerId: string): Promise<Date | null> {
  const [row] = await t.db.query<{ verified_at: Date | null }>(
    'SELECT verified_at FROM customers WHERE store_id = $1 AND id = $2',
    [storeId, customerId],
  );
  assert.ok(row, `customer ${customerId} of ${storeId}`);
  return row.verified_at;
}

/**
 * The newest code of `purpose` A sent to `email`, made to differ from B's: in the one case in a
 * million where the two stores drew the same digits, A is asked for another (a minute later, past
 * the per-identity message limit), so a refusal on B can only come from the store boundary.
 */
async function codeUnlikeB(
  t: TestApp,
  a: StoreSide,
  codeB: string,
  purpose: 'verification' | 'sign_in',
  askAgain: string,
): Promise<string> {
  let codeA = await a.codeFor(email, purpose);
  while (codeA === codeB) {
    t.clock.advance(61);
    assert.equal((await a.post(askAgain, { identity: email })).status, 202);
    codeA = await a.codeFor(email, purpose);
  }
  return codeA;
}

describe('isolation between stores: what a customer holds', () => {
  const harness = useHarness();

  test('the same email registers in both stores with different passwords, and each password signs in only in its own store', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    const inA = await registerIn(a, withPassword(passwordA));
    const inB = await registerIn(b, withPassword(passwordB));
    assert.equal(inA.identity, email);
    assert.equal(inB.identity, email);
    assert.notEqual(inA.id, inB.id);
    const rows = await t.db.query<{ store_id: string; id: string }>(
      'SELECT store_id, id::text AS id FROM customers WHERE identity_value = $1',
      [email],
    );
    assert.deepEqual(
      new Map(rows.map((row) => [row.store_id, row.id])),
      new Map([
        [a.id, inA.id],
        [b.id, inB.id],
      ]),
    );

    const ownA = await loginIn(a, email, passwordA);
    assert.equal(ownA.status, 200, JSON.stringify(ownA.body));
    assert.equal(ownA.body.customer.id, inA.id);
    const ownB = await loginIn(b, email, passwordB);
    assert.equal(ownB.status, 200, JSON.stringify(ownB.body));
    assert.equal(ownB.body.customer.id, inB.id);

    // The other store's password is as wrong as any: the answer an unknown account gets, to the byte.
    for (const [side, otherPassword] of [
      [a, passwordB],
      [b, passwordA],
    ] as const) {
      const crossed = await loginIn(side, email, otherPassword);
      const unknown = await loginIn(side, 'nobody@example.com', otherPassword);
      assertUnauthenticated(crossed);
      assert.deepEqual(refusalShape(crossed), refusalShape(unknown), side.slug);
    }
    const sessions = await t.db.query<{ store_id: string; customer_id: string }>(
      'SELECT store_id, customer_id::text AS customer_id FROM sessions',
    );
    assert.deepEqual(
      new Map(sessions.map((row) => [row.store_id, row.customer_id])),
      new Map([
        [a.id, inA.id],
        [b.id, inB.id],
      ]),
      'one session in each store, its own customer’s',
    );
  });

  test('a session cookie of store A sent to store B’s host is no session there, and still works on A', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    // The same email and password in both: what tells the sessions apart is the store alone.
    const inA = await registerIn(a);
    const inB = await registerIn(b);
    const sessionA = await signedInIn(a, email, inA.password);
    const sessionB = await signedInIn(b, email, inB.password);

    assertUnauthenticated(await b.get(`${auth}/session`, withSession(sessionA.session)));
    assertUnauthenticated(await b.post(`${auth}/logout`, undefined, withSession(sessionA.session)));
    assertUnauthenticated(await a.get(`${auth}/session`, withSession(sessionB.session)));

    const stillA = await a.get(`${auth}/session`, withSession(sessionA.session));
    assert.equal(stillA.status, 200, JSON.stringify(stillA.body));
    assert.equal(stillA.body.customer.id, inA.id);
    const stillB = await b.get(`${auth}/session`, withSession(sessionB.session));
    assert.equal(stillB.status, 200, JSON.stringify(stillB.body));
    assert.equal(stillB.body.customer.id, inB.id);
  });

  test('a CSRF token from store A’s csrf-cookie is refused with 419 by store B for a browser request', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    await registerIn(a);
    await registerIn(b);
    const tokenOf = async (side: StoreSide) => {
      const reply = await side.get(`${api}/csrf-cookie`);
      assert.equal(reply.status, 204, JSON.stringify(reply.body));
      const token = cookieOf(reply, 'XSRF-TOKEN');
      assert.ok(token);
      return token;
    };
    const fromBrowserOn = (side: StoreSide, token: string) => ({
      origin: `https://${side.host}`,
      'sec-fetch-site': 'same-origin',
      cookie: `XSRF-TOKEN=${token}`,
      'x-xsrf-token': token,
    });
    const login = { identity: email, password: passwordA };
    const tokenA = await tokenOf(a);
    const tokenB = await tokenOf(b);

    const refused = await b.post(`${auth}/login`, login, fromBrowserOn(b, tokenA));
    assert.equal(refused.status, 419, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'csrf_token_mismatch');
    assert.equal(cookieOf(refused, sessionCookieName), undefined);
    assert.equal((await b.post(`${auth}/login`, login, fromBrowserOn(a, tokenA))).status, 419, 'A’s origin too');

    // Each store's own token passes its own check: the login itself answers.
    const onB = await b.post(`${auth}/login`, login, fromBrowserOn(b, tokenB));
    assert.equal(onB.status, 200, JSON.stringify(onB.body));
    const onA = await a.post(`${auth}/login`, login, fromBrowserOn(a, tokenA));
    assert.equal(onA.status, 200, JSON.stringify(onA.body));
    const bOnA = await a.post(`${auth}/login`, login, fromBrowserOn(a, tokenB));
    assert.equal(bOnA.status, 419, 'and B’s token is refused by A');
  });

  test('a verification code sent by store A does not verify the same email in store B, and still verifies it in A', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    const inA = await registerIn(a);
    const inB = await registerIn(b);
    const codeB = await b.codeFor(email, 'verification');
    const codeA = await codeUnlikeB(t, a, codeB, 'verification', `${auth}/verification/resend`);

    assertInvalidChallenge(await b.post(`${auth}/verify`, { identity: email, code: codeA }));
    assert.equal(await verifiedAt(t, b.id, inB.id), null, 'B’s account is not verified');
    assert.equal(await verifiedAt(t, a.id, inA.id), null, 'nor is A’s, by a code typed elsewhere');

    const ownA = await a.post(`${auth}/verify`, { identity: email, code: codeA });
    assert.equal(ownA.status, 200, JSON.stringify(ownA.body));
    assert.ok(await verifiedAt(t, a.id, inA.id));
    assert.equal(await verifiedAt(t, b.id, inB.id), null, 'verifying in A verifies nothing in B');
    // B's own code was not spent by the stranger's: it still verifies B.
    assert.equal((await b.post(`${auth}/verify`, { identity: email, code: codeB })).status, 200);
    assert.ok(await verifiedAt(t, b.id, inB.id));
  });

  test('a sign-in code sent by store A does not sign the same email in on store B, and still signs in on A', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t, { signInWithCode: true });
    await a.configure({ signInWithCode: true });
    const inA = await registerIn(a);
    const inB = await registerIn(b);
    await verifyIn(a, email);
    await verifyIn(b, email);
    assert.equal((await b.post(`${auth}/code/request`, { identity: email })).status, 202);
    assert.equal((await a.post(`${auth}/code/request`, { identity: email })).status, 202);
    const codeB = await b.codeFor(email, 'sign_in');
    const codeA = await codeUnlikeB(t, a, codeB, 'sign_in', `${auth}/code/request`);

    assertInvalidChallenge(await b.post(`${auth}/code/login`, { identity: email, code: codeA }));
    const ownA = await a.post(`${auth}/code/login`, { identity: email, code: codeA });
    assert.equal(ownA.status, 200, JSON.stringify(ownA.body));
    assert.equal(ownA.body.customer.id, inA.id);
    const ownB = await b.post(`${auth}/code/login`, { identity: email, code: codeB });
    assert.equal(ownB.status, 200, JSON.stringify(ownB.body));
    assert.equal(ownB.body.customer.id, inB.id);
  });

  describe('passkeys', () => {
    /** A verified customer of the store, signed in with the password: the session cookie. */
    async function signedInCustomer(side: StoreSide) {
      const customer = await registerIn(side);
      await verifyIn(side, customer.identity);
      const { session, customerId } = await signedInIn(side, customer.identity, customer.password);
      return { ...customer, id: customerId, session };
    }

    /** Adds a passkey made by the authenticator in the session's store: the 201 answer's body. */
    async function addPasskey(
      side: StoreSide,
      owner: { session: string; password: string },
      authenticator: SoftAuthenticator,
    ) {
      const options = await side.post(
        `${auth}/passkeys/register/options`,
        undefined,
        cookies({ [sessionCookieName]: owner.session }),
      );
      assert.equal(options.status, 200, JSON.stringify(options.body));
      const added = await side.post(
        `${auth}/passkeys/register`,
        { credential: authenticator.register(options.body), current_password: owner.password },
        cookies({ [sessionCookieName]: owner.session, [challengeCookieName]: cookieOf(options, challengeCookieName) }),
      );
      assert.equal(added.status, 201, JSON.stringify(added.body));
      return { rpId: options.body.rp.id as string };
    }

    /** The sign-in ceremony on the side's host, the assertion signed as `origin` says. */
    async function passkeySignIn(side: StoreSide, authenticator: SoftAuthenticator, origin?: string) {
      const options = await side.post(`${auth}/passkeys/login/options`);
      assert.equal(options.status, 200, JSON.stringify(options.body));
      const credential = authenticator.assert(options.body, origin === undefined ? {} : { origin });
      return side.post(
        `${auth}/passkeys/login`,
        { credential },
        cookies({ [challengeCookieName]: cookieOf(options, challengeCookieName) }),
      );
    }

    /** Why the store's passkey sign-ins were refused, as its own audit trail says. */
    async function refusedBecause(t: TestApp, side: StoreSide): Promise<string[]> {
      await t.services.background.drain();
      const rows = await t.db.query<{ reason: string }>(
        `SELECT details->>'reason' AS reason FROM audit_events
          WHERE store_id = $1 AND event = 'login.failed' AND details->>'method' = 'passkey' ORDER BY id`,
        [side.id],
      );
      return rows.map((row) => row.reason);
    }

    test('a passkey registered in store A does not sign in on store B, each store being its own relying party', async () => {
      const t = await harness.start();
      const { a, b } = await twoStores(t, { passkeys: true });
      await a.configure({ passkeys: true });
      const customerA = await signedInCustomer(a);
      await signedInCustomer(b);
      const authenticator = new SoftAuthenticator(hostA, `https://${hostA}`);
      const { rpId } = await addPasskey(a, customerA, authenticator);
      assert.equal(rpId, hostA, 'A’s relying party is its host');

      assertUnauthenticated(await passkeySignIn(b, authenticator));
      assertUnauthenticated(await passkeySignIn(b, authenticator, `https://${hostB}`));
      assert.deepEqual(await refusedBecause(t, b), ['unknown_passkey', 'unknown_passkey']);
      const onA = await passkeySignIn(a, authenticator);
      assert.equal(onA.status, 200, JSON.stringify(onA.body));
      assert.equal(onA.body.customer.id, customerA.id);
    });

    test('a passkey registered in store A does not sign in on store B even when both stores share one relying party', async () => {
      const t = await harness.start();
      const sharedRp = 'shop.test';
      const { a, b } = await twoStores(t, { passkeys: true, webauthnRpId: sharedRp });
      await a.configure({ passkeys: true, webauthnRpId: sharedRp });
      const customerA = await signedInCustomer(a);
      const customerB = await signedInCustomer(b);
      const authenticatorA = new SoftAuthenticator(sharedRp, `https://${hostA}`);
      assert.equal((await addPasskey(a, customerA, authenticatorA)).rpId, sharedRp);

      // A signature B's relying party would accept from a passkey of its own: only the store's
      // own passkeys stand in the way.
      assertUnauthenticated(await passkeySignIn(b, authenticatorA, `https://${hostB}`));
      assert.deepEqual(await refusedBecause(t, b), ['unknown_passkey']);
      // The same ceremony with a passkey registered in B signs in there, so the refusal above was not the RP's.
      const authenticatorB = new SoftAuthenticator(sharedRp, `https://${hostB}`);
      await addPasskey(b, customerB, authenticatorB);
      const onB = await passkeySignIn(b, authenticatorB);
      assert.equal(onB.status, 200, JSON.stringify(onB.body));
      assert.equal(onB.body.customer.id, customerB.id);
      const onA = await passkeySignIn(a, authenticatorA);
      assert.equal(onA.status, 200, JSON.stringify(onA.body));
      assert.equal(onA.body.customer.id, customerA.id);

      // A challenge A handed out is no challenge on B either.
      const optionsA = await a.post(`${auth}/passkeys/login/options`);
      const replayed = await b.post(
        `${auth}/passkeys/login`,
        { credential: authenticatorB.assert(optionsA.body) },
        cookies({ [challengeCookieName]: cookieOf(optionsA, challengeCookieName) }),
      );
      assertUnauthenticated(replayed);
      assert.deepEqual(await refusedBecause(t, b), ['unknown_passkey', 'challenge']);
      assert.deepEqual(await refusedBecause(t, a), []);
    });
  });
});
