import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StorefrontAuthError } from '../../packages/client/src/index.js';
import { useClientService } from '../helpers/client-service.js';

describe('the typed client on the account routes', () => {
  const running = useClientService('sfa-account-client-');
  const clientFor = () => running.clientFor();

  test('changes the name and the password, keeping its own session under a new cookie and token', async () => {
    const client = clientFor();
    const password = 'analytical engine 1843';
    const newPassword = 'difference engine 1822';
    await client.register({ name: 'Ada', email: 'ada@example.com', password, password_confirmation: password });
    await client.login({ identity: 'ada@example.com', password });
    const elsewhere = clientFor();
    await elsewhere.login({ identity: 'ada@example.com', password });

    const renamed = await client.changeProfile({ name: 'Ada Lovelace' });
    assert.equal(renamed.name, 'Ada Lovelace');

    const wrong = await client
      .changePassword({ current_password: 'not it 123', password: newPassword, password_confirmation: newPassword })
      .then(
        () => assert.fail('a wrong current password was accepted'),
        (error: unknown) => error,
      );
    assert.ok(wrong instanceof StorefrontAuthError);
    assert.equal(wrong.code, 'validation_failed');
    assert.deepEqual(wrong.errors, { current_password: ['Is not correct.'] });

    const before = client.cookies();
    assert.deepEqual(
      await client.changePassword({
        current_password: password,
        password: newPassword,
        password_confirmation: newPassword,
      }),
      { status: 'password_changed' },
    );
    const after = client.cookies();
    assert.notEqual(after.get('storefront_session'), before.get('storefront_session'));
    assert.notEqual(after.get('XSRF-TOKEN'), before.get('XSRF-TOKEN'));
    assert.equal((await client.session()).customer.name, 'Ada Lovelace', 'the client stays signed in');
    // A POST with the new token passes the CSRF check at once.
    assert.equal((await client.changeProfile({ name: 'Ada King' })).name, 'Ada King');

    const signedOut = await elsewhere.session().then(
      () => assert.fail('the other device is still signed in'),
      (error: unknown) => error,
    );
    assert.ok(signedOut instanceof StorefrontAuthError);
    assert.equal(signedOut.code, 'unauthenticated');
  });
});
