import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tokenIdOf } from '../../../src/http/admin/tokens.js';
import { auditRows } from '../../helpers/audit.js';
import { loginFrom } from '../../helpers/customers.js';
import { auth, useHarness, type TestApp } from '../../helpers/harness.js';
import { adminToken, imported, startAdmin } from '../../helpers/import.js';

/**
 * Customers an import brought without a password (Shopify exports none) are invited to set one:
 * a set-password code sent unasked, spent through forgot/reset, which proves control of the identity.
 */

const password = 'new password 2026';
/** A WordPress (phpass) hash, as an import carries one. */
const phpass = '$P$BQ6jyo1zZ5xYxrNw1bLSa0kGwOi0Ym.';

async function customerId(t: TestApp, email: string): Promise<string> {
  const [row] = await t.db.query<{ id: string }>('SELECT id FROM customers WHERE identity_value = $1', [email]);
  assert.ok(row, `${email} has an account`);
  return row.id;
}

async function setPassword(t: TestApp, identity: string, code: string) {
  return t.post(`${auth}/password/reset`, { identity, code, password, password_confirmation: password });
}

describe('invitations', () => {
  const harness = useHarness();

  test('an import line with invite: true sends a week-long set-password code once; spending it sets the password and proves the identity', async () => {
    const { t, admin } = await startAdmin(harness);
    const lines = [
      JSON.stringify({ email: 'ada@example.com', name: 'Ada', invite: true }),
      JSON.stringify({ email: 'bob@example.com', name: 'Bob' }),
    ];
    const report = await imported(t, admin, lines);
    assert.equal(report.body.invited, 1, JSON.stringify(report.body));
    const sent = await t.deliver();
    assert.deepEqual(
      sent.map((message) => [message.purpose, message.to]),
      [['invitation', 'ada@example.com']],
    );
    const text = sent[0]!.content.text;
    assert.match(text, /Forgot your password\?/, 'it names the button the page shows');
    assert.match(text, /I already have a reset code/);
    assert.match(text, /until 2026-01-\d\d \d\d:\d\d UTC/, 'and until when the code works');

    // The same file again: the code sent is still live, so nobody is invited twice.
    const again = await imported(t, admin, lines);
    assert.equal(again.body.invited, 0);
    assert.equal((await t.deliver()).length, 0);

    // Six days later the code still works, and it is a proof of control.
    t.clock.advance(6 * 24 * 3600);
    const code = await t.codeFor('ada@example.com', 'invitation');
    const reset = await setPassword(t, 'ada@example.com', code);
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    const [ada] = await t.db.query<{ verified_at: Date | null }>(
      "SELECT verified_at FROM customers WHERE identity_value = 'ada@example.com'",
    );
    assert.notEqual(ada!.verified_at, null, 'the code proved the identity');
    assert.equal((await loginFrom(t, '198.51.100.1', 'ada@example.com', password)).status, 200);
  });

  test('an invitation code ends after a week', async () => {
    const { t, admin } = await startAdmin(harness);
    await imported(t, admin, [JSON.stringify({ email: 'ada@example.com', invite: true })]);
    const code = await t.codeFor('ada@example.com', 'invitation');
    t.clock.advance(7 * 24 * 3600 + 1);
    const reset = await setPassword(t, 'ada@example.com', code);
    assert.equal(reset.status, 422, JSON.stringify(reset.body));
    assert.equal(reset.body.code, 'invalid_identity_challenge');
  });

  test('a line cannot carry both a password hash and invite: true', async () => {
    const { t, admin } = await startAdmin(harness);
    const report = await imported(t, admin, [
      JSON.stringify({ email: 'ada@example.com', invite: true, password_hash: phpass }),
      JSON.stringify({ email: 'bob@example.com', invite: 'yes' }),
    ]);
    assert.deepEqual(report.body.refusals, [
      { line: 1, field: 'invite', reason: 'a line with a password_hash needs no invitation' },
      { line: 2, field: 'invite', reason: 'not true or false' },
    ]);
    assert.equal(report.body.invited, 0);
  });

  test('a dry run counts the invitations it would send and sends none', async () => {
    const { t, admin } = await startAdmin(harness);
    const report = await imported(
      t,
      admin,
      [JSON.stringify({ email: 'ada@example.com', invite: true })],
      '?dry_run=true',
    );
    assert.equal(report.body.invited, 1);
    assert.equal((await t.deliver()).length, 0);
  });

  test('POST …/invite sends a new code in place of the last, refuses a customer with a password, and is audited', async () => {
    const { t, admin, call } = await startAdmin(harness);
    await imported(t, admin, [
      JSON.stringify({ email: 'ada@example.com', invite: true }),
      JSON.stringify({ email: 'bob@example.com', password_hash: phpass }),
    ]);
    const first = await t.codeFor('ada@example.com', 'invitation');
    const ada = await customerId(t, 'ada@example.com');
    const invited = await call('POST', `/admin/v1/stores/default/customers/${ada}/invite`);
    assert.equal(invited.status, 202, JSON.stringify(invited.body));
    assert.deepEqual(invited.body, { status: 'queued' });
    const second = await t.codeFor('ada@example.com', 'invitation');
    const stale = await setPassword(t, 'ada@example.com', first);
    assert.equal(stale.status, 422, 'the earlier code stopped working');
    assert.equal((await setPassword(t, 'ada@example.com', second)).status, 200);

    const bob = await customerId(t, 'bob@example.com');
    const refused = await call('POST', `/admin/v1/stores/default/customers/${bob}/invite`);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'has_password');
    const ofAda = await call('POST', `/admin/v1/stores/default/customers/${ada}/invite`);
    assert.equal(ofAda.status, 409, 'a password set with the invitation ends the need for one');
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      const missing = await call('POST', `/admin/v1/stores/default/customers/${id}/invite`);
      assert.equal(missing.status, 404, id);
    }
    const rows = await auditRows(t, 'customer.invited');
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.customer_id, ada);
    assert.equal(rows[0]!.details.token, tokenIdOf(adminToken));
  });
});
