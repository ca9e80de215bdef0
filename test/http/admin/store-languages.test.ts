import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { tokenIdOf } from '../../../src/http/admin/tokens.js';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';
import { toReply, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';

/**
 * A store's languages through the admin API: `languages` and `default_language` on create and on
 * the merge patch, checked by the store's field rules, the default always one of the languages.
 */

const adminToken = 'admin-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const stores = '/admin/v1/stores';
const unknownXx = '"xx" is not a language this service speaks (ar, en)';

interface Admin {
  t: TestApp;
  call(method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown): Promise<Reply>;
  /** POST /stores that must answer 201: the store. */
  create(body: Record<string, unknown>): Promise<Record<string, any>>;
  /** PATCH /stores/{slug} that must answer 200: the store. */
  patch(slug: string, body: Record<string, unknown>): Promise<Record<string, any>>;
}

async function startAdmin(harness: ReturnType<typeof useHarness>): Promise<Admin> {
  const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
  const admin: FastifyInstance = await adminAppOf(t);
  const call: Admin['call'] = adminCaller(admin, adminToken);
  const expect = (status: number) => (reply: Reply) => {
    assert.equal(reply.status, status, JSON.stringify(reply.body));
    return reply.body;
  };
  return {
    t,
    call,
    create: (body) => call('POST', stores, body).then(expect(201)),
    patch: (slug, body) => call('PATCH', `${stores}/${slug}`, body).then(expect(200)),
  };
}

function assertRefused(reply: Reply, errors: Record<string, string[]>): void {
  assert.equal(reply.status, 422, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'validation_failed');
  assert.deepEqual(reply.body.errors, errors);
}

const languagesOf = (store: Record<string, any>) => [store.languages, store.default_language];

describe("a store's languages through the admin API", () => {
  const harness = useHarness();

  test('the admin listener answers operators in English whatever they ask, and says it does not vary', async () => {
    const { t, create } = await startAdmin(harness);
    await create({ slug: 'souk', name: 'Souk', languages: ['ar', 'en'] });
    const admin: FastifyInstance = await adminAppOf(t);
    const reply = toReply(
      await admin.inject({
        method: 'PATCH',
        url: `${stores}/souk`,
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', 'accept-language': 'ar' },
        payload: JSON.stringify({ languages: ['xx'] }),
      }),
    );
    assertRefused(reply, { languages: [unknownXx] });
    assert.equal(reply.body.title, 'Validation failed');
    assert.equal(reply.headers['content-language'], 'en');
    assert.doesNotMatch(String(reply.headers['vary'] ?? ''), /accept-language/i);
  });

  test('a store given none, and the first store made before languages, speak ["en"] with "en" by default', async () => {
    const { call, create } = await startAdmin(harness);
    assert.deepEqual(languagesOf((await call('GET', `${stores}/default`)).body), [['en'], 'en']);
    assert.deepEqual(languagesOf(await create({ slug: 'plain', name: 'Plain' })), [['en'], 'en']);
    const listed = (await call('GET', stores)).body.stores.map(languagesOf);
    assert.deepEqual(listed, [
      [['en'], 'en'],
      [['en'], 'en'],
    ]);
  });

  test('create takes languages (normalized, duplicates dropped) and a default, by default the first language', async () => {
    const { call, create } = await startAdmin(harness);
    const souk = await create({ slug: 'souk', name: 'Souk', languages: ['ar', ' EN', 'ar'] });
    assert.deepEqual(languagesOf(souk), [['ar', 'en'], 'ar']);
    const shop = await create({ slug: 'shop', name: 'Shop', languages: ['ar', 'en'], default_language: 'en' });
    assert.deepEqual(languagesOf(shop), [['ar', 'en'], 'en']);
    assert.deepEqual(languagesOf((await call('GET', `${stores}/shop`)).body), [['ar', 'en'], 'en']);
  });

  test('create refuses an unknown language, an empty list or a default outside the list, and makes nothing', async () => {
    const { call } = await startAdmin(harness);
    assertRefused(await call('POST', stores, { slug: 'a-shop', name: 'A', languages: ['en', 'xx'] }), {
      languages: [unknownXx],
    });
    assertRefused(await call('POST', stores, { slug: 'a-shop', name: 'A', languages: [] }), {
      languages: ['must name at least one language, such as en'],
    });
    assertRefused(await call('POST', stores, { slug: 'a-shop', name: 'A', default_language: 'ar' }), {
      default_language: [`"ar" is not one of the store's languages (en); give the languages with it`],
    });
    assertRefused(
      await call('POST', stores, { slug: 'a-shop', name: 'A', languages: ['en'], default_language: 'xx' }),
      { default_language: [unknownXx] },
    );
    assert.equal((await call('GET', `${stores}/a-shop`)).status, 404, 'nothing was made');
  });

  test('a patch sets both, and is audited naming them; the store answers them from then on', async () => {
    const { t, call, create, patch } = await startAdmin(harness);
    const made = await create({ slug: 'souk', name: 'Souk' });
    const changed = await patch('souk', { languages: ['en', 'ar'], default_language: 'ar' });
    assert.deepEqual(languagesOf(changed), [['en', 'ar'], 'ar']);
    assert.deepEqual((await call('GET', `${stores}/souk`)).body, changed);
    assert.equal(changed.name, 'Souk', 'left out: unchanged');
    await t.services.background.drain();
    const [audit] = await t.db.query<{ details: Record<string, string> }>(
      "SELECT details FROM audit_events WHERE store_id = $1 AND event = 'store.changed'",
      [made.id],
    );
    assert.deepEqual(audit?.details, {
      by: 'admin',
      token: tokenIdOf(adminToken),
      fields: 'default_language,languages',
    });
  });

  test("a patch of the default alone must name one of the store's current languages", async () => {
    const { call, create, patch } = await startAdmin(harness);
    await create({ slug: 'souk', name: 'Souk' });
    assertRefused(await call('PATCH', `${stores}/souk`, { default_language: 'ar' }), {
      default_language: [`"ar" is not one of the store's languages (en); give the languages with it`],
    });
    assertRefused(await call('PATCH', `${stores}/souk`, { default_language: 'xx' }), {
      default_language: [unknownXx],
    });
    assert.deepEqual(languagesOf(await patch('souk', { languages: ['en', 'ar'] })), [['en', 'ar'], 'en']);
    assert.deepEqual(languagesOf(await patch('souk', { default_language: 'ar' })), [['en', 'ar'], 'ar']);
  });

  test('languages that drop the current default are refused on default_language unless a new one comes with them', async () => {
    const { call, create, patch } = await startAdmin(harness);
    await create({ slug: 'souk', name: 'Souk', languages: ['ar', 'en'] });
    assertRefused(await call('PATCH', `${stores}/souk`, { languages: ['en'] }), {
      default_language: [`must be given: the store's default language, "ar", is not among the new languages (en)`],
    });
    assertRefused(await call('PATCH', `${stores}/souk`, { languages: ['en'], default_language: 'ar' }), {
      default_language: [`"ar" is not one of the store's languages (en)`],
    });
    assertRefused(await call('PATCH', `${stores}/souk`, { languages: ['xx'], name: ' ' }), {
      languages: [unknownXx],
      name: ['must be 1 to 120 characters, without control characters'],
    });
    const notAList = await call('PATCH', `${stores}/souk`, { languages: 'en' });
    assert.equal(notAList.status, 422);
    assert.deepEqual(Object.keys(notAList.body.errors), ['languages'], 'a list, as JSON');
    assert.deepEqual(languagesOf((await call('GET', `${stores}/souk`)).body), [['ar', 'en'], 'ar'], 'unchanged');
    assert.deepEqual(languagesOf(await patch('souk', { languages: ['en'], default_language: 'en' })), [['en'], 'en']);
  });

  test('a patch dropping a language racing one making it the default: one wins, and the default stays spoken', async () => {
    const { call, create } = await startAdmin(harness);
    await create({ slug: 'souk', name: 'Souk', languages: ['en', 'ar'], default_language: 'en' });
    const replies = await Promise.all([
      call('PATCH', `${stores}/souk`, { languages: ['en'] }),
      call('PATCH', `${stores}/souk`, { default_language: 'ar' }),
    ]);
    assert.deepEqual(
      replies.map((reply) => reply.status).sort(),
      [200, 422],
      JSON.stringify(replies.map((r) => r.body)),
    );
    const [languages, defaultLanguage] = languagesOf((await call('GET', `${stores}/souk`)).body);
    assert.ok(languages.includes(defaultLanguage), `${defaultLanguage} is one of ${languages}`);
  });
});
