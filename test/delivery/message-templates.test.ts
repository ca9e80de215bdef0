import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MessagePurpose } from '../../src/delivery/message.js';
import { templatedMessages, templateNameOf, templateProblems } from '../../src/delivery/message-templates.js';
import { renderMessage } from '../../src/delivery/templates.js';

/** The catalogue of what a store may word itself, and how one template serves two messages. */
describe('message templates', () => {
  test('every message the service sends has exactly one template name', () => {
    const purposes: MessagePurpose[] = Object.values(templatedMessages).flatMap((entry) => [...entry.purposes]);
    assert.equal(new Set(purposes).size, purposes.length, 'no message under two names');
    assert.equal(templateNameOf('two_factor_on'), 'two_factor_changed');
    assert.equal(templateNameOf('two_factor_off'), 'two_factor_changed');
    assert.equal(templateNameOf('password_reset'), 'reset_code');
  });

  test('two_factor_changed words both ways, its {{change}} saying which in the message’s language', () => {
    const template = {
      subject: '{{store_name}}: your sign-in settings changed',
      text: '{{change}}\n{{support_url}}',
      html: '<p>{{change}}</p>',
    };
    assert.deepEqual(templateProblems('two_factor_changed', template), {});
    const sent = (purpose: MessagePurpose, language: string) =>
      renderMessage({ channel: 'email', purpose, language, storeName: 'Corner Shop' }, template);
    assert.match(sent('two_factor_on', 'en').text, /^Two-step sign-in was just turned on for your Corner Shop account/);
    assert.match(
      sent('two_factor_off', 'en').text,
      /^Two-step sign-in was just turned off for your Corner Shop account/,
    );
    const arabic = sent('two_factor_off', 'ar');
    assert.equal(arabic.language, 'ar');
    assert.match(arabic.html, /<p><bdi>[^<]*\u2068Corner Shop\u2069[^<]*<\/bdi><\/p>/);
    assert.ok(arabic.text.endsWith('\n'), 'an empty support link is empty, not marked');
  });
});
