import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createStorefrontAuthClient, StorefrontAuthError } from '../../src/client/index.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { waitForCode } from './service-codes.js';

describe('the typed client changing the identity', () => {
  let dataDir: string;
  let service: ServiceProcess;
  // The Origin a browser on the service's own page would send, so the CSRF token is checked.
  const clientFor = () =>
    createStorefrontAuthClient({ baseUrl: service.url, headers: { origin: new URL(service.url).origin } });

  before(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'sfa-identity-client-'));
    service = await startService({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
  });

  after(async () => {
    assert.equal(await service?.stop(), 0, 'the service stops cleanly');
    await fs.rm(dataDir, { recursive: true, force: true });
  });

  test('asks for the change, confirms it with the code sent to the new address, and stays signed in', async () => {
    const client = clientFor();
    const password = 'analytical engine 1843';
    await client.register({ name: 'Ada', email: 'ada@example.com', password, password_confirmation: password });
    await client.login({ identity: 'ada@example.com', password });

    const from = service.logs.length;
    assert.deepEqual(await client.changeIdentity({ email: 'ada@example.net', current_password: password }), {
      status: 'accepted',
    });
    const code = await waitForCode(service, 'ada@example.net', 'identity_change', { from });
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
