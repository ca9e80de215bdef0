import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { customerEventTypes, testEventType } from '../../src/hooks/webhook-catalogue.js';
import { assertProblem } from '../helpers/assertions.js';
import { count, withSession } from '../helpers/customers.js';
import { auth, useHarness } from '../helpers/harness.js';
import { imported } from '../helpers/import.js';
import { signedInCustomer } from '../helpers/passkeys.js';
import {
  addEndpoint,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
  webhooksOf,
} from '../helpers/webhook-endpoints.js';

/**
 * Where an endpoint may point (no private, loopback or link-local address unless allowed; https://
 * in production; no credentials), and the catalogue of events in the admin OpenAPI document.
 */

const production = { NODE_ENV: 'production', DELIVERY_LOG_IN_PRODUCTION: 'true' };

describe('where a webhook endpoint may point', () => {
  const harness = useHarness();

  const privateTargets: Array<[string, RegExp]> = [
    ['http://127.0.0.1:8080/hooks', /"http:\/\/127\.0\.0\.1:8080\/hooks" points at a private, loopback or link-local/],
    ['http://[::1]/', /"http:\/\/\[::1\]\/" points at a private/],
    ['http://10.0.0.1/', /"http:\/\/10\.0\.0\.1\/" points at a private/],
    [
      'http://169.254.169.254/latest/meta-data/',
      /"http:\/\/169\.254\.169\.254\/latest\/meta-data\/" points at a private/,
    ],
    ['https://[::ffff:192.168.1.1]/hooks', /points at a private/],
    [
      'http://localhost:8080/hooks',
      /^"localhost" resolves to (127\.0\.0\.1|::1), a private, loopback or link-local address/,
    ],
  ];

  test('without WEBHOOK_ALLOW_PRIVATE a private, loopback or link-local target is 422 naming it, on add and on change', async () => {
    const { t, call } = await startWithWebhooks(harness, { env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    const added = await call('POST', webhooksOf(), { url: 'https://93.184.215.14/hooks', events: ['*'] });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    for (const [url, message] of privateTargets) {
      for (const reply of [
        await call('POST', webhooksOf(), { url, events: ['*'] }),
        await call('PATCH', `${webhooksOf()}/${added.body.id}`, { url }),
      ]) {
        assertProblem(reply, 422, 'validation_failed');
        assert.equal(reply.body.errors.url.length, 1, url);
        assert.match(reply.body.errors.url[0], message);
      }
    }
    assert.equal(await count(t, 'webhook_endpoints'), 1);
    assert.equal((await call('GET', `${webhooksOf()}/${added.body.id}`)).body.url, 'https://93.184.215.14/hooks');
  });

  test('in production an http:// URL is 422, even where private targets are allowed', async () => {
    const { call } = await startWithWebhooks(harness, { env: production });
    const refused = await call('POST', webhooksOf(), { url: 'http://127.0.0.1:8080/hooks', events: ['*'] });
    assertProblem(refused, 422, 'validation_failed');
    assert.deepEqual(refused.body.errors, { url: ['"http://127.0.0.1:8080/hooks" must be https://'] });
    const secure = await call('POST', webhooksOf(), { url: 'https://127.0.0.1:8443/hooks', events: ['*'] });
    assert.equal(secure.status, 201, JSON.stringify(secure.body));
  });

  for (const url of ['https://user:secret@127.0.0.1/hooks', 'https://token@127.0.0.1/hooks', 'ftp://127.0.0.1/hooks']) {
    test(`${url} is 422 wherever it points`, async () => {
      const { t, call } = await startWithWebhooks(harness);
      assertProblem(await call('POST', webhooksOf(), { url, events: ['*'] }), 422, 'validation_failed');
      assert.equal(await count(t, 'webhook_endpoints'), 0);
    });
  }
});

describe('the catalogue of events in the admin OpenAPI document', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  async function catalogue() {
    const started = await startWithWebhooks(harness);
    const document = (await started.call('GET', '/admin/v1/openapi.json')).body;
    const ajv = new Ajv({ strict: false });
    formats.default(ajv);
    const entries = Object.entries(document.webhooks as Record<string, { post: any }>);
    const validators = new Map(
      entries.map(([type, item]) => [type, ajv.compile(item.post.requestBody.content['application/json'].schema)]),
    );
    return { ...started, entries, validators };
  }

  test('has every event type with a request body schema and an example the schema accepts', async () => {
    const { entries, validators } = await catalogue();
    assert.deepEqual(entries.map(([type]) => type).sort(), [...customerEventTypes, testEventType].sort());
    for (const [type, item] of entries) {
      const body = item.post.requestBody.content['application/json'];
      assert.equal(item.post.requestBody.required, true, type);
      assert.equal(body.example.type, type);
      const validate = validators.get(type)!;
      assert.equal(validate(body.example), true, `${type}: ${JSON.stringify(validate.errors)}`);
      const { store_id: _storeId, ...withoutStore } = body.example.data;
      assert.equal(validate({ ...body.example, data: withoutStore }), false, `${type} needs data.store_id`);
      assert.equal(validate({ ...body.example, type: 'customer.other' }), false, `${type} is its own type`);
    }
  });

  test('accepts the bodies the flows really send', async () => {
    const { t, admin, call, validators } = await catalogue();
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['*', 'customer.signed_in']);
    const ada = await signedInCustomer(t);
    await imported(t, admin, [JSON.stringify({ email: 'bob@example.com', name: 'Bob', external_id: 'shop-2' })]);
    assert.equal((await call('POST', `${webhooksOf()}/${id}/test`)).status, 202);
    const deleted = await t.post(
      `${auth}/account/delete`,
      { current_password: ada.password },
      withSession(ada.session),
    );
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    await sendWebhooks(t);
    assert.deepEqual(receiver.types().sort(), [
      'customer.deleted',
      'customer.imported',
      'customer.registered',
      'customer.signed_in',
      'customer.verified',
      'webhook.test',
    ]);
    for (const { event } of receiver.received) {
      const validate = validators.get(event.type)!;
      assert.equal(validate(event), true, `${event.type}: ${JSON.stringify(validate.errors)}`);
    }
  });
});
