import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { tokenIdOf } from '../../../src/http/admin/tokens.js';
import { adminToken, imported, importUrl, startAdmin, upload } from '../../helpers/import.js';
import { auditRows } from '../../helpers/audit.js';
import { count, loginFrom } from '../../helpers/customers.js';
import { createHarness, useHarness } from '../../helpers/harness.js';

/**
 * The import and the export over the admin API: customers of other systems arrive with their
 * password hashes and sign in with the passwords they had, and a store moves whole from one
 * deployment to another.
 */

const vectors = JSON.parse(fs.readFileSync(new URL('../../fixtures/legacy-hashes.json', import.meta.url), 'utf8')) as {
  format: string;
  source: string;
  password: string;
  hash: string;
}[];

describe('customer import over the admin API', () => {
  const harness = useHarness();

  test('every legacy format signs in with its original password, is re-hashed at once, and a wrong one is refused alike', async () => {
    const { t, admin } = await startAdmin(harness);
    const lines = vectors.map((vector, i) =>
      JSON.stringify({
        email: `c${i}@example.com`,
        verified: true,
        password_hash: vector.hash,
        external_id: `old-${i}`,
      }),
    );
    const report = await imported(t, admin, lines);
    assert.equal(report.body.status, 'done');
    assert.equal(report.body.created, vectors.length, JSON.stringify(report.body));
    assert.equal(report.body.refused, 0);
    for (const [i, vector] of vectors.entries()) {
      const identity = `c${i}@example.com`;
      const wrong = await loginFrom(t, `198.51.100.${i + 1}`, identity, 'not the password 1');
      assert.equal(wrong.status, 401, vector.source);
      assert.equal(wrong.code, 'unauthenticated');
      const right = await loginFrom(t, `198.51.100.${i + 1}`, identity, vector.password);
      assert.equal(right.status, 200, vector.source);
      const [row] = await t.db.query<{ password_hash: string }>(
        'SELECT password_hash FROM customers WHERE identity_value = $1',
        [identity],
      );
      assert.equal(t.services.hasher.needsRehash(row!.password_hash), false, `${vector.source}: re-hashed`);
      const again = await loginFrom(t, `198.51.100.${i + 1}`, identity, vector.password);
      assert.equal(again.status, 200, `${vector.source}: the re-hashed password`);
    }
  });

  test('the report counts, refuses by line and field, and a dry run writes no customer', async () => {
    const { t, admin, call } = await startAdmin(harness);
    const lines = [
      JSON.stringify({ email: 'ada@example.com' }),
      '{"email": 42}',
      JSON.stringify({ email: 'bob@example.com', password_hash: 'md5:abc' }),
    ];
    const dry = await imported(t, admin, lines, '?dry_run=true');
    assert.deepEqual(
      { ...dry.body, id: undefined, started_at: undefined, finished_at: undefined },
      {
        id: undefined,
        status: 'done',
        dry_run: true,
        lines: 3,
        created: 1,
        updated: 0,
        unchanged: 0,
        refused: 2,
        invited: 0,
        refusals: [
          { line: 2, field: 'email', reason: 'not a string' },
          { line: 3, field: 'password_hash', reason: 'unknown format' },
        ],
        error: null,
        started_at: undefined,
        finished_at: undefined,
      },
    );
    assert.equal(await count(t, 'customers'), 0);
    const real = await imported(t, admin, lines);
    assert.equal(real.body.created, 1);
    assert.equal(await count(t, 'customers'), 1);
    const again = await imported(t, admin, lines);
    assert.deepEqual([again.body.created, again.body.unchanged], [0, 1]);
    const audit = await auditRows(t, 'customers.imported');
    assert.equal(audit.length, 3);
    assert.equal(audit[0]!.details.token, tokenIdOf(adminToken));
    assert.equal(audit[0]!.details.dry_run, 'true');
    assert.equal((await call('GET', '/admin/v1/stores/default/imports/not-an-id')).status, 404);
    assert.equal((await call('GET', `/admin/v1/stores/nope/imports/${real.body.id}`)).body.code, 'store_not_found');
  });

  test('one import of a store at a time; one whose process died is reported failed and leaves the way open', async () => {
    const { t, admin, call } = await startAdmin(harness);
    const running = '11111111-1111-4111-8111-111111111111';
    await t.db.query(
      `INSERT INTO customer_imports (store_id, id, status, dry_run, started_at, updated_at)
       VALUES ('default', $1, 'running', false, $2, $2)`,
      [running, t.clock.now()],
    );
    const refused = await upload(admin, [JSON.stringify({ email: 'ada@example.com' })]);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'import_running');
    // Its process stopped writing its report three minutes ago.
    t.clock.advance(3 * 60);
    const report = await call('GET', `/admin/v1/stores/default/imports/${running}`);
    assert.equal(report.body.status, 'failed');
    assert.match(report.body.error, /run it again/);
    const next = await imported(t, admin, [JSON.stringify({ email: 'ada@example.com' })]);
    assert.equal(next.body.status, 'done');
  });

  test('an import is NDJSON: a JSON body is refused 415, and nothing starts', async () => {
    const { t, call } = await startAdmin(harness);
    const reply = await call('POST', importUrl, { email: 'ada@example.com' });
    assert.equal(reply.status, 415, JSON.stringify(reply.body));
    assert.equal(await count(t, 'customer_imports'), 0);
  });

  test('the export streams NDJSON in the import’s format and is audited with the token', async () => {
    const { t, admin, call } = await startAdmin(harness);
    await imported(t, admin, [
      JSON.stringify({ email: 'ada@example.com', name: 'Ada', verified: true, password_hash: vectors[0]!.hash }),
    ]);
    const reply = await call('GET', '/admin/v1/stores/default/customers/export');
    assert.equal(reply.status, 200);
    assert.match(String(reply.headers['content-type']), /^application\/x-ndjson/);
    const lines = reply.raw.body
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      lines.map((line) => [line.email, line.password_hash]),
      [['ada@example.com', vectors[0]!.hash]],
    );
    const audit = await auditRows(t, 'customers.exported');
    assert.equal(audit[0]!.details.token, tokenIdOf(adminToken));
  });
});

describe('a store moved between deployments', () => {
  test('every customer signs in on the second deployment with the password they had on the first', async () => {
    const first = await createHarness();
    const second = await createHarness();
    try {
      const a = await startAdmin(first);
      for (const n of [1, 2, 3]) {
        const registered = await a.t.post('/api/v1/customer/auth/register', {
          name: `Customer ${n}`,
          email: `c${n}@example.com`,
          password: `own password ${n}`,
          password_confirmation: `own password ${n}`,
        });
        assert.equal(registered.status, 201, JSON.stringify(registered.body));
      }
      const exported = await a.call('GET', '/admin/v1/stores/default/customers/export');
      const lines = exported.raw.body.trimEnd().split('\n');
      assert.equal(lines.length, 3);

      const b = await startAdmin(second);
      const report = await imported(b.t, b.admin, lines);
      assert.equal(report.body.created, 3, JSON.stringify(report.body));
      for (const n of [1, 2, 3]) {
        const login = await loginFrom(b.t, `198.51.100.${n}`, `c${n}@example.com`, `own password ${n}`);
        assert.equal(login.status, 200);
      }
    } finally {
      await first.close();
      await second.close();
    }
  });
});
