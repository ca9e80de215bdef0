import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createStorefrontAuthClient, StorefrontAuthError } from '../../src/client/index.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

describe('the typed client on the account routes', () => {
  let dataDir: string;
  let service: ServiceProcess;
  // The Origin a browser on the service's own page would send, so the CSRF token is checked.
  const clientFor = () =>
    createStorefrontAuthClient({ baseUrl: service.url, headers: { origin: new URL(service.url).origin } });

  before(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'sfa-account-client-'));
    service = await startService({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
  });

  after(async () => {
    assert.equal(await service?.stop(), 0, 'the service stops cleanly');
    await fs.rm(dataDir, { recursive: true, force: true });
  });

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
