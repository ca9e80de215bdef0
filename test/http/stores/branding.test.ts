import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { contrastRatio, storeAccentColour, storePrimaryColour } from '../../../src/store/fields.js';
import { adminAppOf, adminCaller } from '../../helpers/admin.js';
import { auth, registeredCustomer, registration, toReply, useHarness } from '../../helpers/harness.js';
import { resetWithCode } from '../../helpers/customers.js';
import { twoStores, verifyIn, type StoreSide } from '../../helpers/stores.js';

const adminToken = 'admin-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';

describe("a store's branding", () => {
  const harness = useHarness();

  test('contrast is WCAG 2’s: black on white 21:1, a primary or accent colour under 4.5:1 is refused naming the ratio', () => {
    assert.equal(contrastRatio('#000000', '#ffffff').toFixed(2), '21.00');
    assert.equal(contrastRatio('#ffffff', '#ffffff').toFixed(2), '1.00');
    // The service's own blue, and WCAG's own example pair of 4.5:1 (#767676 on white: 4.54).
    assert.ok(contrastRatio('#1f4fbf', '#ffffff') >= 4.5);
    assert.equal(storePrimaryColour('#767676'), '#767676');
    assert.throws(() => storePrimaryColour('#777777'), /contrast of 4\.47:1 with white, under WCAG AA's 4\.5:1/);
    assert.throws(() => storePrimaryColour('red'), /#RRGGBB/);
    // The accent (the focus ring) stands beside the page's dark text: a light colour passes, a dark one not.
    assert.equal(storeAccentColour('#FFB000'), '#ffb000');
    assert.throws(
      () => storeAccentColour('#1f4fbf'),
      /contrast of 2\.\d\d:1 with the page's text \(#1b1b1f\), under WCAG AA's 4\.5:1; choose a lighter colour/,
    );
  });

  test('set with the admin API, the page shows the logo, the support link and the colours its CSP allows', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    const plain = await t.get('/');
    assert.doesNotMatch(plain.raw.body, /<style>|brand-logo|class="support"/);

    const refused = await call('PATCH', '/admin/v1/stores/default', {
      branding: { primary_colour: '#ffcc00', logo_url: 'ftp://logo.example/x.png' },
    });
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.match(refused.body.errors['branding.primary_colour'][0], /contrast of 1\.\d\d:1 with white/);
    assert.match(refused.body.errors['branding.logo_url'][0], /https:\/\//);

    const changed = await call('PATCH', '/admin/v1/stores/default', {
      branding: {
        logo_url: 'https://cdn.shop.example/logo.svg',
        primary_colour: '#0B5D1E',
        accent_colour: '#FFB000',
        support_url: 'https://shop.example/help',
      },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.deepEqual(changed.body.branding, {
      logo_url: 'https://cdn.shop.example/logo.svg',
      primary_colour: '#0b5d1e',
      accent_colour: '#ffb000',
      support_url: 'https://shop.example/help',
    });
    t.services.store.invalidate();
    const page = await t.get('/');
    const style = ':root{--brand-primary:#0b5d1e;--brand-accent:#ffb000;}';
    assert.ok(page.raw.body.includes(`<style>${style}</style>`));
    assert.match(
      page.raw.body,
      /<img class="brand-logo" src="https:\/\/cdn\.shop\.example\/logo\.svg" alt="[^"]+" \/>/,
    );
    assert.match(
      page.raw.body,
      /<a href="https:\/\/shop\.example\/help" rel="noopener">Help with your .* account<\/a>/,
    );
    const csp = String(page.headers['content-security-policy']);
    const hash = createHash('sha256').update(style).digest('base64');
    assert.match(csp, new RegExp(`style-src 'self' 'sha256-${hash.replace(/[+/]/g, '\\$&')}';`));
    assert.match(csp, /img-src 'self' data: https:\/\/cdn\.shop\.example;/);

    // A patch of one part keeps the others; null brings back the service's own.
    const cleared = await call('PATCH', '/admin/v1/stores/default', { branding: { primary_colour: null } });
    assert.equal(cleared.body.branding.primary_colour, null);
    assert.equal(cleared.body.branding.accent_colour, '#ffb000');
  });

  test('its emails carry the support link, the code in its colour, and the logo in notices only', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const call = adminCaller(await adminAppOf(t), adminToken);
    const branding = {
      logo_url: 'https://cdn.shop.example/logo.png',
      primary_colour: '#0b5d1e',
      support_url: 'https://shop.example/help?from=mail&x=1',
    };
    assert.equal((await call('PATCH', '/admin/v1/stores/default', { branding })).status, 200);
    t.services.store.invalidate();
    const customer = await registeredCustomer(t);
    const [codeMail] = (await t.deliver()).filter((m) => m.purpose === 'verification');
    assert.ok(codeMail);
    assert.match(codeMail.content.html, /<strong style="[^"]*color:#0b5d1e">\d{6}<\/strong>/);
    assert.doesNotMatch(codeMail.content.html, /<img/, "no remote image in a code's email");
    assert.match(
      codeMail.content.html,
      /<a href="https:\/\/shop\.example\/help\?from=mail&#38;x=1">Help with your .* account<\/a>/,
    );
    assert.match(codeMail.content.text, /Help with your .* account: https:\/\/shop\.example\/help\?from=mail&x=1$/);

    const changed = await resetWithCode(t, customer.identity, 'An0ther-long-passw0rd');
    assert.equal(changed.reply.status, 200);
    const [notice] = (await t.deliver()).filter((m) => m.purpose === 'password_changed');
    assert.ok(notice);
    assert.match(
      notice.content.html,
      /<p><img src="https:\/\/cdn\.shop\.example\/logo\.png" alt="[^"]+" height="48"><\/p>/,
    );
  });

  test('an uploaded logo is checked, kept, served on the store’s host for good, and removed', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const admin = await adminAppOf(t);
    const upload = async (type: string, body: Buffer) =>
      toReply(
        await admin.inject({
          method: 'PUT',
          url: '/admin/v1/stores/default/logo',
          headers: { authorization: `Bearer ${adminToken}`, 'content-type': type },
          payload: body,
        }),
      );
    // A real 1×1 PNG, as an image editor writes it.
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    assert.equal((await upload('image/svg+xml', Buffer.from('<svg/>'))).status, 415);
    const lying = await upload('image/jpeg', png);
    assert.equal(lying.status, 422);
    assert.match(lying.body.errors.logo[0], /is not a image\/jpeg file/);
    assert.equal((await upload('image/png', Buffer.concat([png, Buffer.alloc(300 * 1024)]))).status, 413);

    const uploaded = await upload('image/png', png);
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    assert.match(uploaded.body.branding.logo_url, /^\/brand\/logo\?v=[0-9a-f]{16}$/);
    t.services.store.invalidate();
    const page = await t.get('/');
    assert.ok(page.raw.body.includes(`src="${uploaded.body.branding.logo_url}"`));
    assert.match(String(page.headers['content-security-policy']), /img-src 'self' data:;/);
    const served = await t.get(uploaded.body.branding.logo_url);
    assert.equal(served.status, 200);
    assert.equal(served.headers['content-type'], 'image/png');
    assert.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(served.headers['x-content-type-options'], 'nosniff');
    assert.ok(served.raw.rawPayload.equals(png));

    const call = adminCaller(admin, adminToken);
    const removed = await call('DELETE', '/admin/v1/stores/default/logo');
    assert.equal(removed.status, 200);
    assert.equal(removed.body.branding.logo_url, null);
    assert.equal((await t.get('/brand/logo')).status, 404);
    assert.equal((await call('DELETE', '/admin/v1/stores/default/logo')).status, 404);
  });

  test('an uploaded logo heads notices at an address on the store’s host; a template gets it and the support link unmarked', async () => {
    const t = await harness.start({ env: { ADMIN_TOKENS: adminToken } });
    const admin = await adminAppOf(t);
    const call = adminCaller(admin, adminToken);
    const { b } = await twoStores(t);
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    const uploaded = await admin.inject({
      method: 'PUT',
      url: `/admin/v1/stores/${b.id}/logo`,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'image/png' },
      payload: png,
    });
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    const logoPath = (JSON.parse(uploaded.body) as { branding: { logo_url: string } }).branding.logo_url;
    await b.configure({
      branding: { supportUrl: 'https://b.example/help?a=1&b=2' },
      languages: { languages: ['en', 'ar'], defaultLanguage: 'en' },
    });
    const saved = await call('PUT', `/admin/v1/stores/${b.id}/templates/new_sign_in/ar`, {
      subject: 'دخول جديد إلى {{store_name}}',
      text: 'دخول من {{device}}. المساعدة: {{support_url}}',
      html: '<p><img src="{{logo_url}}" alt=""></p><p>{{device}}</p><p><a href="{{support_url}}">المساعدة</a></p>',
    });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));

    const newSignIn = async (side: StoreSide, language: string) => {
      const ada = registration({ email: `ada-${language}@example.com` });
      const registered = await side.post(`${auth}/register`, ada, { 'accept-language': language });
      assert.equal(registered.status, 201);
      await verifyIn(side, ada.email);
      const login = (address: string, userAgent: string) =>
        side.postFrom(
          address,
          `${auth}/login`,
          { identity: ada.email, password: ada.password },
          {
            'user-agent': userAgent,
            'accept-language': language,
          },
        );
      assert.equal((await login('198.51.100.7', 'Mozilla/5.0 (Windows NT 10.0) Firefox/130.0')).status, 200);
      await t.deliver();
      assert.equal((await login('203.0.113.9', 'Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0')).status, 200);
      const [notice] = (await t.deliver()).filter((m) => m.purpose === 'new_sign_in' && m.to === ada.email);
      assert.ok(notice, `a new sign-in notice in ${language}`);
      return notice.content;
    };
    const english = await newSignIn(b, 'en');
    const logoUrl = `https://${b.host}${logoPath}`;
    assert.ok(english.html.includes(`<p><img src="${logoUrl}" alt="Shop B" height="48"></p>`), english.html);

    const arabic = await newSignIn(b, 'ar');
    assert.equal(arabic.language, 'ar');
    assert.ok(arabic.html.includes(`<img src="${logoUrl}" alt="">`), arabic.html);
    assert.ok(arabic.html.includes('<a href="https://b.example/help?a=1&#38;b=2">'), arabic.html);
    assert.match(arabic.html, /<p><bdi>[^<]+<\/bdi><\/p>/, 'chosen-by-the-service values still set apart');
    assert.ok(arabic.text.endsWith('المساعدة: https://b.example/help?a=1&b=2'), arabic.text);
  });
});
