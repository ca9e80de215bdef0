import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { updateStore, type StoreChanges } from '../../../src/store/store.js';
import { auth, registration, useHarness, type TestApp } from '../../helpers/harness.js';
import { assertFieldError } from '../../helpers/assertions.js';

const phoneStore = { STORE_IDENTITY_MODE: 'phone', STORE_VERIFICATION_REQUIRED: 'false' };
// +447911… is Guernsey's (GG) by the numbering plan, not Great Britain's.
const british = '+447400123456';
const american = '+14155550123';
const french = '+33612345678';

async function configure(t: TestApp, changes: StoreChanges): Promise<void> {
  const result = await updateStore(t.db, t.clock, changes);
  assert.ok(result.ok, JSON.stringify(result));
  t.services.store.invalidate();
}

function register(t: TestApp, phone: string) {
  return t.post(`${auth}/register`, registration({ email: undefined, phone }));
}

async function sentTo(t: TestApp): Promise<string[]> {
  return (await t.deliver()).map((message) => message.to);
}

describe('phone countries', () => {
  const harness = useHarness();

  test('a phone store limited to some countries refuses other numbers at registration with a 422 on phone', async () => {
    const t = await harness.start({ env: phoneStore });
    await configure(t, { phoneCountries: ['GB'] });
    const refused = await register(t, american);
    assert.equal(refused.status, 422);
    assertFieldError(refused, 'phone');
    assert.equal((await register(t, british)).status, 201);
  });

  test('a number outside the countries gets 202 and no message on resend, forgot and code request', async () => {
    const t = await harness.start({ env: phoneStore });
    await configure(t, { signInWithCode: true });
    // Registered before the store was limited: an account exists, yet nothing may go to it.
    assert.equal((await register(t, american)).status, 201);
    assert.equal((await register(t, british)).status, 201);
    await t.deliver();
    await configure(t, { phoneCountries: ['GB'] });
    for (const path of ['/verification/resend', '/password/forgot', '/code/request']) {
      const outside = await t.post(`${auth}${path}`, { identity: american });
      assert.equal(outside.status, 202, path);
      assert.deepEqual(await sentTo(t), [], `${path} sends nothing to a number outside the countries`);
      const inside = await t.post(`${auth}${path}`, { identity: british });
      assert.equal(inside.status, 202, path);
      assert.deepEqual(await sentTo(t), [british], path);
    }
    const rows = await t.db.query('SELECT purpose FROM outbox WHERE recipient = $1', [american]);
    assert.equal(rows.length, 1, "nothing queued for it but its registration's code");
  });

  test('a message queued before the store left a country is dropped, not sent', async () => {
    const t = await harness.start({ env: phoneStore });
    assert.equal((await register(t, american)).status, 201);
    await configure(t, { phoneCountries: ['GB'] });
    assert.deepEqual(await sentTo(t), []);
    const [row] = await t.db.query<{ status: string }>('SELECT status FROM outbox WHERE recipient = $1', [american]);
    assert.equal(row?.status, 'dropped');
  });

  test('the per-country hourly budget holds back one country and lets the others through', async () => {
    const t = await harness.start({ env: { ...phoneStore, DELIVERY_SMS_BUDGET_PER_COUNTRY_PER_HOUR: '2' } });
    const britons = ['+447400123456', '+447400123457', '+447400123458'];
    // Each registration queues a verification code.
    for (const phone of [...britons, french]) assert.equal((await register(t, phone)).status, 201);
    const first = await sentTo(t);
    assert.deepEqual(first.sort(), [britons[0], britons[1], french].sort(), 'two to +44, and France beside them');
    const waiting = await t.db.query<{ recipient: string }>("SELECT recipient FROM outbox WHERE status = 'pending'");
    assert.deepEqual(
      waiting.map((row) => row.recipient),
      [britons[2]],
    );
    assert.deepEqual(await sentTo(t), [], 'still waiting on the next pass');
  });
});
