import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { register } from '../../src/auth/flows/registration.js';
import { verifyIdentity } from '../../src/auth/flows/verification.js';
import { otherThan } from '../helpers/assertions.js';
import { verifiedAt } from '../helpers/customers.js';
import { domainOf, email } from '../helpers/domain.js';
import { registration, useHarness } from '../helpers/harness.js';

/** Registration and verification as domain calls on a real database, without the HTTP edge. */
describe('the registration and verification flows', () => {
  const harness = useHarness();

  test('register creates an unverified customer with the normalized identity and queues a verification code', async () => {
    const t = await harness.start();
    const { deps, store } = domainOf(t);
    const result = await register(deps, await store(), registration({ email: '  Ada@Example.com ' }));
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.value.identity, { type: 'email', value: 'ada@example.com', verified_at: null });
    assert.equal(await verifiedAt(t, result.value.id), null);
    assert.match(await t.codeFor('ada@example.com', 'verification'), /^\d{6}$/);
  });

  test('register refuses an identity that is taken, in any case, and writes no second customer', async () => {
    const t = await harness.start();
    const { deps, store } = domainOf(t);
    assert.ok((await register(deps, await store(), registration())).ok);
    const again = await register(deps, await store(), registration({ email: 'ADA@example.com' }));
    assert.deepEqual(again, { ok: false, error: 'identity_unavailable' });
    const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers');
    assert.equal(row?.n, 1);
  });

  test('register names every invalid field and writes nothing', async () => {
    const t = await harness.start();
    const { deps, store } = domainOf(t);
    const result = await register(
      deps,
      await store(),
      registration({ name: ' ', email: 'not an email', password_confirmation: 'something else' }),
    );
    assert.ok(!result.ok && result.error === 'invalid', JSON.stringify(result));
    assert.deepEqual(Object.keys(result.fields).sort(), ['email', 'name', 'password_confirmation']);
    assert.deepEqual(await t.deliver(), []);
  });

  test('verifyIdentity marks the customer verified with the live code only, once', async () => {
    const t = await harness.start();
    const { deps, store } = domainOf(t);
    const registered = await register(deps, await store(), registration());
    assert.ok(registered.ok);
    const code = await t.codeFor('ada@example.com', 'verification');

    const refused = { ok: false, error: 'invalid_challenge' };
    assert.deepEqual(await verifyIdentity(deps, email('ada@example.com'), otherThan(code)), refused);
    assert.equal(await verifiedAt(t, registered.value.id), null);
    t.clock.advance(60);
    const verified = await verifyIdentity(deps, email('ada@example.com'), code);
    assert.ok(verified.ok, JSON.stringify(verified));
    assert.equal(verified.value.identity.verified_at, t.clock.now().toISOString());
    assert.deepEqual(await verifyIdentity(deps, email('ada@example.com'), code), refused, 'a code is spent once');
  });

  test('verifyIdentity answers an unknown identity as it answers a wrong code', async () => {
    const t = await harness.start();
    const { deps } = domainOf(t);
    const refused = { ok: false, error: 'invalid_challenge' };
    assert.deepEqual(await verifyIdentity(deps, email('nobody@example.com'), '123456'), refused);
    assert.deepEqual(await verifyIdentity(deps, email('not an email'), '123456'), refused);
  });
});
