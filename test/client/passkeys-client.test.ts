import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createStorefrontAuthClient, StorefrontAuthError } from '../../packages/client/src/index.js';
import { createHarness, registeredCustomer } from '../helpers/harness.js';
import { allowPasskeys } from '../helpers/passkeys.js';
import { SoftAuthenticator } from '../helpers/webauthn.js';

describe('the typed client: passkeys', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  before(async () => {
    harness = await createHarness();
  });
  after(async () => harness.close());

  test('adds a passkey, signs in with it after logging out, lists and removes it', async () => {
    const t = await harness.start();
    await allowPasskeys(t);
    await t.app.listen({ port: 0, host: 'localhost' });
    // The service's own origin on the default RP ID (localhost), as a browser on its page sends it.
    const baseUrl = `http://localhost:${(t.app.server.address() as AddressInfo).port}`;
    const client = createStorefrontAuthClient({ baseUrl, headers: { origin: baseUrl } });
    const authenticator = new SoftAuthenticator('localhost', baseUrl);
    const ada = await registeredCustomer(t);
    // Only an account whose identity is proven may add a passkey.
    await client.verify({ identity: ada.identity, code: await t.codeFor(ada.identity, 'verification') });
    await client.login({ identity: ada.identity, password: ada.password });

    const creation = await client.passkeyRegistrationOptions();
    const passkey = await client.registerPasskey({
      credential: authenticator.register(creation) as never,
      name: 'Phone',
      current_password: ada.password,
    });
    assert.equal(passkey.name, 'Phone');
    assert.deepEqual(
      (await client.listPasskeys()).passkeys.map((p) => p.id),
      [passkey.id],
    );
    await client.logout();

    const request = await client.passkeyLoginOptions();
    const signedIn = await client.loginWithPasskey({ credential: authenticator.assert(request) as never });
    assert.equal(signedIn.customer.id, ada.id);
    assert.equal((await client.session()).customer.id, ada.id);

    assert.deepEqual(await client.removePasskey(passkey.id), { status: 'deleted' });
    const again = await client.passkeyLoginOptions();
    const refused = await client.loginWithPasskey({ credential: authenticator.assert(again) as never }).then(
      () => assert.fail('a removed passkey cannot sign in'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof StorefrontAuthError);
    assert.equal(refused.status, 401);
    assert.equal(refused.code, 'unauthenticated');
  });
});
