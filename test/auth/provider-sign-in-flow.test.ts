import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { linkProvider, signInWithProvider } from '../../src/auth/flows/provider-sign-in.js';
import { proveControl } from '../../src/auth/rules/ownership.js';
import { insertProviderLink, listProviderLinks } from '../../src/auth/tables/provider-links.js';
import { lockCustomer } from '../../src/auth/tables/customers.js';
import { domainOf } from '../helpers/domain.js';
import { registeredCustomer, useHarness } from '../helpers/harness.js';

/**
 * The provider flows' guards that no HTTP walk reaches: an unproven account never holds a link
 * (every way of adding one refuses it first), so these put one there, or call the flow, directly.
 */

const identity = {
  providerId: 'google',
  issuer: 'https://accounts.google.com',
  subject: 'sub-1',
  email: 'someone@example.com',
  emailVerified: true,
  name: null,
};

describe('the provider flows’ guards', () => {
  const harness = useHarness();

  test('the first proof of control removes a link that an unproven account somehow held', async () => {
    const t = await harness.start();
    const { deps } = domainOf(t);
    const claimant = await registeredCustomer(t, { email: 'ada@example.com' });
    await insertProviderLink(deps.db, t.clock, { ...identity, customerId: claimant.id });
    await deps.db.transaction(async (tx) => {
      const row = await lockCustomer(tx, { id: claimant.id });
      await proveControl(tx, t.clock, row!, { retiresPassword: false });
    });
    assert.deepEqual(await listProviderLinks(deps.db, claimant.id), []);
    await t.close();
  });

  test('a new account made by a provider records the language the browser asked for, as a registration does', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const signedIn = await signInWithProvider(domain.deps, await domain.attempt(), identity, 'ar');
    assert.ok(
      signedIn.ok && signedIn.value.match === 'created' && 'customer' in signedIn.value,
      JSON.stringify(signedIn),
    );
    const [row] = await t.db.query<{ locale: string | null }>('SELECT locale FROM customers WHERE id = $1', [
      signedIn.value.customer.id,
    ]);
    assert.equal(row?.locale, 'ar');
    await t.close();
  });

  test('linking to an account that is unproven when the provider answers links nothing', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const claimant = await registeredCustomer(t, { email: 'ada@example.com' });
    const linked = await linkProvider(domain.deps, await domain.store(), claimant.id, identity);
    assert.deepEqual(linked, { ok: false, error: 'identity_unverified' });
    assert.deepEqual(await listProviderLinks(domain.deps.db, claimant.id), []);
    await t.close();
  });
});
