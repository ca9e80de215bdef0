import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuditEntry } from '../../src/audit.js';
import type { Actor, PlatformDeps } from '../../src/platform/actor.js';
import { addProvider, deleteProvider } from '../../src/platform/providers.js';
import { changeHost, changeStore, createStore, deleteStore } from '../../src/platform/stores.js';
import { findStoreNamed } from '../../src/store/store.js';
import { useHarness, type TestApp } from '../helpers/harness.js';

/**
 * The platform's operations on stores, without HTTP or the command line: each records itself under
 * its actor and is announced, and each refusal is a value carrying what its caller needs to say.
 */

const staff: Actor = { by: 'admin', token: 'token-1', clientAddress: '203.0.113.9', requestId: 'request-1' };
const operator: Actor = { by: 'operator' };

function platformOf(t: TestApp, config: PlatformDeps['config'] = t.services.config) {
  const entries: AuditEntry[] = [];
  let announced = 0;
  const deps: PlatformDeps = {
    db: t.db,
    clock: t.clock,
    config,
    audit: (entry) => entries.push(entry),
    announce: async () => {
      announced += 1;
    },
  };
  return { deps, entries, announced: () => announced };
}

const newStore = { slug: 'north', name: 'North', identityMode: 'email' as const, hosts: ['north.shop.test'] };

describe('platform operations on stores', () => {
  const harness = useHarness();

  test('each operation records itself under its actor, and is announced', async () => {
    const t = await harness.start();
    const { deps, entries, announced } = platformOf(t);

    const made = await createStore(deps, staff, newStore);
    assert.ok(made.ok && !made.value.replayed);
    const store = made.value.store;
    // The deployment's first store had no host: it answered everywhere and now answers nowhere.
    assert.equal(made.value.unhosted, 'default');
    assert.deepEqual(entries[0], {
      storeId: store.id,
      event: 'store.created',
      customerId: null,
      clientAddress: '203.0.113.9',
      requestId: 'request-1',
      details: { by: 'admin', token: 'token-1', slug: 'north' },
    });

    const changed = await changeStore(deps, operator, store, { name: 'North Shop' });
    assert.ok(changed.ok);
    assert.equal(changed.value.store.name, 'North Shop');
    assert.deepEqual(entries[1]?.details, { by: 'operator', fields: 'name' });
    assert.equal(entries[1]?.clientAddress, null);

    assert.ok((await changeHost(deps, operator, store, { add: 'north2.shop.test' })).ok);
    assert.ok((await changeHost(deps, operator, store, { remove: 'north2.shop.test', force: false })).ok);
    const provider = { id: 'acme', issuer: 'https://id.acme.test', client_id: 'shop', client_secret: 'secret-1' };
    const added = await addProvider({ ...deps, keys: t.services.keys! }, operator, store, provider);
    assert.ok(added.ok && added.value.outcome === 'added');
    assert.ok((await deleteProvider(deps, operator, store, 'acme')).ok);
    assert.deepEqual(
      entries.slice(2).map((entry) => entry.details),
      [
        { by: 'operator', host_added: 'north2.shop.test' },
        { by: 'operator', host_removed: 'north2.shop.test' },
        { by: 'operator', provider_added: 'acme' },
        { by: 'operator', provider_removed: 'acme' },
      ],
    );
    assert.equal(announced(), 6);

    // A deleted store's trail is erased with it: its deletion is announced, not recorded.
    assert.ok((await deleteStore(deps, store)).ok);
    assert.equal(entries.length, 6);
    assert.equal(announced(), 7);
    assert.equal(await findStoreNamed(t.db, 'north'), null);
    const again = await deleteStore(deps, store);
    assert.ok(!again.ok && again.error === 'no_store');
  });

  test('a refusal carries its facts, and changes, records and announces nothing', async () => {
    const t = await harness.start();
    const { deps, entries, announced } = platformOf(t);
    const first = await createStore(deps, operator, newStore);
    assert.ok(first.ok && !first.value.replayed);
    const store = first.value.store;
    const count = entries.length;

    const slugTaken = await createStore(deps, operator, { ...newStore, hosts: [] });
    assert.ok(!slugTaken.ok && slugTaken.error === 'slug_taken');

    const hostTaken = await createStore(deps, operator, { ...newStore, slug: 'south' });
    assert.ok(!hostTaken.ok && hostTaken.error === 'host_taken');
    assert.deepEqual(hostTaken.taken, { host: 'north.shop.test', owner: 'north' });

    const noHost = await changeHost(deps, operator, store, { remove: 'nowhere.shop.test', force: false });
    assert.ok(!noHost.ok && noHost.error === 'no_such_host');
    assert.equal(noHost.host, 'nowhere.shop.test');

    const language = await changeStore(deps, operator, store, { languages: { defaultLanguage: 'ar' } });
    assert.ok(!language.ok && language.error === 'default_language_not_spoken');
    assert.deepEqual(language.languages?.languages, ['en']);

    const noTransport = await createStore(
      platformOf(t, { ...t.services.config, deliveryLogAllowed: false }).deps,
      operator,
      { ...newStore, slug: 'west', hosts: [] },
    );
    assert.ok(!noTransport.ok && noTransport.error === 'no_transport');
    assert.equal(noTransport.transport?.variable, 'SMTP_URL');
    assert.equal(await findStoreNamed(t.db, 'west'), null);

    const phone = await createStore(deps, operator, { ...newStore, slug: 'east', identityMode: 'phone', hosts: [] });
    assert.ok(phone.ok && !phone.value.replayed);
    const refusedProvider = await addProvider({ ...deps, keys: t.services.keys! }, operator, phone.value.store, {
      id: 'acme',
      issuer: 'https://id.acme.test',
      client_id: 'shop',
      client_secret: 'secret-1',
    });
    assert.ok(!refusedProvider.ok && refusedProvider.error === 'phone_store');
    const badProvider = await addProvider({ ...deps, keys: t.services.keys! }, operator, store, {
      id: 'Not An Id',
      issuer: 'ftp://id.acme.test',
      client_id: 'shop',
    });
    assert.ok(!badProvider.ok && badProvider.error === 'provider_invalid');
    assert.ok(badProvider.errors?.id && badProvider.errors.issuer);

    // Only the phone store was made among all of these.
    assert.equal(entries.length, count + 1);
    assert.equal(announced(), count + 1);
  });

  test('with an idempotency key a retry gets the kept answer and makes nothing; another call with the key is refused', async () => {
    const t = await harness.start();
    const { deps, entries } = platformOf(t);
    const answer = ({ store }: { store: { id: string } }) => ({ status: 201, body: { id: store.id } });
    const once = { key: 'signup-41', hash: 'hash-a', answer };

    const made = await createStore(deps, staff, newStore, once);
    assert.ok(made.ok && !made.value.replayed);
    const retry = await createStore(deps, staff, newStore, once);
    assert.ok(retry.ok && retry.value.replayed);
    assert.deepEqual(retry.value.kept.body, { id: made.value.store.id });
    assert.equal(entries.length, 1);

    const other = await createStore(
      deps,
      staff,
      { ...newStore, slug: 'other', hosts: [] },
      { ...once, hash: 'hash-b' },
    );
    assert.ok(!other.ok && other.error === 'idempotency_key_reused');
    assert.equal(await findStoreNamed(t.db, 'other'), null);

    // A refusal under a key rolls the key back with the work: a later call with it is tried afresh.
    const taken = { key: 'signup-42', hash: 'hash-c', answer };
    const refused = await createStore(deps, staff, { ...newStore, slug: 'north-2' }, taken);
    assert.ok(!refused.ok && refused.error === 'host_taken');
    const fresh = await createStore(deps, staff, { ...newStore, slug: 'north-2', hosts: [] }, taken);
    assert.ok(fresh.ok && !fresh.value.replayed);
  });
});
