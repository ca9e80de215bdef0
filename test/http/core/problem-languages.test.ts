import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validationErrors } from '../../../src/http/core/validation.js';
import { problemCatalogue, problemEntry } from '../../../src/http/core/problems.js';
import { passkeyLoginRefusedDetail } from '../../../src/http/passkeys/sign-in.js';
import { loginRefusedDetail } from '../../../src/http/sign-in/password.js';
import { catalogue } from '../../../src/i18n/strings.js';
import { updateStore, type StoreChanges } from '../../../src/store/store.js';
import { assertProblem } from '../../helpers/assertions.js';
import { auth, registeredCustomer, useHarness, type Reply, type TestApp } from '../../helpers/harness.js';
import { twoStores } from '../../helpers/stores.js';

const arabic = /[\u0600-\u06ff]/u;

/** A body refused on every field at once: a blank name, a bad email, a short password, no match. */
const badRegistration = { name: ' ', email: 'not an email', password: 'short', password_confirmation: 'other' };

/** The English answer to `badRegistration`, word for word as before languages came. */
const englishErrors = {
  name: ['Is required.'],
  email: ['Must be a valid email address.'],
  password: ['Must be at least 8 characters.', 'Must contain at least one number.'],
  password_confirmation: ['Must match the password.'],
};

function assertLanguage(reply: Reply, language: string): void {
  assert.equal(reply.headers['content-language'], language, JSON.stringify(reply.body));
  const vary = String(reply.headers['vary'] ?? '');
  assert.ok(
    vary.split(',').some((name) => name.trim().toLowerCase() === 'accept-language'),
    `Vary: ${vary}`,
  );
}

describe('problem documents in the customer’s language', () => {
  const harness = useHarness();

  async function configure(t: TestApp, changes: StoreChanges) {
    const result = await updateStore(t.db, t.clock, changes);
    assert.ok(result.ok, JSON.stringify(result));
    t.services.store.invalidate();
  }

  async function bilingual(defaultLanguage = 'en'): Promise<TestApp> {
    const t = await harness.start();
    await configure(t, { languages: { languages: ['en', 'ar'], defaultLanguage } });
    return t;
  }

  const register = (t: TestApp, acceptLanguage?: string) =>
    t.post(
      `${auth}/register`,
      badRegistration,
      acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage },
    );

  test('a 422 asked for in Arabic: Arabic title, detail and field messages, the same code and fields', async () => {
    const t = await bilingual();
    const reply = await register(t, 'ar');
    assertProblem(reply, 422, 'validation_failed');
    assertLanguage(reply, 'ar');
    assert.equal(reply.body.title, 'فشل التحقق من صحة البيانات');
    assert.equal(reply.body.detail, 'في الطلب حقول ناقصة أو غير صالحة.');
    assert.deepEqual(reply.body.errors, {
      name: ['هذا الحقل مطلوب.'],
      email: ['يجب أن يكون عنوان بريد إلكتروني صالحًا.'],
      // Eight is counted with the plural form Arabic uses for three to ten.
      password: ['يجب ألا يقل طوله عن 8 أحرف.', 'يجب أن يحتوي على رقم واحد على الأقل.'],
      password_confirmation: ['يجب أن يطابق كلمة المرور.'],
    });
  });

  test('a language the store lists but the service no longer ships is dropped: the page and the problems answer', async () => {
    const t = await harness.start();
    // As if locales/fr.json had been removed after the store listed it (the fields refuse it now).
    await configure(t, { languages: { languages: ['fr', 'ar'], defaultLanguage: 'fr' } });
    const page = await t.get('/', { 'accept-language': 'fr' });
    assert.equal(page.status, 200);
    assert.equal(page.headers['content-language'], 'ar');
    assert.equal((await t.get('/?lang=fr')).status, 200);
    const reply = await register(t, 'fr');
    assertLanguage(reply, 'ar');
    assert.deepEqual(reply.body.errors.name, ['هذا الحقل مطلوب.']);
  });

  test('the same request without Accept-Language is English, word for word as before', async () => {
    const t = await bilingual();
    const reply = await register(t);
    assertProblem(reply, 422, 'validation_failed');
    assertLanguage(reply, 'en');
    assert.equal(reply.body.title, problemEntry('validation_failed').title);
    assert.equal(reply.body.detail, problemEntry('validation_failed').detail);
    assert.deepEqual(reply.body.errors, englishErrors);
  });

  test('schema messages with a number are counted in Arabic too', async () => {
    const t = await bilingual();
    const reply = await t.post(
      `${auth}/register`,
      { name: 'x'.repeat(121), email: 5, password: 'x'.repeat(300), password_confirmation: 'x' },
      { 'accept-language': 'ar' },
    );
    assertProblem(reply, 422, 'validation_failed');
    assert.deepEqual(reply.body.errors.email, ['يجب أن يكون نصًا.']);
    for (const messages of Object.values(reply.body.errors as Record<string, string[]>)) {
      for (const message of messages) assert.match(message, arabic, message);
    }
  });

  test('ar-EG asks for ar; fr asks for nothing the store speaks and gets its default', async () => {
    const t = await bilingual();
    const egyptian = await register(t, 'ar-EG,ar;q=0.9,en;q=0.5');
    assertLanguage(egyptian, 'ar');
    assert.equal(egyptian.body.title, 'فشل التحقق من صحة البيانات');
    const french = await register(t, 'fr-FR,fr;q=0.9');
    assertLanguage(french, 'en');
    assert.deepEqual(french.body.errors, englishErrors);

    await configure(t, { languages: { languages: ['en', 'ar'], defaultLanguage: 'ar' } });
    const frenchOnArabicStore = await register(t, 'fr');
    assertLanguage(frenchOnArabicStore, 'ar');
    assert.deepEqual(frenchOnArabicStore.body.errors.name, ['هذا الحقل مطلوب.']);
    assertLanguage(await register(t, 'en-GB'), 'en');
  });

  test('a store that speaks only English ignores a request for Arabic', async () => {
    const t = await harness.start();
    const reply = await register(t, 'ar');
    assertProblem(reply, 422, 'validation_failed');
    assertLanguage(reply, 'en');
    assert.deepEqual(reply.body.errors, englishErrors);
  });

  test('a 401 in Arabic, with the login’s own detail', async () => {
    const t = await bilingual();
    const customer = await registeredCustomer(t);
    const refused = await t.post(
      `${auth}/login`,
      { identity: customer.identity, password: 'not the password 1' },
      { 'accept-language': 'ar' },
    );
    assertProblem(refused, 401, 'unauthenticated');
    assertLanguage(refused, 'ar');
    assert.equal(refused.body.title, 'لم يتم تسجيل الدخول');
    assert.equal(refused.body.detail, 'بيانات تسجيل الدخول أو كلمة المرور غير صحيحة.');

    const signedOut = await t.post(`${auth}/logout`, undefined, { 'accept-language': 'ar' });
    assertProblem(signedOut, 401, 'unauthenticated');
    assert.equal(signedOut.body.detail, 'سجّل الدخول للمتابعة.');
  });

  test('a 419 and a 429 in Arabic, their headers kept', async () => {
    const t = await bilingual();
    const csrf = await t.post(`${auth}/register`, {}, { 'sec-fetch-site': 'same-origin', 'accept-language': 'ar' });
    assertProblem(csrf, 419, 'csrf_token_mismatch');
    assertLanguage(csrf, 'ar');
    assert.equal(csrf.body.title, 'رمز \u2068CSRF\u2069 غير مطابق');
    assert.match(csrf.body.detail, /\u2068X-XSRF-TOKEN\u2069/u);

    const resend = () =>
      t.post(`${auth}/verification/resend`, { identity: 'nobody@example.com' }, { 'accept-language': 'ar' });
    assert.equal((await resend()).status, 202);
    const limited = await resend();
    assertProblem(limited, 429, 'rate_limited');
    assertLanguage(limited, 'ar');
    assert.equal(limited.body.title, 'طلبات كثيرة جدًا');
    assert.equal(limited.body.detail, 'أرسلت طلبات كثيرة جدًا؛ حاول مرة أخرى لاحقًا.');
    assert.ok(Number(limited.headers['retry-after']) > 0);
  });

  test('Vary keeps what was there: a cross-origin refusal varies by Origin and Accept-Language', async () => {
    const t = await bilingual();
    const reply = await t.post(`${auth}/register`, badRegistration, {
      origin: 'https://elsewhere.example',
      'accept-language': 'ar',
    });
    assertProblem(reply, 403, 'untrusted_origin');
    assertLanguage(reply, 'ar');
    assert.equal(reply.body.detail, 'لا تُقبل الطلبات الواردة من هذا المصدر.');
    const vary = String(reply.headers['vary']).toLowerCase();
    assert.match(vary, /\borigin\b/, vary);
    assert.match(vary, /\baccept-language\b/, vary);
  });

  test('a host no store answers on is told so in English, whatever was asked for', async () => {
    const t = await bilingual();
    await twoStores(t);
    const reply = await t.post(`${auth}/register`, badRegistration, {
      host: 'nowhere.shop.test',
      'accept-language': 'ar',
    });
    assertProblem(reply, 404, 'store_not_found');
    assert.equal(reply.headers['content-language'], 'en');
    // No store, no languages to choose from: the answer does not vary by what was asked.
    assert.doesNotMatch(String(reply.headers['vary'] ?? ''), /accept-language/i);
    assert.equal(reply.body.detail, problemEntry('store_not_found').detail);
  });
});

describe('the strings of problem documents', () => {
  test('every code of the catalogue has a title and a detail in every shipped language', () => {
    for (const code of Object.keys(problemCatalogue)) {
      for (const language of catalogue.languages) {
        const section = catalogue.section(language, `problem.${code}`);
        for (const part of ['title', 'detail']) {
          assert.equal(typeof section[part], 'string', `${language}: problem.${code}.${part}`);
          assert.notEqual(section[part], '', `${language}: problem.${code}.${part}`);
        }
      }
    }
    assert.equal(catalogue.say('en', loginRefusedDetail), 'The identity or password is not correct.');
    assert.equal(catalogue.say('en', passkeyLoginRefusedDetail), 'The passkey could not sign you in.');
  });

  test('a field refused for its JSON type is named in words of the answer’s language, never the schema’s', () => {
    for (const type of ['string', 'number', 'integer', 'boolean', 'array', 'object', 'null', 'string,null', 'x']) {
      const [message] = validationErrors([
        { keyword: 'type', instancePath: '/field', schemaPath: '', params: { type }, message: '' },
      ])['field']!;
      assert.match(catalogue.say('ar', message!), arabic, type);
      assert.doesNotMatch(catalogue.say('en', message!), /\ba [aeiou]/, type);
    }
  });
});
