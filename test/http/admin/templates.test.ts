import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';
import { registeredCustomer, useHarness, type Reply } from '../../helpers/harness.js';
import { resetWithCode } from '../../helpers/customers.js';
import { registerIn, twoStores } from '../../helpers/stores.js';

/** A store's own words for its emails: saved through the admin API, checked, previewed, sent. */

const adminToken = 'admin-token-MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM';

const verification = {
  subject: 'Your {{store_name}} code: {{code}}',
  text: 'Hello from {{store_name}}!\nYour code is {{code}}; it works for {{minutes}} minutes.',
  html: '<h1>{{store_name}}</h1>\n<p>Your code is <b>{{code}}</b> ({{minutes}} minutes).</p>',
};

function assertRefused(reply: Reply, part: string, pattern: RegExp): void {
  assert.equal(reply.status, 422, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'validation_failed');
  const messages: string[] = reply.body.errors[part] ?? [];
  assert.ok(
    messages.some((message) => pattern.test(message)),
    `${part}: ${JSON.stringify(reply.body.errors)}`,
  );
}

describe("a store's message templates", () => {
  const harness = useHarness();

  async function start() {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    const { a, b } = await twoStores(t);
    return { t, call, a, b };
  }

  test('a saved template words the store’s email, and only that store’s; removing it brings the built-in words back', async () => {
    const { t, call, a, b } = await start();
    const path = `/admin/v1/stores/${b.id}/templates/verification_code/en`;
    const saved = await call('PUT', path, verification);
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.equal(saved.body.subject, verification.subject);
    assert.deepEqual(
      (await call('GET', `/admin/v1/stores/${b.id}/templates`)).body.templates.map(
        (x: { message: string }) => x.message,
      ),
      ['verification_code'],
    );

    await registerIn(b, { email: 'ada@example.com' });
    await registerIn(a, { email: 'ada@example.com' });
    const sent = await t.deliver();
    const fromB = sent.find((m) => m.from.storeId === b.id && m.purpose === 'verification')!;
    const fromA = sent.find((m) => m.from.storeId === a.id && m.purpose === 'verification')!;
    const code = /\d{6}/.exec(fromB.content.text)![0];
    assert.equal(fromB.content.subject, `Your Shop B code: ${code}`);
    assert.equal(fromB.content.text, `Hello from Shop B!\nYour code is ${code}; it works for 10 minutes.`);
    assert.match(fromB.content.html, /^<!doctype html><html lang="en" dir="ltr"><body>/);
    assert.match(fromB.content.html, new RegExp(`<b>${code}</b>`));
    assert.doesNotMatch(fromA.content.subject, /Your .* code:/, 'the other store keeps its own words');

    assert.equal((await call('DELETE', path)).status, 200);
    assert.equal((await call('GET', path)).status, 404);
    assert.equal((await call('DELETE', path)).status, 404);
    await b.post('/api/v1/customer/auth/verification/resend', { identity: 'ada@example.com' });
    t.clock.advance(61);
    const again = (await t.deliver()).filter((m) => m.from.storeId === b.id);
    for (const message of again) assert.doesNotMatch(message.content.subject, /Your Shop B code:/);
  });

  test('a template with a mistake is refused with its part, line and variable; nothing is saved', async () => {
    const { call, b } = await start();
    const path = `/admin/v1/stores/${b.id}/templates/verification_code/en`;
    assertRefused(
      await call('PUT', path, { ...verification, text: 'Hi\nYour code {{code}} and {{coupon}}' }),
      'text',
      /line 2: unknown variable \{\{coupon\}\}/,
    );
    assertRefused(
      await call('PUT', path, { ...verification, html: '<p>Welcome</p>' }),
      'html',
      /\{\{code\}\} is missing/,
    );
    assertRefused(
      await call('PUT', path, { ...verification, text: 'Code:\n\n{{code' }),
      'text',
      /line 3: Unclosed tag/,
    );
    assertRefused(
      await call('PUT', path, { ...verification, html: '<p>{{{code}}}</p>' }),
      'html',
      /only \{\{variable\}\} tags/,
    );
    assertRefused(
      await call('PUT', path, { ...verification, html: '<p>{{#code}}x{{/code}} {{code}}</p>' }),
      'html',
      /only \{\{variable\}\} tags/,
    );
    assertRefused(
      await call('PUT', path, { ...verification, html: '<img src="https://cdn.example/logo.png"> {{code}}' }),
      'html',
      /no remote image/,
    );
    assertRefused(await call('PUT', path, { ...verification, subject: 'One\nTwo' }), 'subject', /one line/);
    assertRefused(await call('PUT', path, { ...verification, subject: 'x'.repeat(201) }), 'subject', /at most 200/);
    const wrongLanguage = await call('PUT', `/admin/v1/stores/${b.id}/templates/verification_code/fr`, verification);
    assertRefused(wrongLanguage, 'language', /store's languages/);
    assert.equal((await call('GET', `/admin/v1/stores/${b.id}/templates/no_such_message/en`)).status, 422);
    assert.equal((await call('GET', path)).status, 404, 'nothing was saved');
  });

  test('a preview renders what will be sent, with sample values and the store’s own name and links', async () => {
    const { call, b } = await start();
    await b.configure({ branding: { supportUrl: 'https://b.example/help' } });
    const path = `/admin/v1/stores/${b.id}/templates/new_sign_in/en`;
    const template = {
      subject: 'New sign-in to {{store_name}}',
      text: 'From {{device}} on {{network}} at {{when}}. Help: {{support_url}} Logo: {{logo_url}}',
      html: '<p>From {{device}} on {{network}}.</p>',
    };
    const preview = await call('POST', `${path}/preview`, template);
    assert.equal(preview.status, 200, JSON.stringify(preview.body));
    assert.equal(preview.body.subject, 'New sign-in to Shop B');
    assert.equal(
      preview.body.text,
      'From Firefox on Windows on 203.0.113.0/24 at 2026-11-29 07:50 UTC. Help: https://b.example/help Logo: https://corner.example/brand/logo?v=3f2a9c0d1e4b5a67',
      'the store has a support link and no logo: the sample stands in for the logo',
    );
    assert.match(preview.body.html, /<p>From Firefox on Windows on 203\.0\.113\.0\/24\.<\/p>/);
    assertRefused(await call('POST', `${path}/preview`, { ...template, text: '{{code}}' }), 'text', /unknown variable/);
    assert.equal((await call('GET', path)).status, 404, 'a preview saves nothing');
  });

  test('values are escaped in the HTML part and set apart in Arabic, in a document of the message’s direction', async () => {
    const { t, call, b } = await start();
    await b.configure({ name: 'Tom & <Jerry>', languages: { languages: ['en', 'ar'], defaultLanguage: 'ar' } });
    const saved = await call('PUT', `/admin/v1/stores/${b.id}/templates/verification_code/ar`, {
      subject: 'رمزك لدى {{store_name}}',
      text: 'رمزك {{code}}',
      html: '<p>{{store_name}}: {{code}}</p>',
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    await registerIn(b, { email: 'ada@example.com' });
    const message = (await t.deliver()).find((m) => m.from.storeId === b.id && m.purpose === 'verification')!;
    assert.equal(message.content.language, 'ar');
    assert.match(message.content.html, /<html lang="ar" dir="rtl">/);
    assert.match(message.content.html, /<bdi>Tom &#38; &#60;Jerry&#62;<\/bdi>/);
    assert.ok(message.content.subject.includes('\u2068Tom & <Jerry>\u2069'));
  });

  test('a notice may name the customer once their identity is proven: escaped, and never in a subject', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    const path = '/admin/v1/stores/default/templates/password_changed/en';
    const template = {
      subject: 'Your {{store_name}} password changed',
      text: 'Hello {{customer_name}}.',
      html: '<p>Hello {{customer_name}}.</p>',
    };
    assertRefused(
      await call('PUT', path, { ...template, subject: 'Hello {{customer_name}}' }),
      'subject',
      /^line 1: \{\{customer_name\}\} is the customer's own text and stays out of the subject\.$/,
    );
    const codeTemplate = { ...verification, text: '{{customer_name}}: {{code}}' };
    assertRefused(
      await call('PUT', '/admin/v1/stores/default/templates/reset_code/en', codeTemplate),
      'text',
      /unknown variable \{\{customer_name\}\}/,
    );
    assert.equal((await call('PUT', path, template)).status, 200);

    const ada = await registeredCustomer(t, { name: 'Ada & <Co>' });
    const changed = async (password: string) => {
      assert.equal((await resetWithCode(t, ada.identity, password)).reply.status, 200);
      const [notice] = (await t.deliver()).filter((m) => m.purpose === 'password_changed');
      assert.ok(notice);
      return notice.content;
    };
    // The first reset is the first proof: the name was chosen by whoever registered the address.
    const unproven = await changed('An0ther-long-passw0rd one');
    assert.equal(unproven.text, 'Hello .');
    t.clock.advance(60 * 60);
    const proven = await changed('An0ther-long-passw0rd two');
    assert.equal(proven.text, 'Hello Ada & <Co>.');
    assert.match(proven.html, /<p>Hello Ada &#38; &#60;Co&#62;\.<\/p>/);
    assert.doesNotMatch(proven.subject, /Ada/);
  });
});
