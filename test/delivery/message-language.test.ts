import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MessagePurpose } from '../../src/delivery/message.js';
import { fitsOneSmsPart, messageLanguage, renderMessage, type TemplateInput } from '../../src/delivery/templates.js';
import { updateStore, type StoreChanges } from '../../src/store/store.js';
import { codeIn, assertProblem } from '../helpers/assertions.js';
import { loginFrom, withSession } from '../helpers/customers.js';
import { auth, registration, useHarness, type TestApp } from '../helpers/harness.js';

const purposes: MessagePurpose[] = [
  'verification',
  'password_reset',
  'invitation',
  'sign_in',
  'password_changed',
  'new_sign_in',
  'account_deleted',
  'identity_change',
  'identity_taken',
  'identity_changed',
  'passkey_added',
  'provider_linked',
];

/** The longest values each kind of message carries: a 20-character store name, the longest device. */
function longest(purpose: MessagePurpose, language: string, lifetimeMinutes = 10): TemplateInput {
  return {
    channel: 'sms',
    purpose,
    language,
    storeName: 'Twenty Characters Co',
    code: { value: '123456', lifetimeMinutes },
    signedOut: 'other_devices',
    maskedIdentity: '+971•••••••45',
    signIn: {
      at: new Date('2026-11-23T22:24:00Z'),
      device: 'Samsung Internet on unknown system',
      address: 'ffff:ffff:ffff::/48',
    },
  };
}

const codePurposes = new Set<MessagePurpose>([
  'verification',
  'password_reset',
  'invitation',
  'sign_in',
  'identity_change',
]);
const day = 24 * 60;

/** The language recorded for a customer's messages. */
async function recordedLocale(t: TestApp, id: string): Promise<string | null> {
  const [row] = await t.db.query<{ locale: string | null }>('SELECT locale FROM customers WHERE id = $1', [id]);
  assert.ok(row);
  return row.locale;
}

describe('messages in the customer’s language', () => {
  test('every Arabic SMS fits one UCS-2 part (70 UTF-16 units) and every English one 160, for a 20-character store name', () => {
    assert.equal('Twenty Characters Co'.length, 20);
    for (const purpose of purposes) {
      // An invitation's code lives for days (a week), the others' for minutes.
      for (const minutes of purpose === 'invitation'
        ? [day, 2 * day, 3 * day, 7 * day, 11 * day]
        : [1, 2, 10, 15, 60]) {
        const arabic = renderMessage(longest(purpose, 'ar', minutes)).text;
        assert.ok(arabic.length <= 70, `ar ${purpose} (${minutes} min) is ${arabic.length} units: ${arabic}`);
        assert.match(arabic, /[\u0600-\u06ff]/, `ar ${purpose} is Arabic`);
        assert.ok(arabic.includes('Twenty Characters Co'), `ar ${purpose} names the store`);
        const english = renderMessage(longest(purpose, 'en', minutes)).text;
        assert.ok(
          fitsOneSmsPart(english),
          `en ${purpose} (${minutes} min) is ${english.length} characters: ${english}`,
        );
        assert.match(english, /^[\x20-\x7e]+$/, `en ${purpose} is GSM-7, 160 to a part: ${english}`);
        assert.doesNotMatch(english + arabic, /\n/, 'one line');
        if (codePurposes.has(purpose)) {
          // The code stays left to right inside the Arabic text: isolated, whole.
          assert.ok(arabic.includes('\u2066123456\u2069'), `ar ${purpose} carries the code isolated: ${arabic}`);
          assert.equal(codeIn(english), '123456');
        }
      }
    }
  });

  test('an SMS is measured as phones send it: GSM-7 to 160 septets, else UCS-2 to 70 units', () => {
    assert.ok(fitsOneSmsPart('a'.repeat(160)));
    assert.ok(!fitsOneSmsPart('a'.repeat(161)));
    assert.ok(!fitsOneSmsPart(`${'a'.repeat(150)}[]{}~€`), 'the extension table counts two septets each');
    assert.ok(fitsOneSmsPart(`${'a'.repeat(148)}[]{}~€`));
    // One bullet (a masked number) or one Arabic letter makes the whole text UCS-2.
    assert.ok(!fitsOneSmsPart(`+44•••••••58 ${'a'.repeat(60)}`));
    assert.ok(fitsOneSmsPart(`+44•••••••58 ${'a'.repeat(50)}`));
    assert.ok(!fitsOneSmsPart(`${'a'.repeat(70)}ب`));
  });

  test('an Arabic email is right to left, with the code kept left to right and stood out, and the store name isolated', () => {
    const email = renderMessage({ ...longest('verification', 'ar'), channel: 'email', storeName: 'Corner & Co' });
    assert.equal(email.language, 'ar');
    assert.match(email.html, /^<!doctype html><html lang="ar" dir="rtl">/);
    assert.ok(email.html.includes('<strong dir="ltr" style="font-size:1.4em;letter-spacing:0.2em">123456</strong>'));
    assert.ok(email.html.includes('<bdi>Corner &#38; Co</bdi>'), email.html);
    assert.ok(email.subject.startsWith('رمز التحقق'), email.subject);
    assert.ok(email.subject.includes('\u2066123456\u2069'), email.subject);
    assert.ok(email.text.startsWith('مرحبًا،\n'), email.text);
    assert.ok(email.text.includes('10 دقائق'), 'ten minutes, in the plural Arabic uses for 3 to 10');
    assert.ok(renderMessage({ ...longest('verification', 'ar', 15), channel: 'email' }).text.includes('15 دقيقة'));
    assert.ok(renderMessage({ ...longest('verification', 'ar', 2), channel: 'email' }).text.includes('دقيقتين'));
    const english = renderMessage({ ...longest('verification', 'en'), channel: 'email' });
    assert.equal(english.language, 'en');
    assert.match(english.html, /^<!doctype html><html lang="en" dir="ltr">/);
    assert.doesNotMatch(
      english.text + english.subject + english.html,
      /[\u2066-\u2069]|<bdi/,
      'no isolates in English',
    );
    assert.equal(english.subject, '123456 is your Twenty Characters Co verification code');
  });

  test('a customer’s language is their locale while the store speaks it, else the store’s default', () => {
    const store = { languages: ['en', 'ar'], defaultLanguage: 'en' };
    assert.equal(messageLanguage(store, 'ar'), 'ar');
    assert.equal(messageLanguage(store, null), 'en');
    assert.equal(messageLanguage({ languages: ['en'], defaultLanguage: 'en' }, 'ar'), 'en', 'dropped by the store');
    assert.equal(messageLanguage({ languages: ['en', 'ar'], defaultLanguage: 'ar' }, null), 'ar');
  });
});

describe('the customer’s recorded language, over HTTP', () => {
  const harness = useHarness();

  async function configure(t: TestApp, changes: StoreChanges) {
    const result = await updateStore(t.db, t.clock, changes);
    assert.ok(result.ok, JSON.stringify(result));
    t.services.store.invalidate();
  }

  async function bilingual(): Promise<TestApp> {
    const t = await harness.start();
    await configure(t, { languages: { languages: ['en', 'ar'], defaultLanguage: 'en' } });
    return t;
  }

  async function lastMessage(t: TestApp, purpose: MessagePurpose) {
    await t.deliver();
    const message = t.outbox.sent.filter((m) => m.purpose === purpose).at(-1);
    assert.ok(message, `a ${purpose} message was sent`);
    return message;
  }

  test('registering with Accept-Language: ar records ar, and the verification code goes out in Arabic', async () => {
    const t = await bilingual();
    const registered = await t.post(`${auth}/register`, registration(), {
      'accept-language': 'ar-EG,ar;q=0.9,en;q=0.5',
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    assert.equal(await recordedLocale(t, registered.body.id), 'ar');
    assert.ok(!('locale' in registered.body), 'the Customer resource keeps its fields');
    const message = await lastMessage(t, 'verification');
    assert.equal(message.content.language, 'ar');
    assert.ok(message.content.subject.startsWith('رمز التحقق'), message.content.subject);
    assert.ok(message.content.text.includes('رمز التحقق الخاص بك'), message.content.text);
    assert.match(message.content.html, /<html lang="ar" dir="rtl">/);
    const verified = await t.post(`${auth}/verify`, {
      identity: 'ada@example.com',
      code: codeIn(message.content.text),
    });
    assert.equal(verified.status, 200);
    assert.equal(await recordedLocale(t, registered.body.id), 'ar');
  });

  test('a locale field wins over Accept-Language; a language the store lacks is a 422 on locale', async () => {
    const t = await bilingual();
    const refused = await t.post(`${auth}/register`, registration({ locale: 'fr' }), { 'accept-language': 'ar' });
    assertProblem(refused, 422, 'validation_failed');
    assert.deepEqual(Object.keys(refused.body.errors), ['locale']);
    assertProblem(await t.post(`${auth}/register`, registration({ locale: 7 })), 422, 'validation_failed');

    const registered = await t.post(`${auth}/register`, registration({ locale: 'ar' }), { 'accept-language': 'en-US' });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    assert.equal(await recordedLocale(t, registered.body.id), 'ar');
    assert.equal((await lastMessage(t, 'verification')).content.language, 'ar');
  });

  test('an Accept-Language that asks for none of the store’s languages records none: the store’s default', async () => {
    const t = await bilingual();
    const registered = await t.post(`${auth}/register`, registration(), { 'accept-language': 'fr-FR, de;q=0.8' });
    assert.equal(await recordedLocale(t, registered.body.id), null);
    assert.equal((await lastMessage(t, 'verification')).content.language, 'en');
    await configure(t, { languages: { languages: ['en', 'ar'], defaultLanguage: 'ar' } });
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/verification/resend`, { identity: 'ada@example.com' })).status, 202);
    assert.equal((await lastMessage(t, 'verification')).content.language, 'ar', 'follows the new default');
  });

  test('POST /profile changes the language of the next message; the session, the export and a dropped language agree', async () => {
    const t = await bilingual();
    const body = registration({ locale: 'ar' });
    assert.equal((await t.post(`${auth}/register`, body)).status, 201);
    const login = await loginFrom(t, '10.91.0.1', body.email, body.password);
    assert.equal(login.status, 200, login.code);
    const session = withSession(login.cookie!);
    // One export a minute per customer: each look is a minute after the last.
    const exportedLocale = async () => {
      t.clock.advance(61);
      const exported = await t.get(`${auth}/account/export`, session);
      assert.equal(exported.status, 200, JSON.stringify(exported.body));
      return exported.body.customer.locale;
    };
    assert.equal(await exportedLocale(), 'ar');

    const wrong = await t.post(`${auth}/profile`, { locale: 'de' }, session);
    assertProblem(wrong, 422, 'validation_failed');
    assert.deepEqual(Object.keys(wrong.body.errors), ['locale']);

    const changed = await t.post(`${auth}/profile`, { locale: 'en' }, session);
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal(await exportedLocale(), 'en');
    assert.equal(changed.body.name, 'Ada Lovelace', 'the name stays when only the locale is sent');
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: body.email })).status, 202);
    const reset = await lastMessage(t, 'password_reset');
    assert.equal(reset.content.language, 'en');
    assert.match(reset.content.subject, /^\d{6} is your My Store password reset code$/);

    assert.equal((await t.post(`${auth}/profile`, { locale: 'ar' }, session)).status, 200);
    assert.equal(await exportedLocale(), 'ar');

    // The store stops speaking Arabic: the customer's messages fall back to its default.
    await configure(t, { languages: { languages: ['en'], defaultLanguage: 'en' } });
    t.clock.advance(61);
    assert.equal((await t.post(`${auth}/password/forgot`, { identity: body.email })).status, 202);
    assert.equal((await lastMessage(t, 'password_reset')).content.language, 'en');

    const cleared = await t.post(`${auth}/profile`, { locale: null }, withSession(login.cookie!));
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    assert.equal(await exportedLocale(), null);
  });
});
