import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startMetricsServer } from '../../../src/http/operations/metrics-server.js';
import { api, auth, useHarness, registeredCustomer } from '../../helpers/harness.js';

describe('Prometheus metrics', () => {
  const harness = useHarness();

  test('count requests by route and status, login outcomes, rate-limit hits, deliveries, outbox depth and dependency checks', async () => {
    const t = await harness.start();
    const customer = await registeredCustomer(t);
    await t.deliver();
    assert.equal(
      (await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password })).status,
      200,
    );
    assert.equal(
      (await t.post(`${auth}/login`, { identity: customer.identity, password: 'wrong password 1' })).status,
      401,
    );
    await t.post(`${auth}/password/forgot`, { identity: 'x@example.com' });
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: 'x@example.com' })).status, 429);
    await t.get(`${api}/health/ready`);

    const { server, address } = await startMetricsServer(t.services.metrics, 0, '127.0.0.1');
    try {
      const response = await fetch(address);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /text\/plain/);
      const text = await response.text();
      const value = (pattern: RegExp) => Number(text.match(pattern)?.[1] ?? NaN);
      assert.equal(
        value(
          /storefront_http_requests_total\{method="POST",route="\/api\/v1\/customer\/auth\/login",status="401",store="default"\} (\d+)/,
        ),
        1,
      );
      assert.equal(value(/storefront_login_attempts_total\{outcome="success",store="default"\} (\d+)/), 1);
      assert.equal(value(/storefront_login_attempts_total\{outcome="failure",store="default"\} (\d+)/), 1);
      assert.equal(value(/storefront_rate_limited_total\{limit="message-identity-m"\} (\d+)/), 1);
      assert.equal(
        value(/storefront_message_deliveries_total\{channel="email",outcome="sent",store="default"\} (\d+)/),
        1,
      );
      assert.equal(value(/storefront_outbox_messages\{status="sent"\} (\d+)/), 1);
      assert.equal(value(/storefront_dependency_up\{dependency="database"\} (\d+)/), 1);
      assert.match(text, /storefront_http_request_duration_seconds_bucket/);
      assert.doesNotMatch(text, /route="\/api\/v1\/health\/ready"/, 'a probe answered 200 is not counted');
      assert.match(text, /storefront_nodejs_eventloop_lag_seconds/);
      assert.equal((await fetch(address.replace('/metrics', '/other'))).status, 404);
    } finally {
      server.close();
    }
  });
});
