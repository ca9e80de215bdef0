import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StorefrontAuthError } from '../../packages/client/src/index.js';
import { useClientService } from '../helpers/client-service.js';
import { waitForCode } from './service-codes.js';

describe('the typed client changing the identity', () => {
  const running = useClientService('sfa-identity-client-');
  const clientFor = () => running.clientFor();

  test('asks for the change, confirms it with the code sent to the new address, and stays signed in', async () => {
    const client = clientFor();
    const password = 'analytical engine 1843';
    await client.register({ name: 'Ada', email: 'ada@example.com', password, password_confirmation: password });
    await client.login({ identity: 'ada@example.com', password });

    const from = running.service.logs.length;
    assert.deepEqual(await client.changeIdentity({ email: 'ada@example.net', current_password: password }), {
      status: 'accepted',
    });
    const code = await waitForCode(running.service, 'ada@example.net', 'identity_change', { from });
    const wrong = await client.confirmIdentity({ code: code === '000000' ? '000001' : '000000' }).then(
      () => assert.fail('a wrong code was accepted'),
      (error: unknown) => error,
    );
    assert.ok(wrong instanceof StorefrontAuthError);
    assert.equal(wrong.code, 'invalid_identity_challenge');

    const customer = await client.confirmIdentity({ code });
    assert.equal(customer.identity.value, 'ada@example.net');
    assert.notEqual(customer.identity.verified_at, null);
    assert.equal((await client.session()).customer.identity.value, 'ada@example.net');
  });
});
