import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createStore } from '../../src/store/store.js';
import { adminCaller } from '../helpers/admin.js';
import { assertProblem } from '../helpers/assertions.js';
import { count } from '../helpers/customers.js';
import { registeredCustomer, useHarness } from '../helpers/harness.js';
import {
  addEndpoint,
  sendWebhooks,
  startWithWebhooks,
  useReceivers,
  webhooksOf,
  type AdminCall,
} from '../helpers/webhook-endpoints.js';

/** The admin API of a store's webhook endpoints: each call, what it answers, and what it refuses. */

const dayInSeconds = 24 * 60 * 60;
const endpointFields = [
  'created_at',
  'description',
  'disabled_at',
  'disabled_reason',
  'enabled',
  'events',
  'failing_since',
  'id',
  'previous_secret_until',
  'updated_at',
  'url',
];

interface Delivery {
  id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: Array<{ at: string; status: number | null; error: string | null; duration_ms: number }>;
  next_attempt_at: string | null;
  delivered_at: string | null;
}

async function deliveries(call: AdminCall, endpointId: string, query = ''): Promise<Delivery[]> {
  const reply = await call('GET', `${webhooksOf()}/${endpointId}/deliveries${query}`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.deliveries;
}

describe('the webhooks admin API', () => {
  const harness = useHarness();
  const receiverFor = useReceivers();

  test('adding answers 201 with a whsec_ secret that no list or read shows again', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const added = await call('POST', webhooksOf(), { url: receiver.url, events: ['*'], description: 'CRM' });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const { secret, ...endpoint } = added.body;
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'the base64 of 32 random bytes');
    assert.deepEqual(Object.keys(endpoint).sort(), endpointFields);
    const now = t.clock.now().toISOString();
    assert.deepEqual(endpoint, {
      id: endpoint.id,
      url: receiver.url,
      events: ['*'],
      description: 'CRM',
      enabled: true,
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
      previous_secret_until: null,
      created_at: now,
      updated_at: now,
    });
    t.clock.advance(1);
    const other = await call('POST', webhooksOf(), { url: receiver.url, events: ['customer.deleted'] });
    assert.notEqual(other.body.secret, secret, 'each endpoint its own secret');

    const listed = await call('GET', webhooksOf());
    assert.deepEqual(listed.body.webhooks[0], endpoint);
    assert.deepEqual(
      listed.body.webhooks.map((entry: { id: string }) => entry.id),
      [endpoint.id, other.body.id],
    );
    const read = await call('GET', `${webhooksOf()}/${endpoint.id}`);
    assert.deepEqual(read.body, endpoint);
    for (const reply of [listed, read]) {
      assert.equal(reply.raw.body.includes(secret), false);
      assert.equal(reply.raw.body.includes('secret"'), false);
    }
  });

  test('PATCH changes only the fields given and refuses unknown or no events with 422', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    const url = `${webhooksOf()}/${id}`;
    t.clock.advance(60);
    const described = await call('PATCH', url, { description: 'Orders' });
    assert.equal(described.status, 200, JSON.stringify(described.body));
    assert.deepEqual(
      [described.body.url, described.body.events, described.body.description, described.body.enabled],
      [receiver.url, ['customer.registered'], 'Orders', true],
    );
    assert.equal(described.body.updated_at, t.clock.now().toISOString());
    const moved = await call('PATCH', url, { url: `${receiver.url}/v2`, events: ['customer.deleted', '*'] });
    assert.deepEqual(
      [moved.body.url, moved.body.events, moved.body.description],
      [`${receiver.url}/v2`, ['customer.deleted', '*'], 'Orders'],
    );

    const refusals: Array<[string, unknown, string]> = [
      ['an unknown event', { events: ['customer.nope', 'customer.deleted'] }, 'events'],
      ['a test event, which is not asked for', { events: ['webhook.test'] }, 'events'],
      ['no events', { events: [] }, 'events'],
      ['a URL that is none', { url: 'crm.example/hooks' }, 'url'],
    ];
    for (const [what, body, field] of refusals) {
      const reply = await call('PATCH', url, body);
      assertProblem(reply, 422, 'validation_failed');
      assert.ok(reply.body.errors?.[field], `${what}: errors.${field} in ${JSON.stringify(reply.body)}`);
    }
    assertProblem(await call('PATCH', url, {}), 422, 'validation_failed');
    assertProblem(await call('PATCH', url, { secret: 'whsec_mine' }), 422, 'validation_failed');
    const unknown = await call('POST', webhooksOf(), { url: receiver.url, events: ['customer.nope'] });
    assertProblem(unknown, 422, 'validation_failed');
    assert.match(unknown.body.errors.events[0], /"customer\.nope": no such event/);
    assert.deepEqual((await call('GET', url)).body, moved.body, 'a refused change changes nothing');
    assert.equal(await count(t, 'webhook_endpoints'), 1);
  });

  test('DELETE removes the endpoint and its deliveries, and no other', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const gone = await addEndpoint(call, await receiverFor());
    const kept = await addEndpoint(call, await receiverFor());
    await registeredCustomer(t);
    await sendWebhooks(t);
    const deliveriesOf = (id: string) => count(t, 'webhook_deliveries WHERE endpoint_id = $1', [id]);
    assert.equal(await deliveriesOf(gone.id), 1);

    const removed = await call('DELETE', `${webhooksOf()}/${gone.id}`);
    assert.deepEqual([removed.status, removed.body], [200, { status: 'removed' }]);
    assert.equal(await deliveriesOf(gone.id), 0);
    assert.equal(await deliveriesOf(kept.id), 1);
    assertProblem(await call('GET', `${webhooksOf()}/${gone.id}`), 404, 'not_found');
    assertProblem(await call('DELETE', `${webhooksOf()}/${gone.id}`), 404, 'not_found');
    assert.deepEqual(
      (await call('GET', webhooksOf())).body.webhooks.map((entry: { id: string }) => entry.id),
      [kept.id],
    );
  });

  test('rotating answers a new secret; for 24 hours a delivery verifies with the old one alone or the new one alone', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id, secret: old } = await addEndpoint(call, receiver, ['customer.deleted']);
    const rotated = await call('POST', `${webhooksOf()}/${id}/rotate-secret`);
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const fresh: string = rotated.body.secret;
    assert.match(fresh, /^whsec_/);
    assert.notEqual(fresh, old);
    const until = new Date(t.clock.now().getTime() + dayInSeconds * 1000).toISOString();
    assert.equal(rotated.body.previous_secret_until, until);
    assert.equal((await call('GET', `${webhooksOf()}/${id}`)).body.previous_secret_until, until);

    const sendTest = async () => {
      assert.equal((await call('POST', `${webhooksOf()}/${id}/test`)).status, 202);
      await sendWebhooks(t);
    };
    for (const secrets of [[old], [fresh]]) {
      receiver.secrets = secrets;
      await sendTest();
    }
    assert.equal(receiver.received.length, 2, JSON.stringify(receiver.refused));
    assert.equal(receiver.received[0]!.signature.split(' ').length, 2, 'two signatures while both sign');

    t.clock.advance(dayInSeconds + 1);
    assert.equal((await call('GET', `${webhooksOf()}/${id}`)).body.previous_secret_until, null);
    receiver.secrets = [old];
    await sendTest();
    assert.equal(receiver.received.length, 2, 'the old secret no longer verifies');
    assert.equal(receiver.refused.length, 1);
    receiver.secrets = [fresh];
    await sendTest();
    assert.equal(receiver.received.length, 3);
    // The refused one keeps its schedule (it was answered, with 401): its retry verifies now.
    t.clock.advance(5);
    await sendWebhooks(t);
    assert.equal(receiver.received.length, 4);
    for (const entry of receiver.received.slice(2)) assert.equal(entry.signature.split(' ').length, 1);
  });

  test('a test answers 202 and sends webhook.test to that endpoint only, whatever it asked for', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const tested = await receiverFor();
    const other = await receiverFor();
    const { id } = await addEndpoint(call, tested, ['customer.deleted']);
    await addEndpoint(call, other, ['*']);
    const reply = await call('POST', `${webhooksOf()}/${id}/test`);
    assert.deepEqual([reply.status, reply.body], [202, { status: 'queued' }]);
    await sendWebhooks(t);
    assert.deepEqual(
      tested.received.map((entry) => entry.event),
      [{ type: 'webhook.test', timestamp: t.clock.now().toISOString(), data: { store_id: 'default', webhook_id: id } }],
    );
    assert.deepEqual(other.types(), []);
  });

  test('deliveries list each attempt with its status or error and duration, newest first, page by page', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    receiver.answer = (_received, response) => response.writeHead(500).end();
    await registeredCustomer(t);
    await sendWebhooks(t);
    const firstAt = t.clock.now().toISOString();
    const [waiting] = await deliveries(call, id);
    assert.deepEqual(
      { ...waiting!, attempts: waiting!.attempts.map(({ duration_ms: _ms, ...attempt }) => attempt) },
      {
        id: waiting!.id,
        event_id: receiver.received[0]!.id,
        type: 'customer.registered',
        status: 'pending',
        attempts: [{ at: firstAt, status: 500, error: null }],
        next_attempt_at: new Date(t.clock.now().getTime() + 5_000).toISOString(),
        created_at: firstAt,
        delivered_at: null,
      },
    );

    // Down (no answer at all), then up again.
    await receiver.stop();
    t.clock.advance(5);
    await sendWebhooks(t);
    await receiver.start();
    receiver.answer = (_received, response) => response.writeHead(204).end();
    t.clock.advance(300);
    await sendWebhooks(t);
    const [sent] = await deliveries(call, id);
    assert.equal(sent!.status, 'sent');
    assert.equal(sent!.delivered_at, t.clock.now().toISOString());
    assert.equal(sent!.next_attempt_at, null);
    assert.deepEqual(
      sent!.attempts.map((attempt) => [attempt.status, attempt.error === null]),
      [
        [500, true],
        [null, false],
        [204, true],
      ],
    );
    assert.ok(sent!.attempts[1]!.error!.length > 0, 'why no answer came');
    for (const attempt of sent!.attempts) assert.ok(Number.isInteger(attempt.duration_ms) && attempt.duration_ms >= 0);

    for (const email of ['b@example.com', 'c@example.com']) await registeredCustomer(t, { email });
    const everything = (await deliveries(call, id)).map((delivery) => delivery.id);
    assert.equal(everything.length, 3);
    assert.deepEqual(
      [...everything].sort((a, b) => Number(b) - Number(a)),
      everything,
      'newest first',
    );
    const first = await call('GET', `${webhooksOf()}/${id}/deliveries?limit=2`);
    assert.deepEqual(
      first.body.deliveries.map((delivery: Delivery) => delivery.id),
      everything.slice(0, 2),
    );
    assert.equal(first.body.next_cursor, everything[1]);
    const second = await call('GET', `${webhooksOf()}/${id}/deliveries?limit=2&cursor=${first.body.next_cursor}`);
    assert.deepEqual(
      second.body.deliveries.map((delivery: Delivery) => delivery.id),
      everything.slice(2),
    );
    assert.equal(second.body.next_cursor, null);
    for (const query of ['?limit=0', '?limit=101', '?limit=ten', '?cursor=abc'])
      assertProblem(await call('GET', `${webhooksOf()}/${id}/deliveries${query}`), 422, 'validation_failed');
  });

  test('a retry answers 202 and sends the delivery again under the same webhook-id', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const receiver = await receiverFor();
    const { id } = await addEndpoint(call, receiver, ['customer.registered']);
    await registeredCustomer(t);
    await sendWebhooks(t);
    const [delivery] = await deliveries(call, id);
    assert.equal(delivery!.status, 'sent');
    t.clock.advance(60);
    const retried = await call('POST', `${webhooksOf()}/${id}/deliveries/${delivery!.id}/retry`);
    assert.deepEqual([retried.status, retried.body], [202, { status: 'queued' }]);
    await sendWebhooks(t);
    assert.deepEqual(
      receiver.received.map((entry) => entry.id),
      [delivery!.event_id, delivery!.event_id],
    );
    assert.equal(receiver.received[1]!.body, receiver.received[0]!.body, 'the same body, byte for byte');
    const [again] = await deliveries(call, id);
    assert.equal(again!.attempts.length, 2);
    assert.equal(again!.delivered_at, t.clock.now().toISOString());
  });

  test('an unknown or malformed id, or another store’s endpoint, is 404 on every call', async () => {
    const { t, call } = await startWithWebhooks(harness);
    const ours = await addEndpoint(call, await receiverFor());
    await registeredCustomer(t);
    // A second store, made after the registration: with two, a request must name its store's host.
    const created = await createStore(t.db, t.clock, {
      slug: 'books',
      name: 'Books',
      identityMode: 'email',
      hosts: ['books.example'],
    });
    assert.ok(created.ok);
    const theirs = await addEndpoint(call, await receiverFor(), ['*'], 'books');
    assert.equal((await call('POST', `${webhooksOf('books')}/${theirs.id}/test`)).status, 202);
    await sendWebhooks(t);
    const [theirDelivery] = (await call('GET', `${webhooksOf('books')}/${theirs.id}/deliveries`)).body
      .deliveries as Delivery[];
    const [ourDelivery] = await deliveries(call, ours.id);

    const routes = (id: string): Array<[Parameters<AdminCall>[0], string, unknown?]> => [
      ['GET', `${webhooksOf()}/${id}`],
      ['PATCH', `${webhooksOf()}/${id}`, { description: 'mine' }],
      ['DELETE', `${webhooksOf()}/${id}`],
      ['POST', `${webhooksOf()}/${id}/rotate-secret`],
      ['POST', `${webhooksOf()}/${id}/test`],
      ['GET', `${webhooksOf()}/${id}/deliveries`],
      ['POST', `${webhooksOf()}/${id}/deliveries/${ourDelivery!.id}/retry`],
    ];
    for (const id of [randomUUID(), 'not-a-uuid', theirs.id, `${ours.id}x`])
      for (const [method, url, body] of routes(id)) assertProblem(await call(method, url, body), 404, 'not_found');
    for (const delivery of [theirDelivery!.id, '999999', 'abc', '9'.repeat(19), '-1'])
      assertProblem(await call('POST', `${webhooksOf()}/${ours.id}/deliveries/${delivery}/retry`), 404, 'not_found');
    assertProblem(await call('GET', webhooksOf('nowhere')), 404, 'store_not_found');
    // Nothing was changed by any of it.
    assert.equal((await call('GET', `${webhooksOf('books')}/${theirs.id}`)).body.description, '');
    assert.equal(await count(t, 'webhook_endpoints'), 2);
  });

  test('the 21st endpoint of a store is refused with 409 webhook_limit', async () => {
    const { t, call } = await startWithWebhooks(harness);
    for (let n = 0; n < 20; n++)
      assert.equal((await call('POST', webhooksOf(), { url: `http://127.0.0.1:9/${n}`, events: ['*'] })).status, 201);
    assertProblem(
      await call('POST', webhooksOf(), { url: 'http://127.0.0.1:9/21', events: ['*'] }),
      409,
      'webhook_limit',
    );
    assert.equal(await count(t, 'webhook_endpoints'), 20);
  });

  test('every call answers 401 without a token or with a wrong one', async () => {
    const { admin, call } = await startWithWebhooks(harness);
    const { id } = await addEndpoint(call, await receiverFor());
    const routes: Array<[Parameters<AdminCall>[0], string, unknown?]> = [
      ['POST', webhooksOf(), { url: 'http://127.0.0.1:9/x', events: ['*'] }],
      ['GET', webhooksOf()],
      ['GET', `${webhooksOf()}/${id}`],
      ['PATCH', `${webhooksOf()}/${id}`, { enabled: false }],
      ['DELETE', `${webhooksOf()}/${id}`],
      ['POST', `${webhooksOf()}/${id}/rotate-secret`],
      ['POST', `${webhooksOf()}/${id}/test`],
      ['GET', `${webhooksOf()}/${id}/deliveries`],
      ['POST', `${webhooksOf()}/${id}/deliveries/1/retry`],
    ];
    const wrong = adminCaller(admin, 'admin-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB');
    for (const [method, url, body] of routes) {
      const none = await admin.inject({ method, url, ...(body === undefined ? {} : { payload: body as object }) });
      assert.equal(none.statusCode, 401, `${method} ${url}`);
      assert.equal(none.json().code, 'unauthenticated');
      assertProblem(await wrong(method, url, body), 401, 'unauthenticated');
    }
    const [endpoint] = (await call('GET', webhooksOf())).body.webhooks;
    assert.deepEqual([endpoint.id, endpoint.enabled], [id, true], 'nothing was changed');
  });
});
