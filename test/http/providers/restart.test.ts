import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startOpenIdProvider } from '../../helpers/openid-provider.js';

/**
 * The attack tests restart a provider under the same issuer (a forger's keys, a rotation). Its
 * first call after the restart must reach it: over a kept-alive socket of the provider before, the
 * call failed every time, and a test that made one right after the restart failed at random.
 */
test('a provider restarted on the same port answers the first call made after it', async () => {
  const options = { clients: [], accounts: {} };
  // Read whole, as a client does, so the connection goes back to the pool for the next call.
  const discovery = async (issuer: string) =>
    ((await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { issuer: string }).issuer;
  for (let round = 0; round < 10; round += 1) {
    const first = await startOpenIdProvider(options);
    for (let call = 0; call < 3; call += 1) assert.equal(await discovery(first.issuer), first.issuer);
    await first.close();
    const again = await startOpenIdProvider({ ...options, port: first.port });
    try {
      assert.equal(await discovery(again.issuer), again.issuer);
    } finally {
      await again.close();
    }
  }
});
