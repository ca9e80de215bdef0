import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createHarness, type Reply } from '../../helpers/harness.js';
import { assertFieldError } from '../../helpers/assertions.js';
import {
  addPasskey,
  allowPasskeys,
  cookieOf,
  count,
  sessionCookieName,
  signedInCustomer,
  signInWithPasskey,
} from '../../helpers/passkeys.js';
import { SoftAuthenticator } from '../../helpers/webauthn.js';

/**
 * Credential ids at WebAuthn's limit and past it. WebAuthn caps a credential id at 1,023 bytes
 * (1,364 base64url characters); a longer one is no passkey, and is refused as a malformed body
 * before it reaches the database, whose unique index refuses rows over about 2.7 KB.
 */

const mostBytes = 1023;

function authenticatorWithIdOf(bytes: number): SoftAuthenticator {
  return new SoftAuthenticator('localhost', 'http://localhost', true, bytes);
}

function assertMalformedCredential(reply: Reply, where: string): void {
  assert.notEqual(reply.status, 500, `${where}: ${JSON.stringify(reply.body)}`);
  assertFieldError(reply, 'credential');
  assert.equal(cookieOf(reply, sessionCookieName), undefined, `${where}: no session`);
}

describe('passkey credential ids', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  before(async () => {
    harness = await createHarness();
  });
  after(async () => harness.close());

  test('a credential id of 1,023 bytes, the most WebAuthn allows, registers and signs in', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    const authenticator = authenticatorWithIdOf(mostBytes);
    assert.equal(authenticator.id.length, 1364);
    const added = await addPasskey(t, customer, authenticator);
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const signedIn = await signInWithPasskey(t, authenticator);
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
  });

  test('registering a credential id over 1,023 bytes answers 422 on credential, never 500, and keeps nothing', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    await t.deliver();
    // Just past the limit, 1,400 characters, and 2,800: past what the unique index can hold.
    for (const bytes of [mostBytes + 1, 1050, 2100]) {
      assertMalformedCredential(await addPasskey(t, customer, authenticatorWithIdOf(bytes)), `${bytes} bytes`);
    }
    assert.equal(await count(t, 'passkeys'), 0);
    assert.deepEqual(
      (await t.deliver()).filter((m) => m.purpose === 'passkey_added'),
      [],
      'nothing is announced',
    );
  });

  test('an attested credential id over 1,023 bytes behind a short reported one answers 422 on credential, never 500', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    const customer = await signedInCustomer(t);
    // The id kept is the one in the signed authenticator data, not the one the JSON reports.
    const reportedId = authenticatorWithIdOf(16).id;
    for (const bytes of [mostBytes + 1, 2100]) {
      const reply = await addPasskey(t, customer, authenticatorWithIdOf(bytes), { reportedId });
      assertMalformedCredential(reply, `${bytes} bytes attested`);
    }
    assert.equal(await count(t, 'passkeys'), 0);
  });

  test('signing in with a credential id over 1,023 bytes answers 422 on credential, never 500, and opens no session', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    await signedInCustomer(t);
    const sessions = await count(t, 'sessions');
    for (const bytes of [mostBytes + 1, 2100]) {
      assertMalformedCredential(await signInWithPasskey(t, authenticatorWithIdOf(bytes)), `${bytes} bytes`);
    }
    assert.equal(await count(t, 'sessions'), sessions);
  });
});
