import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createStorefrontAuthClient, StorefrontAuthError } from '../../packages/client/src/index.js';
import { updateStore } from '../../src/store/store.js';
import { createHarness, registeredCustomer } from '../helpers/harness.js';
import { stepOf, totpAt } from '../helpers/totp.js';

describe('the typed client: a second step', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  before(async () => {
    harness = await createHarness();
  });
  after(async () => harness.close());

  test('sets one up, then a login answers two_factor_required and verifySecondStep opens the session', async () => {
    const t = await harness.start();
    assert.ok((await updateStore(t.db, t.clock, { twoFactor: 'optional' })).ok);
    t.services.store.invalidate();
    await t.app.listen({ port: 0, host: 'localhost' });
    const baseUrl = `http://localhost:${(t.app.server.address() as AddressInfo).port}`;
    const client = createStorefrontAuthClient({ baseUrl, headers: { origin: baseUrl } });
    const ada = await registeredCustomer(t);
    await client.verify({ identity: ada.identity, code: await t.codeFor(ada.identity, 'verification') });
    const first = await client.login({ identity: ada.identity, password: ada.password });
    assert.equal(first.auth_type, 'session');

    const setup = await client.setUpTwoFactor({ current_password: ada.password });
    const step = stepOf(t.clock.now());
    const { recovery_codes } = await client.confirmTwoFactor({ code: totpAt(setup.secret, step) });
    assert.equal(recovery_codes.length, 10);
    assert.deepEqual(await client.twoFactorStatus(), { status: 'on', recovery_codes_left: 10, store: 'optional' });
    await client.logout();

    const asked = await client.login({ identity: ada.identity, password: ada.password });
    assert.deepEqual(asked, { auth_type: 'two_factor_required', methods: ['totp', 'recovery_code'] });
    const refused = await client.session().then(
      () => assert.fail('a session opened before the second step'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof StorefrontAuthError && refused.code === 'unauthenticated');
    const wrong = await client.verifySecondStep({ code: totpAt(setup.secret, step) }).then(
      () => assert.fail('a spent step was taken again'),
      (error: unknown) => error,
    );
    assert.ok(wrong instanceof StorefrontAuthError && wrong.code === 'validation_failed');
    const signedIn = await client.verifySecondStep({ code: totpAt(setup.secret, step + 1) });
    assert.equal(signedIn.customer.id, ada.id);
    assert.equal((await client.session()).customer.id, ada.id);

    const renewed = await client.renewRecoveryCodes({ current_password: ada.password, code: recovery_codes[0]! });
    assert.equal(renewed.recovery_codes.length, 10);
    assert.deepEqual(
      await client.disableTwoFactor({ current_password: ada.password, code: renewed.recovery_codes[0]! }),
      {
        status: 'off',
      },
    );
  });
});
