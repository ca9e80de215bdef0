import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  finishProviderCallback,
  type HeldProviderStart,
  type ProviderCallback,
  type ProviderCallbackDeps,
} from '../../src/auth/flows/provider-sign-in.js';
import { insertCustomer } from '../../src/auth/tables/customers.js';
import { listProviderLinks } from '../../src/auth/tables/provider-links.js';
import { createSession } from '../../src/auth/tables/sessions.js';
import { loadProvider, removeProvider } from '../../src/providers/configured.js';
import { firstStoreId } from '../../src/store/store.js';
import { domainOf } from '../helpers/domain.js';
import type { TestApp } from '../helpers/harness.js';
import { consentAt } from '../helpers/openid-provider.js';
import { addTestProvider, callbackUri, useProviderSuite } from '../helpers/providers.js';

/**
 * The provider's way back as a flow, with no HTTP: the start the browser's cookie would hold comes
 * from the service's own relying party, the answer from a walk through a real provider
 * (oidc-provider), and the flow is called with them as the route calls it.
 */

/** A flow's deps from the harness, with the relying party's `finish` counted. */
function flowOf(t: TestApp) {
  const domain = domainOf(t);
  const finishes: string[] = [];
  const deps: ProviderCallbackDeps = {
    ...domain.deps,
    providers: {
      finish: (storeId, provider, pending, answer) => {
        finishes.push(provider.id);
        return t.services.providers.finish(storeId, provider, pending, answer);
      },
    },
  };

  /** A start as the route makes it, and the provider's answer to it once `login` consented. */
  async function started(login: string, linkTo: string | null = null) {
    const provider = await loadProvider(deps.db, t.services.keys, 'google');
    assert.ok(provider);
    const begun = await t.services.providers.begin(firstStoreId, provider, callbackUri('google'));
    const start: HeldProviderStart = {
      ...begun.pending,
      linkTo,
      expiresAt: t.clock.now().getTime() + 10 * 60 * 1000,
    };
    const answer = await consentAt(begun.url.href, login);
    assert.equal(answer.kind, 'redirect');
    return { start, answer: answer.url.searchParams };
  }

  /** The way back of `start` with `answer`, from the harness's browser. */
  async function callback(
    start: HeldProviderStart | undefined,
    answer: URLSearchParams,
    more: Partial<ProviderCallback> = {},
  ) {
    const input: ProviderCallback = {
      store: await domain.store(),
      providerId: 'google',
      start,
      answer,
      client: domain.client,
      sessionId: undefined,
      locale: null,
      ...more,
    };
    return finishProviderCallback(deps, input);
  }

  /** A customer who proved their email, and a session of theirs. */
  async function proven(email: string) {
    const row = await insertCustomer(deps.db, {
      id: randomUUID(),
      name: 'Proven',
      type: 'email',
      value: email,
      passwordHash: null,
      now: t.clock.now(),
      verified: true,
    });
    assert.ok(row);
    const opened = await createSession(deps.db, t.clock, {
      customerId: row.id,
      credentialVersion: row.credential_version,
      client: domain.client,
    });
    assert.ok(opened);
    return { id: row.id, sessionId: opened.session.sessionId };
  }

  const count = async (table: 'customers' | 'provider_states' | 'provider_links') =>
    (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;

  return { deps, finishes, started, callback, proven, count };
}

describe('the provider’s way back, as a flow', () => {
  const suite = useProviderSuite(async (t, op) => {
    await addTestProvider(t, op);
  });

  test('with no start the answer is refused before anything is spent or asked', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const { answer } = await flow.started('ada');
    const result = await flow.callback(undefined, answer);
    assert.deepEqual(result, { ok: false, error: 'no_start', reason: 'no_start', customerId: null });
    assert.equal(await flow.count('provider_states'), 0);
    assert.deepEqual(flow.finishes, []);
    assert.equal(await flow.count('customers'), 0);
    await t.close();
  });

  test('an answer of another state is refused, spends nothing, and leaves the start under way usable', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const first = await flow.started('ada');
    const other = await flow.started('ada');
    const mismatched = await flow.callback(first.start, other.answer);
    assert.deepEqual(mismatched, { ok: false, error: 'state_mismatch', reason: 'state_mismatch', customerId: null });
    assert.equal(await flow.count('provider_states'), 0);
    assert.deepEqual(flow.finishes, []);
    const signedIn = await flow.callback(first.start, first.answer);
    assert.ok(signedIn.ok && signedIn.value.kind === 'signed_in', JSON.stringify(signedIn));
    assert.equal(signedIn.value.match, 'created');
    await t.close();
  });

  test('a spent state is refused before the provider is looked up or asked, even once it is gone', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const { start, answer } = await flow.started('ada');
    const first = await flow.callback(start, answer);
    assert.ok(first.ok, JSON.stringify(first));
    assert.equal(await flow.count('provider_states'), 1);
    const replayed = await flow.callback(start, answer);
    assert.deepEqual(replayed, { ok: false, error: 'state_spent', reason: 'state_spent', customerId: null });
    await removeProvider(flow.deps.db, 'google');
    const afterRemoval = await flow.callback(start, answer);
    assert.deepEqual(afterRemoval, { ok: false, error: 'state_spent', reason: 'state_spent', customerId: null });
    assert.deepEqual(flow.finishes, ['google']);
    assert.equal(await flow.count('customers'), 1);
    await t.close();
  });

  test('a provider the store does not have is refused once the state is spent, and nothing is exchanged', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const unknown = await flow.started('ada');
    const removed = await flow.started('ada');
    const never = await flow.callback(unknown.start, unknown.answer, { providerId: 'github' });
    assert.deepEqual(never, { ok: false, error: 'provider_removed', reason: 'provider_removed', customerId: null });
    await removeProvider(flow.deps.db, 'google');
    const gone = await flow.callback(removed.start, removed.answer);
    assert.deepEqual(gone, { ok: false, error: 'provider_removed', reason: 'provider_removed', customerId: null });
    assert.equal(await flow.count('provider_states'), 2);
    assert.deepEqual(flow.finishes, []);
    assert.equal(await flow.count('customers'), 0);
    await t.close();
  });

  test('a verified email of a proven account links to it and signs in, with a notice to the identity', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const customer = await flow.proven('ada@example.com');
    const { start, answer } = await flow.started('ada');
    const result = await flow.callback(start, answer);
    assert.ok(result.ok && result.value.kind === 'signed_in', JSON.stringify(result));
    assert.equal(result.value.match, 'linked_proven');
    assert.ok('customer' in result.value.signedIn);
    assert.equal(result.value.signedIn.customer.id, customer.id);
    assert.deepEqual(
      (await listProviderLinks(flow.deps.db, customer.id)).map((link) => link.provider),
      ['google'],
    );
    const sent = await t.deliver();
    assert.deepEqual(
      sent.filter((message) => message.purpose === 'provider_linked').map((message) => message.to),
      ['ada@example.com'],
    );
    await t.close();
  });

  test('an email the provider does not assert verified creates and links nothing', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const fresh = await flow.started('mallory');
    const refused = await flow.callback(fresh.start, fresh.answer);
    assert.deepEqual(refused, { ok: false, error: 'email_unverified', reason: 'email_unverified', customerId: null });
    assert.equal(await flow.count('customers'), 0);
    const customer = await flow.proven('ada@example.com');
    for (const login of ['mallory', 'silent']) {
      const { start, answer } = await flow.started(login);
      const result = await flow.callback(start, answer);
      assert.deepEqual(result, { ok: false, error: 'email_unverified', reason: 'email_unverified', customerId: null });
    }
    assert.equal(await flow.count('customers'), 1);
    assert.deepEqual(await listProviderLinks(flow.deps.db, customer.id), []);
    assert.equal(await flow.count('provider_links'), 0);
    await t.close();
  });

  test('a blocked customer is refused and nothing is linked or sent', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const customer = await flow.proven('ada@example.com');
    await t.db.query('UPDATE customers SET blocked_at = $2 WHERE id = $1', [customer.id, t.clock.now()]);
    const { start, answer } = await flow.started('ada');
    const result = await flow.callback(start, answer);
    assert.deepEqual(result, { ok: false, error: 'blocked', reason: 'blocked', customerId: customer.id });
    assert.equal(await flow.count('provider_links'), 0);
    assert.deepEqual(
      (await t.deliver()).filter((message) => message.purpose === 'provider_linked'),
      [],
    );
    await t.close();
  });

  test('linking a provider account another customer holds is refused; the link stays theirs', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const first = await flow.started('ada');
    const made = await flow.callback(first.start, first.answer);
    assert.ok(made.ok && made.value.kind === 'signed_in' && 'customer' in made.value.signedIn, JSON.stringify(made));
    const holder = made.value.signedIn.customer.id;
    const other = await flow.proven('bob@example.com');
    const { start, answer } = await flow.started('ada', other.id);
    const result = await flow.callback(start, answer, { sessionId: other.sessionId });
    assert.deepEqual(result, {
      ok: false,
      error: 'linked_elsewhere',
      reason: 'linked_elsewhere',
      customerId: other.id,
    });
    assert.deepEqual(
      (await t.db.query<{ customer_id: string }>('SELECT customer_id::text AS customer_id FROM provider_links')).map(
        (row) => row.customer_id,
      ),
      [holder],
    );
    await t.close();
  });

  test('a link comes back only to the session that started it; then it links to that customer', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const customer = await flow.proven('bob@example.com');
    const elsewhere = await flow.proven('eve@example.com');
    for (const sessionId of [undefined, elsewhere.sessionId]) {
      const { start, answer } = await flow.started('grace', customer.id);
      const result = await flow.callback(start, answer, { sessionId });
      assert.deepEqual(result, {
        ok: false,
        error: 'session_changed',
        reason: 'session_changed',
        customerId: customer.id,
      });
    }
    assert.equal(await flow.count('provider_links'), 0);
    const { start, answer } = await flow.started('grace', customer.id);
    const linked = await flow.callback(start, answer, { sessionId: customer.sessionId });
    assert.deepEqual(linked, { ok: true, value: { kind: 'linked', customerId: customer.id, providerId: 'google' } });
    assert.deepEqual(
      (await listProviderLinks(flow.deps.db, customer.id)).map((link) => link.provider),
      ['google'],
    );
    await t.close();
  });

  test('the provider’s own refusal comes back as provider_refused, with its code for the trail', async () => {
    const { t } = await suite.begin();
    const flow = flowOf(t);
    const { start } = await flow.started('ada');
    const answer = new URLSearchParams({ state: start.state, error: 'access_denied', iss: suite.op().issuer });
    const result = await flow.callback(start, answer);
    assert.deepEqual(result, {
      ok: false,
      error: 'provider_refused',
      reason: 'provider:access_denied',
      customerId: null,
    });
    assert.deepEqual(flow.finishes, ['google']);
    assert.equal(await flow.count('customers'), 0);
    await t.close();
  });
});
