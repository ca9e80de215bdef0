import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StoreLabels } from '../../../src/metrics.js';
import { api, auth, useHarness } from '../../helpers/harness.js';
import { find, scrape, total } from '../../helpers/metrics.js';
import { hostA, hostB, loginIn, registerIn, twoStores } from '../../helpers/stores.js';
import { addEndpoint, sendWebhooks, startWithWebhooks, useReceivers } from '../../helpers/webhook-endpoints.js';

/**
 * The `store` label of the request, login, message and webhook metrics, bounded by
 * METRICS_STORE_LABELS (the first stores seen get their slug, the others `_other`), and the
 * `store` and `host` of the log lines: read from the metrics listener and the service's own log.
 */

const logins = 'storefront_login_attempts_total';
const requests = 'storefront_http_requests_total';

describe('StoreLabels', () => {
  test('the first N stores seen keep their slug for the life of the process; every further one is _other', () => {
    const labels = new StoreLabels(2);
    assert.equal(labels.of('id-1', 'one'), 'one');
    assert.equal(labels.of('id-2', 'two'), 'two');
    assert.equal(labels.of('id-3', 'three'), '_other');
    assert.equal(labels.of('id-1', 'one'), 'one');
    assert.equal(labels.of('id-3', 'three'), '_other', 'a store past the bound stays past it');
    const none = new StoreLabels(0);
    assert.equal(none.of('id-1', 'one'), '_other');
  });
});

describe('the store label of the metrics and the store of the log lines', () => {
  const harness = useHarness();
  const receiver = useReceivers();

  test('failed logins in store A are counted under its slug, none under store B; no-store requests carry store=""', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await loginIn(a, `nobody${i}@example.com`, 'not the password')).status, 401);
    }
    // B is seen (a customer call answered 401) but has no login.
    assert.equal((await b.get(`${auth}/session`)).status, 401);
    // No store: a host none has; and a probe, which touches no store and is not counted when it answers 200.
    assert.equal((await t.get(`${auth}/session`, { host: 'nowhere.shop.test' })).status, 404);
    assert.equal((await t.get(`${api}/health/live`)).status, 200);

    const samples = await scrape(t);
    assert.equal(a.slug, 'default');
    assert.deepEqual(
      find(samples, logins).map(({ labels, value }) => ({ labels, value })),
      [{ labels: { outcome: 'failure', store: 'default' }, value: 3 }],
    );
    assert.deepEqual(find(samples, logins, { store: b.slug }), []);
    const login = { method: 'POST', route: '/api/v1/customer/auth/login', status: '401' };
    assert.equal(total(samples, requests, { ...login, store: 'default' }), 3);
    assert.equal(total(samples, requests, { method: 'GET', status: '401', store: 'shop-b' }), 1);
    assert.equal(total(samples, requests, { method: 'GET', status: '404', store: '' }), 1, 'an unknown host');
    assert.equal(total(samples, 'storefront_http_request_duration_seconds_count', { ...login, store: 'default' }), 3);
    // Every request series names a store (maybe ""): none stands beside them without the label.
    for (const sample of find(samples, requests)) assert.ok('store' in sample.labels, JSON.stringify(sample));
    assert.deepEqual(find(samples, requests, { store: '_other' }), [], 'within the default bound of 100');
  });

  test('with METRICS_STORE_LABELS=1 the second store seen is counted under _other, and the sum over store is the total', async () => {
    const t = await harness.start({ env: { METRICS_STORE_LABELS: '1' } });
    const { a, b } = await twoStores(t);
    // Probes and platform calls on B's host come first: they name no store, so take no label.
    assert.equal((await b.get(`${api}/health/live`)).status, 200);
    assert.equal((await b.get(`${api}/health/ready`)).status, 200);
    assert.equal((await b.get(`${api}/platform`)).status, 200);
    assert.equal((await loginIn(a, 'nobody@example.com', 'not the password')).status, 401);
    for (let i = 0; i < 2; i += 1) {
      assert.equal((await loginIn(b, `nobody${i}@example.com`, 'not the password')).status, 401);
    }

    const samples = await scrape(t);
    assert.equal(total(samples, logins, { outcome: 'failure', store: 'default' }), 1);
    assert.equal(total(samples, logins, { outcome: 'failure', store: '_other' }), 2);
    assert.equal(total(samples, logins, { outcome: 'failure' }), 3, 'the sum over store');
    assert.deepEqual(find(samples, logins, { store: 'shop-b' }), []);
    assert.deepEqual(
      samples.filter((sample) => sample.labels['store'] === 'shop-b'),
      [],
      'shop-b names no series at all',
    );
    const login = { method: 'POST', route: '/api/v1/customer/auth/login', status: '401' };
    assert.equal(total(samples, requests, { ...login, store: '_other' }), 2);
    assert.equal(total(samples, requests, { method: 'GET', route: '/api/v1/platform', store: '' }), 1);

    // A store past the bound still shows by its slug in the log line of its request.
    const lastLogin = t.logs.filter((line) => line['msg'] === 'request' && line['route'] === `${auth}/login`).at(-1);
    assert.equal(lastLogin?.['store'], 'shop-b');
    assert.equal(lastLogin?.['host'], hostB);
  });

  test('with METRICS_STORE_LABELS=0 every store is _other', async () => {
    const t = await harness.start({ env: { METRICS_STORE_LABELS: '0' } });
    const { a, b } = await twoStores(t);
    assert.equal((await loginIn(a, 'nobody@example.com', 'not the password')).status, 401);
    assert.equal((await loginIn(b, 'nobody@example.com', 'not the password')).status, 401);
    const samples = await scrape(t);
    assert.deepEqual(
      find(samples, logins).map(({ labels, value }) => ({ labels, value })),
      [{ labels: { outcome: 'failure', store: '_other' }, value: 2 }],
    );
  });

  test('a store’s request log line carries its slug and host; a request of no store carries neither', async () => {
    const t = await harness.start();
    const { a, b } = await twoStores(t);
    assert.equal((await loginIn(a, 'nobody@example.com', 'not the password')).status, 401);
    assert.equal((await b.get(`${auth}/session`)).status, 401);
    assert.equal((await t.get(`${api}/platform`, { host: hostA })).status, 200);

    const lines = t.logs.filter((line) => line['msg'] === 'request');
    const ofRoute = (route: string) => lines.filter((line) => line['route'] === route);
    assert.deepEqual(
      ofRoute(`${auth}/login`).map((line) => [line['store'], line['host'], line['status']]),
      [['default', hostA, 401]],
    );
    assert.deepEqual(
      ofRoute(`${auth}/session`).map((line) => [line['store'], line['host'], line['status']]),
      [['shop-b', hostB, 401]],
    );
    const platform = ofRoute(`${api}/platform`);
    assert.equal(platform.length, 1);
    assert.equal('store' in platform[0]!, false);
    assert.equal('host' in platform[0]!, false);
  });

  test('messages and webhooks are counted and logged by their store; admin calls carry store=""', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const { b } = await twoStores(t);
    const hook = await receiver();
    await addEndpoint(call, hook, ['customer.registered'], b.slug);
    const registered = await registerIn(b);
    await t.deliver();
    await sendWebhooks(t);
    assert.equal(hook.received.length, 1);

    const samples = await scrape(t);
    assert.equal(
      total(samples, 'storefront_message_deliveries_total', { channel: 'email', outcome: 'sent', store: 'shop-b' }),
      1,
    );
    assert.equal(total(samples, 'storefront_message_deliveries_total', { store: 'default' }), 0);
    assert.equal(
      total(samples, 'storefront_webhook_deliveries_total', {
        type: 'customer.registered',
        outcome: 'sent',
        store: 'shop-b',
      }),
      1,
    );
    assert.equal(total(samples, 'storefront_webhook_lag_seconds_count', { store: 'shop-b' }), 1);
    assert.equal(total(samples, requests, { method: 'POST', status: '201', store: '' }), 1, 'the admin call');
    assert.deepEqual(
      find(samples, requests, { method: 'POST', status: '201' })
        .filter((sample) => sample.labels['route']!.startsWith('/admin/'))
        .map((sample) => sample.labels['store']),
      [''],
    );

    const sent = t.logs.find((line) => line['msg'] === 'message sent');
    assert.equal(sent?.['store'], 'shop-b');
    const delivered = t.logs.find((line) => line['msg'] === 'webhook delivered');
    assert.equal(delivered?.['store'], 'shop-b');
    assert.ok(registered.id);
  });
});
