import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { eraseDeletedStores } from '../../../src/janitor.js';
import { buildAdminApp } from '../../../src/http/admin/app.js';
import { adminAppOf } from '../../helpers/admin.js';
import { tokenIdOf } from '../../../src/http/admin/tokens.js';
import { counterKey, limits } from '../../../src/http/core/rate-limit.js';
import { deleteExpiredIdempotencyKeys } from '../../../src/store/idempotency.js';
import { withSession } from '../../helpers/customers.js';
import { auth, registration, toReply, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { SpentCounters } from '../../helpers/counters.js';
import { assertRedoclyClean } from '../../helpers/openapi-lint.js';
import { serviceBackend } from '../../helpers/service-backend.js';
import { runCliOk, startService } from '../../helpers/service-process.js';
import { registerIn, rowsOf, signedInIn, storeSide, storeTables, verifyIn } from '../../helpers/stores.js';

const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const nextAdminToken = 'admin-token-DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD';
const introspectionToken = 'introspection-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const tokens = { ADMIN_TOKENS: `${adminToken},${nextAdminToken}`, INTROSPECTION_TOKENS: introspectionToken };
const stores = '/admin/v1/stores';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

interface Admin {
  t: TestApp;
  admin: FastifyInstance;
  call(
    method: Method,
    url: string,
    body?: unknown,
    options?: { token?: string | null; headers?: Record<string, string> },
  ): Promise<Reply>;
  /** POST /stores that must answer 201: the store. */
  create(body: Record<string, unknown>): Promise<Record<string, any>>;
}

async function startAdmin(harness: ReturnType<typeof useHarness>, overrides = {}): Promise<Admin> {
  const t = await harness.start({ env: tokens, overrides });
  const admin = await adminAppOf(t);
  const call: Admin['call'] = async (method, url, body, { token, headers = {} } = {}) =>
    toReply(
      await admin.inject({
        method,
        url,
        headers: {
          ...(token === null ? {} : { authorization: `Bearer ${token ?? adminToken}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
    );
  return {
    t,
    admin,
    call,
    async create(body) {
      const reply = await call('POST', stores, body);
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      return reply.body;
    },
  };
}

function assertProblem(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.match(String(reply.headers['content-type']), /^application\/problem\+json/);
  assert.equal(reply.body.code, code);
}

async function storeCount(t: TestApp): Promise<number> {
  const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM stores WHERE deleted_at IS NULL');
  return row!.n;
}

describe('the platform admin API', () => {
  const harness = useHarness();

  test('tokens: none or a wrong one is 401 with WWW-Authenticate: Bearer, an introspection token 403, each admin token works', async () => {
    const { call } = await startAdmin(harness);
    for (const token of [null, 'not-a-token-of-this-deployment-0123456789']) {
      const reply = await call('GET', stores, undefined, { token });
      assertProblem(reply, 401, 'unauthenticated');
      assert.match(String(reply.headers['www-authenticate']), /^Bearer /);
    }
    assertProblem(await call('GET', stores, undefined, { token: introspectionToken }), 403, 'forbidden');
    assertProblem(
      await call('POST', stores, { slug: 'books', name: 'Books' }, { token: introspectionToken }),
      403,
      'forbidden',
    );
    assert.equal((await call('GET', stores, undefined, { token: nextAdminToken })).status, 200);
  });

  test('a token rotated out of ADMIN_TOKENS is refused from the next start', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: nextAdminToken } });
    const admin = await buildAdminApp(t.services);
    try {
      const reply = toReply(
        await admin.inject({ method: 'GET', url: stores, headers: { authorization: `Bearer ${adminToken}` } }),
      );
      assertProblem(reply, 401, 'unauthenticated');
    } finally {
      await admin.close();
    }
  });

  test('create answers the store as GET reads it; the customer API answers on its host at once', async () => {
    const { t, call, create } = await startAdmin(harness);
    const made = await create({
      slug: 'books',
      name: '  Book Nook ',
      hosts: ['Books.Example.COM', 'bücher.example'],
      settings: { 'auth.passkeys': true },
      allowed_origins: ['https://www.books.example.com/'],
      mail_from: 'Book Nook <shop@books.example.com>',
      sms_sender: 'BOOKNOOK',
    });
    assert.match(made.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      { ...made, id: undefined, updated_at: undefined },
      {
        id: undefined,
        slug: 'books',
        name: 'Book Nook',
        status: 'active',
        identity_mode: 'email',
        settings: {
          'auth.customer_verification_required': false,
          'auth.sign_in_with_code': false,
          'auth.sign_in_notices': true,
          'auth.passkeys': true,
          'auth.two_factor': 'off',
          'auth.phone_countries': [],
          'auth.bot_check': null,
        },
        branding: { logo_url: null, primary_colour: null, accent_colour: null, support_url: null },
        hosts: ['books.example.com', 'xn--bcher-kva.example'],
        allowed_origins: ['https://www.books.example.com'],
        mail_from: 'Book Nook <shop@books.example.com>',
        sms_sender: 'BOOKNOOK',
        // Fixed at once to the first host given, so hosts added later never move it.
        webauthn_rp_id: 'books.example.com',
        cookie_domain: null,
        languages: ['en'],
        default_language: 'en',
        updated_at: undefined,
        warnings: [
          'The store default has no host: it answered on every host as the only store, and now answers on none. Give it one with POST /admin/v1/stores/default/hosts.',
        ],
      },
    );
    const { warnings: _warnings, ...store } = made;
    assert.deepEqual((await call('GET', `${stores}/${made.id}`)).body, store);
    assert.deepEqual((await call('GET', `${stores}/books`)).body, store, 'by slug too');
    assertProblem(await call('GET', `${stores}/no-such-store`), 404, 'store_not_found');
    // No wait for the change feed: this instance has read it already.
    const side = storeSide(t, made.id, 'books', 'books.example.com');
    assert.equal((await side.post(`${auth}/register`, registration())).status, 201);
    await t.services.background.drain();
    const [row] = await t.db.query<{ details: Record<string, string> }>(
      "SELECT details FROM audit_events WHERE store_id = $1 AND event = 'store.created'",
      [made.id],
    );
    assert.deepEqual(row?.details, { by: 'admin', token: tokenIdOf(adminToken), slug: 'books' });
    assert.ok(!JSON.stringify(row).includes(adminToken), 'the token itself is never written');
  });

  test("every bad field is named in one 422, in the command line's words; unknown fields are refused", async () => {
    const { t, call } = await startAdmin(harness);
    const reply = await call('POST', stores, {
      slug: 'No Good',
      name: ' ',
      hosts: ['shop.example.com:8443', '*.example.com'],
      allowed_origins: ['https://shop.example.com/path'],
      mail_from: 'shop@example.com',
      sms_sender: 'x\u0007',
      webauthn_rp_id: '10.0.0.1',
      colour: 'red',
      settings: { 'auth.pass_keys': true },
    });
    assertProblem(reply, 422, 'validation_failed');
    // One answer: the fields the schema refuses and those the store's field rules refuse together.
    assert.deepEqual(Object.keys(reply.body.errors).sort(), [
      'allowed_origins',
      'colour',
      'hosts',
      'mail_from',
      'name',
      'settings.auth.pass_keys',
      'slug',
      'sms_sender',
      'webauthn_rp_id',
    ]);
    // A field whose type the schema refuses is named once, in the schema's words, not checked again.
    const mistyped = await call('POST', stores, { slug: 'No Good', name: 7, hosts: 'shop.example.com' });
    assertProblem(mistyped, 422, 'validation_failed');
    assert.deepEqual(Object.keys(mistyped.body.errors).sort(), ['hosts', 'name', 'slug']);
    assert.equal(mistyped.body.errors.name.length, 1);
    // The schema passes; the store's field rules name every field they refuse.
    const second = await call('POST', stores, {
      slug: 'No Good',
      name: ' ',
      hosts: ['shop.example.com:8443'],
      allowed_origins: ['https://shop.example.com/path'],
      mail_from: 'shop@example.com',
      sms_sender: 'x\u0007',
      webauthn_rp_id: '10.0.0.1',
    });
    assertProblem(second, 422, 'validation_failed');
    assert.deepEqual(second.body.errors, {
      slug: ['"No Good" must be 3 to 63 of a-z, 0-9 and -'],
      hosts: ['"shop.example.com:8443": give the host name without a port, such as shop.example.com'],
      name: ['must be 1 to 120 characters, without control characters'],
      allowed_origins: [
        '"https://shop.example.com/path" must be an origin alone, without a path, query or user, such as https://shop.example.com',
      ],
      mail_from: ['"shop@example.com" must be a sender name and an address, such as "Acme Shoes <shop@acme.example>"'],
      sms_sender: ['must be 1 to 32 characters, without control characters'],
      webauthn_rp_id: [
        '"10.0.0.1" is not a host name (labels of letters, digits and -, no port, no wildcard, no address), such as shop.example.com',
      ],
    });
    const wildcard = await call('POST', stores, { slug: 'books', name: 'Books', hosts: ['*.example.com'] });
    assert.deepEqual(wildcard.body.errors, {
      hosts: ['"*.example.com": a wildcard is not a host; name each host, such as shop.example.com'],
    });
    assert.equal(await storeCount(t), 1, 'nothing was made');
  });

  test('a slug or a host another store holds is 409, and nothing is made', async () => {
    const { t, call, create } = await startAdmin(harness);
    await create({ slug: 'books', name: 'Books', hosts: ['books.example.com'] });
    assertProblem(await call('POST', stores, { slug: 'books', name: 'Other' }), 409, 'slug_taken');
    const host = await call('POST', stores, {
      slug: 'other',
      name: 'Other',
      hosts: ['new.example', 'BOOKS.example.com'],
    });
    assertProblem(host, 409, 'host_taken');
    assert.match(host.body.detail, /books\.example\.com/);
    assert.equal(await storeCount(t), 2);
    const [hosts] = await t.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM store_hosts WHERE host = 'new.example'",
    );
    assert.equal(hosts?.n, 0);
  });

  test('creates and host additions racing for one slug or host: one wins, the others are 409, none fails', async () => {
    const { t, call, create } = await startAdmin(harness);
    const holder = await create({ slug: 'holder', name: 'Holder' });
    const sameHost = await Promise.all([
      ...Array.from({ length: 5 }, (_, n) =>
        call('POST', stores, { slug: `host-racer-${n}`, name: 'Racer', hosts: ['contested.example'] }),
      ),
      call('POST', `${stores}/${holder.id}/hosts`, { host: 'contested.example' }),
    ]);
    assert.equal(
      sameHost.filter((reply) => reply.status === 201).length,
      1,
      JSON.stringify(sameHost.map((r) => r.status)),
    );
    for (const reply of sameHost.filter((each) => each.status !== 201)) assertProblem(reply, 409, 'host_taken');
    const sameSlug = await Promise.all(
      Array.from({ length: 5 }, (_, n) =>
        call('POST', stores, { slug: 'slug-racer', name: 'Racer', hosts: [`s${n}.example`] }),
      ),
    );
    assert.equal(sameSlug.filter((reply) => reply.status === 201).length, 1);
    for (const reply of sameSlug.filter((each) => each.status !== 201)) assertProblem(reply, 409, 'slug_taken');
    const [hosts] = await t.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM store_hosts WHERE host LIKE 's_.example'",
    );
    assert.equal(hosts?.n, 1, "the losers' hosts were rolled back with them");
    // default, holder, the slug's winner, and the host's winner when a create won it.
    const createWon = sameHost.slice(0, 5).some((reply) => reply.status === 201);
    assert.equal(await storeCount(t), createWon ? 4 : 3);
  });

  describe('Idempotency-Key', () => {
    test('a retry with the key and body answers the first answer and makes nothing; another body is 422', async () => {
      const { t, call } = await startAdmin(harness);
      const headers = { 'idempotency-key': 'signup-4711' };
      const body = { slug: 'books', name: 'Books', hosts: ['books.example.com'] };
      const first = await call('POST', stores, body, { headers });
      assert.equal(first.status, 201);
      assert.equal(first.headers['idempotency-replayed'], undefined);
      // The same body, its keys in another order.
      const again = await call(
        'POST',
        stores,
        { hosts: ['books.example.com'], name: 'Books', slug: 'books' },
        { headers },
      );
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotency-replayed'], 'true');
      assert.deepEqual(again.body, first.body);
      assert.equal(await storeCount(t), 2);
      const other = await call('POST', stores, { ...body, name: 'Bookz' }, { headers });
      assertProblem(other, 422, 'idempotency_key_reused');
      assert.equal(await storeCount(t), 2);
      const bad = await call('POST', stores, body, { headers: { 'idempotency-key': 'has space' } });
      assertProblem(bad, 422, 'validation_failed');
      assert.deepEqual(Object.keys(bad.body.errors), ['idempotency-key']);
    });

    test('8 creates racing with one key make one store, and all 8 answer it', async () => {
      const { t, call } = await startAdmin(harness);
      const headers = { 'idempotency-key': 'race-1' };
      const replies = await Promise.all(
        Array.from({ length: 8 }, () => call('POST', stores, { slug: 'racer', name: 'Racer' }, { headers })),
      );
      assert.deepEqual(
        replies.map((reply) => reply.status),
        Array(8).fill(201),
      );
      assert.equal(new Set(replies.map((reply) => reply.body.id)).size, 1);
      assert.equal(replies.filter((reply) => reply.headers['idempotency-replayed'] === 'true').length, 7);
      assert.equal(await storeCount(t), 2);
    });

    test('a refusal keeps nothing: the retry is tried afresh; after 24 hours the key is new again', async () => {
      const { t, call, create } = await startAdmin(harness);
      const holder = await create({ slug: 'holder', name: 'Holder', hosts: ['shop.example.com'] });
      const headers = { 'idempotency-key': 'signup-9' };
      const body = { slug: 'books', name: 'Books', hosts: ['shop.example.com'] };
      assertProblem(await call('POST', stores, body, { headers }), 409, 'host_taken');
      assert.equal((await call('DELETE', `${stores}/${holder.id}/hosts/shop.example.com`)).status, 200);
      const made = await call('POST', stores, body, { headers });
      assert.equal(made.status, 201, 'the host is free now, and the key was not spent on the refusal');
      t.clock.advance(24 * 60 * 60 * 1000 + 1000);
      // A day on, the same key and body are a new call: the slug is taken by the store it made.
      assertProblem(await call('POST', stores, body, { headers }), 409, 'slug_taken');
      // The janitor's prune frees the key itself once its day is over.
      assert.equal(await deleteExpiredIdempotencyKeys(t.db, t.clock, 100), 1);
    });
  });

  test('list: keyset pages by slug, next_cursor until null; a bad cursor or limit is 422', async () => {
    const { call, create } = await startAdmin(harness);
    for (const slug of ['eee', 'bbb', 'ddd', 'ccc']) await create({ slug, name: slug });
    const slugs: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const reply = await call('GET', `${stores}?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      slugs.push(...reply.body.stores.map((store: { slug: string }) => store.slug));
      cursor = reply.body.next_cursor;
      pages += 1;
    } while (cursor !== null);
    assert.deepEqual(slugs, ['bbb', 'ccc', 'ddd', 'default', 'eee']);
    assert.equal(pages, 3);
    assertProblem(await call('GET', `${stores}?limit=0`), 422, 'validation_failed');
    assertProblem(await call('GET', `${stores}?limit=501`), 422, 'validation_failed');
    assertProblem(await call('GET', `${stores}?cursor=%2A%2A`), 422, 'validation_failed');
    assertProblem(await call('GET', `${stores}?page=2`), 422, 'validation_failed');
  });

  describe('PATCH', () => {
    test('a merge patch changes what it names; null clears; the customer API follows at once', async () => {
      const { t, call, create } = await startAdmin(harness);
      const made = await create({
        slug: 'books',
        name: 'Books',
        hosts: ['books.example.com'],
        mail_from: 'A <a@b.example>',
      });
      const side = storeSide(t, made.id, 'books', 'books.example.com');
      assert.equal((await side.get('/api/v1/csrf-cookie')).status, 204);
      const reply = await call(
        'PATCH',
        `${stores}/${made.id}`,
        { status: 'paused', mail_from: null, settings: { 'auth.sign_in_with_code': true } },
        { headers: { 'content-type': 'application/merge-patch+json' } },
      );
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.status, 'paused');
      assert.equal(reply.body.mail_from, null);
      assert.equal(reply.body.name, 'Books', 'left out: unchanged');
      assert.deepEqual(reply.body.settings, { ...made.settings, 'auth.sign_in_with_code': true });
      assertProblem(await side.get('/api/v1/csrf-cookie'), 503, 'store_unavailable');
      const empty = await call('PATCH', `${stores}/${made.id}`, {});
      assert.deepEqual(empty.body, reply.body, 'an empty patch changes nothing');
      await t.services.background.drain();
      const [audit] = await t.db.query<{ details: Record<string, string> }>(
        "SELECT details FROM audit_events WHERE store_id = $1 AND event = 'store.changed'",
        [made.id],
      );
      assert.deepEqual(audit?.details, {
        by: 'admin',
        token: tokenIdOf(adminToken),
        fields: 'mail_from,settings,status',
      });
    });

    test('an unknown field, slug, hosts or a bad value is 422 and changes nothing', async () => {
      const { call, create } = await startAdmin(harness);
      const made = await create({ slug: 'books', name: 'Books' });
      for (const [patch, field] of [
        [{ nmae: 'Typo' }, 'nmae'],
        [{ slug: 'other' }, 'slug'],
        [{ hosts: ['x.example'] }, 'hosts'],
        [{ settings: { 'auth.passkey': true } }, 'settings.auth.passkey'],
        [{ status: 'open' }, 'status'],
        [{ name: null }, 'name'],
        [{ allowed_origins: ['*'] }, 'allowed_origins'],
      ] as const) {
        const reply = await call('PATCH', `${stores}/${made.id}`, patch);
        assertProblem(reply, 422, 'validation_failed');
        assert.ok(field in reply.body.errors, `${JSON.stringify(patch)}: ${JSON.stringify(reply.body.errors)}`);
      }
      assertProblem(await call('PATCH', `${stores}/${made.id}`, '[1]'), 422, 'validation_failed');
      assertProblem(
        await call('PATCH', `${stores}/${made.id}`, '{}', { headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      );
      const { warnings: _warnings, ...unchanged } = made;
      assert.deepEqual((await call('GET', `${stores}/${made.id}`)).body, unchanged);
    });

    test('switching the identity mode under customers is 409 unless forced', async () => {
      const { t, call, create } = await startAdmin(harness);
      const made = await create({ slug: 'books', name: 'Books', hosts: ['books.example.com'] });
      await registerIn(storeSide(t, made.id, 'books', 'books.example.com'));
      assertProblem(
        await call('PATCH', `${stores}/${made.id}`, { identity_mode: 'phone' }),
        409,
        'identity_mode_in_use',
      );
      assertProblem(
        await call('PATCH', `${stores}/${made.id}?force=maybe`, { identity_mode: 'phone' }),
        422,
        'validation_failed',
      );
      assert.equal((await call('GET', `${stores}/${made.id}`)).body.identity_mode, 'email');
      const forced = await call('PATCH', `${stores}/${made.id}?force=true`, { identity_mode: 'phone' });
      assert.equal(forced.status, 200, JSON.stringify(forced.body));
      assert.equal(forced.body.identity_mode, 'phone');
    });
  });

  describe('hosts', () => {
    test("added and removed; a host moves from one store to another; another store's host is 409", async () => {
      const { t, call, create } = await startAdmin(harness);
      const a = await create({ slug: 'shop-a', name: 'A', hosts: ['a.example'] });
      const b = await create({ slug: 'shop-b', name: 'B', hosts: ['b.example'] });
      assertProblem(await call('POST', `${stores}/${b.id}/hosts`, { host: 'A.example' }), 409, 'host_taken');
      assertProblem(await call('POST', `${stores}/${b.id}/hosts`, { host: 'a.example:80' }), 422, 'validation_failed');
      assertProblem(await call('DELETE', `${stores}/${b.id}/hosts/a.example`), 404, 'not_found');
      const shared = storeSide(t, a.id, 'shop-a', 'shared.example');
      assertProblem(await shared.post(`${auth}/register`, registration()), 404, 'store_not_found');

      const added = await call('POST', `${stores}/${a.id}/hosts`, { host: 'Shared.Example' });
      assert.equal(added.status, 201);
      assert.deepEqual(added.body.hosts, ['a.example', 'shared.example']);
      const onA = await registerIn(shared);
      // The move: off A, onto B. The host then names B, where A's customer is unknown.
      assert.deepEqual((await call('DELETE', `${stores}/${a.id}/hosts/shared.example`)).body.hosts, ['a.example']);
      const moved = await call('POST', `${stores}/${b.id}/hosts`, { host: 'shared.example' });
      assert.deepEqual(moved.body.hosts, ['b.example', 'shared.example']);
      const onB = storeSide(t, b.id, 'shop-b', 'shared.example');
      const login = await onB.post(`${auth}/login`, { identity: onA.identity, password: onA.password });
      assertProblem(login, 401, 'unauthenticated');
      await t.services.background.drain();
      const changes = await t.db.query<{ store_id: string; details: Record<string, string> }>(
        "SELECT store_id, details FROM audit_events WHERE event = 'store.changed' ORDER BY id",
      );
      assert.deepEqual(
        changes.map((row) => [row.store_id, row.details['host_added'] ?? `-${row.details['host_removed']}`]),
        [
          [a.id, 'shared.example'],
          [a.id, '-shared.example'],
          [b.id, 'shared.example'],
        ],
      );
    });
  });

  describe('customers', () => {
    test('find a customer by identity in this store only, with live sessions counted; sign them out everywhere', async () => {
      const { t, call, create } = await startAdmin(harness);
      const a = await create({ slug: 'shop-a', name: 'A', hosts: ['a.example'] });
      const b = await create({ slug: 'shop-b', name: 'B', hosts: ['b.example'] });
      const sideA = storeSide(t, a.id, 'shop-a', 'a.example');
      const customer = await registerIn(sideA, { email: 'Ada@Example.com' });
      await verifyIn(sideA, customer.identity);
      const first = await signedInIn(sideA, customer.identity, customer.password);
      await signedInIn(sideA, customer.identity, customer.password);

      const found = await call(
        'GET',
        `${stores}/${a.id}/customers?identity=${encodeURIComponent(' ADA@example.com ')}`,
      );
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.equal(found.body.customers.length, 1);
      assert.equal(found.body.customers[0].id, customer.id);
      assert.equal(found.body.customers[0].identity.value, 'ada@example.com');
      const one = `${stores}/${a.id}/customers/${customer.id}`;
      assert.equal((await call('GET', one)).body.session_count, 2);
      const elsewhere = await call('GET', `${stores}/${b.id}/customers?identity=ada@example.com`);
      assert.deepEqual(elsewhere.body, { customers: [], next_cursor: null });
      assertProblem(await call('GET', `${stores}/${b.id}/customers/${customer.id}`), 404, 'not_found');

      assertProblem(await call('POST', `${stores}/${b.id}/customers/${customer.id}/revoke-sessions`), 404, 'not_found');
      assertProblem(await call('POST', `${stores}/${a.id}/customers/not-an-id/revoke-sessions`), 404, 'not_found');
      const revoked = await call('POST', `${stores}/${a.id}/customers/${customer.id}/revoke-sessions`);
      assert.deepEqual(revoked.body, { count: 2 });
      assertProblem(await sideA.get(`${auth}/session`, withSession(first.session)), 401, 'unauthenticated');
      assert.equal((await call('GET', one)).body.session_count, 0);
      await t.services.background.drain();
      const rows = await t.db.query<{ event: string; customer_id: string; details: Record<string, string> }>(
        "SELECT event, customer_id, details FROM audit_events WHERE store_id = $1 AND details->>'by' = 'admin' ORDER BY id",
        [a.id],
      );
      assert.deepEqual(
        rows.map((row) => [row.event, row.customer_id, row.details['token']]),
        [
          ['store.created', null, tokenIdOf(adminToken)],
          ['customer.looked_up', customer.id, tokenIdOf(adminToken)],
          ['customer.looked_up', customer.id, tokenIdOf(adminToken)],
          ['session.revoked', customer.id, tokenIdOf(adminToken)],
          ['customer.looked_up', customer.id, tokenIdOf(adminToken)],
        ],
      );
    });
  });

  test('delete: 202, its signed-in customers meet 404 store_not_found, its slug and hosts are free, and the erasure leaves nothing', async () => {
    const { t, call, create } = await startAdmin(harness);
    const keep = await create({ slug: 'keep', name: 'Keep', hosts: ['keep.example'] });
    const gone = await create({ slug: 'gone', name: 'Gone', hosts: ['gone.example'] });
    const sides = [storeSide(t, keep.id, 'keep', 'keep.example'), storeSide(t, gone.id, 'gone', 'gone.example')];
    const sessions: string[] = [];
    for (const side of sides) {
      const customer = await registerIn(side, { email: 'same@example.com' });
      await verifyIn(side, customer.identity);
      sessions.push((await signedInIn(side, customer.identity, customer.password)).session);
    }
    const keepBefore = await rowsOf(t, keep.id);

    const deleted = await call('DELETE', `${stores}/gone`);
    assert.equal(deleted.status, 202);
    assert.deepEqual(deleted.body, { id: gone.id, slug: 'gone', status: 'deleted' });
    assertProblem(await sides[1]!.get(`${auth}/session`, withSession(sessions[1]!)), 404, 'store_not_found');
    assertProblem(await call('GET', `${stores}/${gone.id}`), 404, 'store_not_found');
    assertProblem(await call('DELETE', `${stores}/${gone.id}`), 404, 'store_not_found');
    const again = await create({ slug: 'gone', name: 'Gone again', hosts: ['gone.example'] });
    assert.notEqual(again.id, gone.id);

    await eraseDeletedStores(t.db, { batchSize: 2, stopping: () => false });
    assert.deepEqual(await rowsOf(t, gone.id), Object.fromEntries(storeTables.map((table) => [table, 0])));
    assert.deepEqual(await rowsOf(t, keep.id), keepBefore, 'the other store keeps everything');
    assert.equal((await sides[0]!.get(`${auth}/session`, withSession(sessions[0]!))).status, 200);
  });

  test('1,000 calls a minute per token: past them 429, while another token still works', async () => {
    const counters = new SpentCounters(limits.adminCalls.limit);
    const { t, call } = await startAdmin(harness, { counters });
    counters.key = counterKey(t.services.keys.counters, limits.adminCalls, tokenIdOf(adminToken));
    const refused = await call('GET', stores);
    assertProblem(refused, 429, 'rate_limited');
    assert.equal(refused.headers['ratelimit-limit'], String(limits.adminCalls.limit));
    assert.equal((await call('GET', stores, undefined, { token: nextAdminToken })).status, 200);
  });

  test('the admin document lists every call, lints clean, and the customer port serves none of them', async () => {
    const { t, call } = await startAdmin(harness);
    const document = (await call('GET', '/admin/v1/openapi.json')).body;
    assert.deepEqual(Object.keys(document.paths).sort(), [
      '/admin/v1/sessions/introspect',
      '/admin/v1/stores',
      '/admin/v1/stores/{id}',
      '/admin/v1/stores/{id}/audit',
      '/admin/v1/stores/{id}/customers',
      '/admin/v1/stores/{id}/customers/export',
      '/admin/v1/stores/{id}/customers/import',
      '/admin/v1/stores/{id}/customers/{customer_id}',
      '/admin/v1/stores/{id}/customers/{customer_id}/block',
      '/admin/v1/stores/{id}/customers/{customer_id}/invite',
      '/admin/v1/stores/{id}/customers/{customer_id}/remove-two-factor',
      '/admin/v1/stores/{id}/customers/{customer_id}/require-password-reset',
      '/admin/v1/stores/{id}/customers/{customer_id}/revoke-sessions',
      '/admin/v1/stores/{id}/customers/{customer_id}/unblock',
      '/admin/v1/stores/{id}/hosts',
      '/admin/v1/stores/{id}/hosts/{host}',
      '/admin/v1/stores/{id}/imports/{import_id}',
      '/admin/v1/stores/{id}/logo',
      '/admin/v1/stores/{id}/outbox',
      '/admin/v1/stores/{id}/outbox/{message_id}/retry',
      '/admin/v1/stores/{id}/password-hook',
      '/admin/v1/stores/{id}/providers',
      '/admin/v1/stores/{id}/providers/{provider}',
      '/admin/v1/stores/{id}/templates',
      '/admin/v1/stores/{id}/templates/{message}/{language}',
      '/admin/v1/stores/{id}/templates/{message}/{language}/preview',
      '/admin/v1/stores/{id}/webhooks',
      '/admin/v1/stores/{id}/webhooks/{webhook_id}',
      '/admin/v1/stores/{id}/webhooks/{webhook_id}/deliveries',
      '/admin/v1/stores/{id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
      '/admin/v1/stores/{id}/webhooks/{webhook_id}/rotate-secret',
      '/admin/v1/stores/{id}/webhooks/{webhook_id}/test',
    ]);
    assert.deepEqual(Object.keys(document.paths['/admin/v1/stores'].post.responses).sort(), [
      '201',
      '401',
      '403',
      '409',
      '413',
      '415',
      '422',
      '429',
      '500',
      '503',
    ]);
    await assertRedoclyClean(document);
    const customerPort = toReply(
      await t.app.inject({ method: 'GET', url: stores, headers: { authorization: `Bearer ${adminToken}` } }),
    );
    assertProblem(customerPort, 404, 'not_found');
  });
});

/** A request to a running service with a Host header of its own (fetch may not set one). */
function hostRequest(
  base: string,
  host: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const request = http.request(
      url,
      { method, headers: { host, ...(payload && { 'content-type': 'application/json' }) } },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () =>
          resolve({ status: response.statusCode!, body: text === '' ? null : JSON.parse(text) }),
        );
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

describe('a store deleted through the admin API of a running service', () => {
  test('a restart before its erasure ends: the next start erases the rest', async () => {
    const backend = await serviceBackend('admin-delete');
    const env = { ...backend.env, ADMIN_PORT: '0', ADMIN_TOKENS: adminToken, LOG_LEVEL: 'info' };
    const admin = (service: { adminUrl: string | undefined }, method: string, path: string, body?: unknown) =>
      fetch(`${service.adminUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${adminToken}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    try {
      // The first run's janitor never passes: the service stops with the deletion begun, not ended.
      const first = await startService({ ...env, JANITOR_INTERVAL_SECONDS: '0' });
      try {
        // The first store on a host of its own, or as the only store left it would answer every host.
        assert.equal((await admin(first, 'POST', `${stores}/default/hosts`, { host: 'a.example' })).status, 201);
        const created = await admin(first, 'POST', stores, { slug: 'gone', name: 'Gone', hosts: ['gone.example'] });
        assert.equal(created.status, 201);
        const storeId = ((await created.json()) as { id: string }).id;
        const customer = registration({ email: 'gone@example.com' });
        const registered = await hostRequest(first.url, 'gone.example', 'POST', `${auth}/register`, customer);
        assert.equal(registered.status, 201, JSON.stringify(registered.body));
        const deleted = await admin(first, 'DELETE', `${stores}/${storeId}`);
        assert.equal(deleted.status, 202);
        const after = await hostRequest(first.url, 'gone.example', 'POST', `${auth}/login`, {
          identity: customer.email,
          password: customer.password,
        });
        assert.equal(after.status, 404);
        assert.equal(after.body.code, 'store_not_found');
      } finally {
        await first.stop();
      }

      // The next start's janitor passes at once and erases what the store held.
      const second = await startService(env);
      try {
        const deadline = Date.now() + 30_000;
        let erased: Record<string, number> | undefined;
        while (erased === undefined) {
          erased = second.logs.find((line) => line['msg'] === 'janitor erased deleted stores')?.['erased'] as
            Record<string, number> | undefined;
          assert.ok(
            Date.now() < deadline,
            `the janitor of the next start erased nothing in 30 s; its warnings: ${JSON.stringify(
              second.logs.filter((line) => Number(line['level']) >= 40),
            )}`,
          );
          if (erased === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.equal(erased['customers'], 1);
      } finally {
        await second.stop();
      }
      // Nothing of it is left for a later pass.
      const pruned = JSON.parse(await runCliOk(['prune'], backend.env)) as Record<string, unknown>;
      assert.equal(pruned['erased_stores'], undefined);
    } finally {
      await backend.remove();
    }
  });
});
