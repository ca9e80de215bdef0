import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { auth, useHarness, registration, toReply, type Reply } from '../helpers/harness.js';

/** What a client sees of a registration, with the parts that name the customer blanked out. */
function answerShape(reply: Reply) {
  const headers = Object.entries(reply.headers)
    .filter(([name]) => !['date', 'x-request-id'].includes(name))
    .sort(([a], [b]) => a.localeCompare(b));
  const body = { ...reply.body, id: typeof reply.body.id, identity: { ...reply.body.identity, value: '…' } };
  return { status: reply.status, headers, body };
}

describe('brakes on paid channels', () => {
  const harness = useHarness();

  test('past the hourly budget messages wait in the outbox, answers stay the same, and they go out when the hour has passed', async () => {
    const t = await harness.start({ env: { DELIVERY_BUDGET_PER_HOUR: '2' } });
    // Each from its own address, so the per-address limit headers start alike.
    let address = 0;
    const register = async (name: string) => {
      address += 1;
      const reply = toReply(
        await t.app.inject({
          method: 'POST',
          url: `${auth}/register`,
          remoteAddress: `10.60.0.${address}`,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(registration({ email: `${name}@example.com` })),
        }),
      );
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      return reply;
    };
    await register('a');
    const withinBudget = await register('b');
    assert.equal((await t.deliver()).length, 2, 'two messages fit the budget');
    t.clock.advance(55 * 60);
    const pastBudget = await register('c');
    assert.equal((await t.deliver()).length, 0, 'the third waits');
    assert.deepEqual(answerShape(pastBudget), answerShape(withinBudget), 'status, headers and body alike');
    const waiting = await t.db.query<{ status: string }>("SELECT status FROM outbox WHERE status = 'pending'");
    assert.equal(waiting.length, 1);
    assert.ok(
      t.logs.some((line) => line['level'] === 50 && String(line['msg']).includes('budget')),
      'an error is logged',
    );

    t.clock.advance(5 * 60 + 1);
    const late = await t.deliver();
    assert.deepEqual(
      late.map((message) => message.to),
      ['c@example.com'],
      'it goes out once the first two are an hour old',
    );
  });

  test('a phone store limited to some country calling codes refuses other numbers at registration with a 422 on phone', async () => {
    const t = await harness.start({ env: { STORE_IDENTITY_MODE: 'phone', SMS_ALLOWED_COUNTRY_CODES: '44, +33' } });
    const body = (phone: string) => registration({ email: undefined, phone });
    const refused = await t.post(`${auth}/register`, body('+1 415 555 0123'));
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'validation_failed');
    assert.ok(refused.body.errors.phone.length > 0);
    assert.equal((await t.post(`${auth}/register`, body('+44 7911 123456'))).status, 201);
    assert.equal((await t.post(`${auth}/register`, body('+33 6 12 34 56 78'))).status, 201);
  });
});
