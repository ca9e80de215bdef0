import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Channel, MessagePurpose, OutgoingMessage } from '../../src/delivery/message.js';
import { enqueueMessage, type NewMessage } from '../../src/delivery/outbox.js';
import { auth, registration, useHarness, type TestApp } from '../helpers/harness.js';
import { defaultStore } from '../helpers/database.js';

/**
 * No message in the built-in words carries text that a customer, or anyone else, chose: a name is
 * whatever the person who registered typed (maybe a squatter on someone else's address, or a thief
 * who renamed the account), and a passkey's name whatever its adder typed. Messages go to the
 * address's owner and name only the store, the code, the time, the device family and masked
 * addresses. (A store's own template may show a proven customer's name: admin/templates.test.ts.)
 */

const hostileName = 'Mallory. This was you: to undo it, visit https://evil.example/undo';
const hostilePasskey = 'iPhone". Not you? Remove it at https://evil.example/remove';
/** Each is enough to tell the chosen text came through, in plain text or escaped in HTML. */
const chosenFragments = ['Mallory', 'evil.example', 'iPhone', 'Not you?'];

const storeName = 'Corner Shop';

/** What each message needs besides the chosen text, at `now`. */
const purposes: Record<MessagePurpose, (now: Date) => Partial<NewMessage>> = {
  verification: (now) => ({ code: codeAt(now) }),
  password_reset: (now) => ({ code: codeAt(now) }),
  invitation: (now) => ({ code: { value: '482913', expiresAt: new Date(now.getTime() + 7 * 24 * 3600_000) } }),
  sign_in: (now) => ({ code: codeAt(now) }),
  identity_change: (now) => ({ code: codeAt(now) }),
  password_changed: () => ({ signedOut: 'other_devices' }),
  account_deleted: () => ({}),
  new_sign_in: (now) => ({ signIn: { at: now, device: 'Chrome on macOS', address: '203.0.113.0/24' } }),
  identity_taken: () => ({}),
  identity_changed: () => ({ maskedIdentity: 'a•••@example.org' }),
  passkey_added: () => ({}),
  provider_linked: () => ({}),
  two_factor_on: () => ({}),
  two_factor_off: () => ({}),
  recovery_code_used: () => ({}),
};

function codeAt(now: Date): NewMessage['code'] {
  return { value: '482913', expiresAt: new Date(now.getTime() + 10 * 60_000) };
}

function assertNoChosenText(message: OutgoingMessage, where: string): void {
  const { subject, text, html } = message.content;
  for (const [part, content] of Object.entries({ subject, text, html })) {
    for (const fragment of chosenFragments) {
      assert.ok(!content.includes(fragment), `${where} ${part} carries "${fragment}": ${content}`);
    }
  }
}

/** Queues the message with a hostile name and passkey name, sends it and returns it. */
async function sendWithChosenText(t: TestApp, channel: Channel, purpose: MessagePurpose): Promise<OutgoingMessage> {
  // Spread in, as a caller might still hand them over: the outbox must not let them through.
  const chosen: Record<string, string> = { customerName: hostileName, passkeyName: hostilePasskey };
  await enqueueMessage(
    defaultStore(t.db),
    { clock: t.clock, keys: t.services.keys },
    {
      channel,
      purpose,
      to: channel === 'email' ? 'ada@example.com' : '+14155550123',
      customerId: null,
      storeName,
      language: 'en',
      ...chosen,
      ...purposes[purpose](t.clock.now()),
    },
  );
  const sent = await t.deliver();
  assert.deepEqual(
    sent.map((message) => message.purpose),
    [purpose],
  );
  return sent[0]!;
}

describe('text someone chose, in messages', () => {
  const harness = useHarness();

  for (const channel of ['email', 'sms'] as const) {
    test(`no ${channel} message carries a customer's name or a passkey's name, in subject or body`, async () => {
      const t = await harness.start();
      for (const purpose of Object.keys(purposes) as MessagePurpose[]) {
        const message = await sendWithChosenText(t, channel, purpose);
        assertNoChosenText(message, `${channel} ${purpose}`);
        assert.ok(message.content.text.includes(storeName), `${channel} ${purpose} names the store`);
      }
    });
  }

  test("a name typed at registration is not in the verification code's email to the address", async () => {
    const t = await harness.start({ env: { STORE_NAME: storeName } });
    const reply = await t.post(`${auth}/register`, registration({ name: hostileName }));
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    const sent = await t.deliver();
    assert.deepEqual(
      sent.map((message) => message.purpose),
      ['verification'],
    );
    const message = sent[0]!;
    assertNoChosenText(message, 'verification');
    assert.match(message.content.text, /Your Corner Shop verification code is \d{6}\./);
  });
});
