import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { createStorefrontAuthClient, StorefrontAuthError } from '../../packages/client/src/index.js';
import { useHarness, registeredCustomer } from '../helpers/harness.js';

describe('the typed client: sessions', () => {
  const harness = useHarness();

  test('lists sessions, revokes another one, signs out the others, and revoking its own signs out', async () => {
    const t = await harness.start();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    // The Origin a browser on the service's own page would send, so the CSRF token is checked.
    const browser = () => createStorefrontAuthClient({ baseUrl, headers: { origin: baseUrl } });
    const ada = await registeredCustomer(t);
    const [first, ...others] = [browser(), browser(), browser(), browser()] as const;
    for (const device of [first, ...others]) await device.login({ identity: ada.identity, password: ada.password });

    const { sessions } = await first.listSessions();
    assert.equal(sessions.length, 4);
    const own = sessions.find((session) => session.current);
    assert.ok(own);
    const other = sessions.find((session) => !session.current)!;
    assert.deepEqual(await first.revokeSession(other.id), { status: 'revoked' });
    assert.equal((await first.listSessions()).sessions.length, 3);

    const missing = await first.revokeSession(other.id).then(
      () => assert.fail('a revoked session cannot be revoked again'),
      (error: unknown) => error,
    );
    assert.ok(missing instanceof StorefrontAuthError);
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'not_found');

    assert.deepEqual(await first.revokeOtherSessions(), { status: 'revoked', count: 2 });
    for (const device of others) {
      await assert.rejects(
        device.session(),
        (error: unknown) => error instanceof StorefrontAuthError && error.status === 401,
      );
    }
    assert.deepEqual(await first.revokeSession(own.id), { status: 'revoked' });
    assert.equal(first.cookies().get('storefront_session') ?? '', '', 'the session cookie is gone');
    await assert.rejects(
      first.listSessions(),
      (error: unknown) => error instanceof StorefrontAuthError && error.status === 401,
    );
  });
});
