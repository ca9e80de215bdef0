import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createAdminClient, type AdminClient } from '../../packages/client/src/admin.js';
import { StorefrontAuthError } from '../../packages/client/src/index.js';
import { refusedWith, useClientService } from '../helpers/client-service.js';

const adminToken = 'admin-token-of-the-store-platform-templates-0123456789';

describe("the admin client's branding and template calls against a running service", () => {
  const running = useClientService('sfa-admin-templates-', { ADMIN_TOKENS: adminToken, ADMIN_PORT: '0' });
  let admin: AdminClient;

  before(() => {
    assert.ok(running.service.adminUrl, 'the admin listener is up');
    admin = createAdminClient({ baseUrl: running.service.adminUrl, token: adminToken });
  });

  test('sets branding, saves, previews, lists and removes a template; a mistake is typed', async () => {
    const changed = await admin.changeStore('default', { branding: { primary_colour: '#0B5D1E' } });
    assert.equal(changed.branding.primary_colour, '#0b5d1e');
    const template = { subject: 'Code {{code}}', text: 'Your code: {{code}}', html: '<p>{{code}}</p>' };
    const preview = await admin.previewTemplate('default', 'sign_in_code', 'en', template);
    assert.equal(preview.subject, 'Code 482913');
    const saved = await admin.setTemplate('default', 'sign_in_code', 'en', template);
    assert.equal(saved.message, 'sign_in_code');
    assert.deepEqual(
      (await admin.listTemplates('default')).map((entry) => `${entry.message}/${entry.language}`),
      ['sign_in_code/en'],
    );
    assert.equal((await admin.getTemplate('default', 'sign_in_code', 'en')).text, 'Your code: {{code}}');
    const refused = await admin
      .setTemplate('default', 'sign_in_code', 'en', { ...template, text: 'no code here' })
      .then(
        () => assert.fail('a code message without its code was saved'),
        (error: unknown) => error,
      );
    assert.ok(refused instanceof StorefrontAuthError && refused.code === 'validation_failed');
    assert.match(refused.errors?.['text']?.[0] ?? '', /\{\{code\}\} is missing/);
    await admin.removeTemplate('default', 'sign_in_code', 'en');
    await refusedWith(admin.getTemplate('default', 'sign_in_code', 'en'), 'not_found', 404);
  });
});
