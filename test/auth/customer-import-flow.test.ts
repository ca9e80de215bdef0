import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { exportCustomers } from '../../src/auth/flows/customer-export.js';
import { importCustomers, importBatchLines, type ImportOptions } from '../../src/auth/flows/customer-import.js';
import { login } from '../../src/auth/flows/login.js';
import { register } from '../../src/auth/flows/registration.js';
import { count } from '../helpers/customers.js';
import { domainOf, email, type Domain } from '../helpers/domain.js';
import { registration, useHarness, type TestApp } from '../helpers/harness.js';
import { addTestProvider } from '../helpers/providers.js';

/**
 * The import and the export as domain calls on a real database: what a line creates, changes or
 * leaves, what it is refused for, and that running an import again changes nothing more.
 */

const vectors = JSON.parse(fs.readFileSync(new URL('../fixtures/legacy-hashes.json', import.meta.url), 'utf8')) as {
  format: string;
  source: string;
  password: string;
  hash: string;
}[];
const phpass = vectors.find((vector) => vector.hash.startsWith('$P$'))!;
const bcrypt = vectors.find((vector) => vector.hash.startsWith('$2y$'))!;
const issuer = 'https://accounts.example.com';

async function* linesOf(lines: readonly string[]): AsyncGenerator<string> {
  yield* lines;
}

const json = (value: Record<string, unknown>) => JSON.stringify(value);

async function run(domain: Domain, lines: readonly string[], options: Partial<ImportOptions> = {}) {
  const providers = new Map([[issuer, 'acme-id']]);
  return importCustomers(domain.deps, await domain.store(), providers, linesOf(lines), { dryRun: false, ...options });
}

async function signIn(domain: Domain, identity: string, password: string) {
  return login(domain.deps, await domain.attempt(), email(identity), password);
}

async function hashOf(t: TestApp, identity: string): Promise<string | null> {
  const [row] = await t.db.query<{ password_hash: string | null }>(
    'SELECT password_hash FROM customers WHERE identity_value = $1',
    [identity],
  );
  return row!.password_hash;
}

describe('the customer import', () => {
  const harness = useHarness();

  test('creates an account per line, and a second run of the same lines changes nothing', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const lines = [
      json({ email: 'Ada@Example.com', name: 'Ada', verified: true, password_hash: phpass.hash, external_id: 'wc-1' }),
      json({ email: 'grace@example.com', name: 'Grace', created_at: '2019-04-01T10:00:00Z', locale: 'en' }),
      '',
      json({ email: 'linus@example.com' }),
    ];
    const first = await run(domain, lines);
    assert.deepEqual(first, { lines: 3, created: 3, updated: 0, unchanged: 0, refused: 0, invited: 0, refusals: [] });
    const again = await run(domain, lines);
    assert.deepEqual(again, { lines: 3, created: 0, updated: 0, unchanged: 3, refused: 0, invited: 0, refusals: [] });
    assert.equal(await count(t, 'customers'), 3);
    const [grace] = await t.db.query<{ created_at: Date; verified_at: Date | null; name: string }>(
      "SELECT created_at, verified_at, name FROM customers WHERE identity_value = 'grace@example.com'",
    );
    assert.equal(grace!.created_at.toISOString(), '2019-04-01T10:00:00.000Z');
    assert.equal(grace!.verified_at, null, 'not vouched for: a claim like any other');
    assert.equal(grace!.name, 'Grace');
  });

  test('an imported customer signs in with the old password once, and the legacy hash is gone after it', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    await run(domain, [json({ email: 'ada@example.com', verified: true, password_hash: phpass.hash })]);
    const wrong = await signIn(domain, 'ada@example.com', 'not the password 1');
    assert.equal(wrong.ok, false);
    assert.equal(await hashOf(t, 'ada@example.com'), phpass.hash);
    const signedIn = await signIn(domain, 'ada@example.com', phpass.password);
    assert.ok(signedIn.ok, JSON.stringify(signedIn));
    const rehashed = await hashOf(t, 'ada@example.com');
    assert.match(rehashed!, /^\$argon2id\$/);
    assert.equal(t.services.hasher.needsRehash(rehashed!), false);
    const again = await signIn(domain, 'ada@example.com', phpass.password);
    assert.ok(again.ok);
    // The same line again keeps the password the sign-in re-hashed.
    const rerun = await run(domain, [json({ email: 'ada@example.com', verified: true, password_hash: phpass.hash })]);
    assert.equal(rerun.unchanged, 1);
    assert.equal(await hashOf(t, 'ada@example.com'), rehashed);
  });

  test('a line changes only the fields it gives; a new legacy hash for an imported account ends its sessions', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    await run(domain, [json({ email: 'ada@example.com', name: 'Ada', verified: true, password_hash: phpass.hash })]);
    assert.ok((await signIn(domain, 'ada@example.com', phpass.password)).ok);
    await run(domain, [json({ email: 'bob@example.com', verified: true, password_hash: phpass.hash })]);
    assert.ok((await signIn(domain, 'bob@example.com', phpass.password)).ok);
    // Bob's session was opened with the phpass hash re-hashed: his password is now his own here.
    await t.db.query("UPDATE customers SET password_hash = $1 WHERE identity_value = 'bob@example.com'", [phpass.hash]);
    const changed = await run(domain, [
      json({ email: 'ada@example.com', locale: 'en' }),
      json({ email: 'bob@example.com', password_hash: bcrypt.hash }),
    ]);
    assert.equal(changed.updated, 2, JSON.stringify(changed));
    const [ada] = await t.db.query<{ name: string; locale: string }>(
      "SELECT name, locale FROM customers WHERE identity_value = 'ada@example.com'",
    );
    assert.deepEqual({ ...ada }, { name: 'Ada', locale: 'en' });
    assert.equal(
      await count(t, "sessions s JOIN customers c ON c.id = s.customer_id WHERE c.identity_value = 'bob@example.com'"),
      0,
    );
    assert.equal(
      await count(t, "sessions s JOIN customers c ON c.id = s.customer_id WHERE c.identity_value = 'ada@example.com'"),
      1,
    );
    assert.ok((await signIn(domain, 'bob@example.com', bcrypt.password)).ok);
  });

  test('a password set here is never replaced by an import', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const registered = await register(domain.deps, await domain.store(), registration());
    assert.ok(registered.ok);
    const identity = registration().email as string;
    const before = await hashOf(t, identity);
    const result = await run(domain, [json({ email: identity, password_hash: phpass.hash })]);
    assert.equal(result.unchanged, 1);
    assert.equal(await hashOf(t, identity), before);
  });

  test('verified: true on an account that was a claim is a first proof of control: the claimant’s sessions and password end', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const registered = await register(domain.deps, await domain.store(), registration());
    assert.ok(registered.ok);
    const identity = registration().email as string;
    assert.ok((await signIn(domain, identity, registration().password as string)).ok);
    const result = await run(domain, [json({ email: identity, verified: true })]);
    assert.equal(result.updated, 1);
    assert.equal(await count(t, 'sessions'), 0);
    assert.equal(await hashOf(t, identity), null, 'the claimant’s password is retired');
    const [row] = await t.db.query<{ verified_at: Date | null }>('SELECT verified_at FROM customers');
    assert.notEqual(row!.verified_at, null);
    // verified: false never takes a proof back.
    const back = await run(domain, [json({ email: identity, verified: false })]);
    assert.equal(back.unchanged, 1);
  });

  test('a vouched line with a hash takes a claimed account from its claimant: their password no longer signs in, the line’s does', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const claimant = registration();
    const registered = await register(domain.deps, await domain.store(), claimant);
    assert.ok(registered.ok);
    const result = await run(domain, [json({ email: claimant.email, verified: true, password_hash: phpass.hash })]);
    assert.equal(result.updated, 1);
    assert.equal((await signIn(domain, claimant.email, claimant.password)).ok, false);
    assert.ok((await signIn(domain, claimant.email, phpass.password)).ok);
  });

  test('refusals name the line and the field, never the value, and refused lines write nothing', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const result = await run(domain, [
      json({ email: 'ok@example.com' }),
      'not json',
      json({ email: 'not an address' }),
      json({ phone: '+14155550100' }),
      json({ email: 'hash@example.com', password_hash: '5f4dcc3b5aa765d61d8327deb882cf99' }),
      json({ email: 'extra@example.com', invite: 'yes' }),
      json({ email: 'link@example.com', providers: [{ issuer, subject: 'u-1' }] }),
      json({
        email: 'other@example.com',
        verified: true,
        providers: [{ issuer: 'https://elsewhere.example', subject: 'u-2' }],
      }),
      json({ email: 'when@example.com', created_at: '2999-01-01T00:00:00Z' }),
      json({ email: 'lang@example.com', locale: 'xx' }),
    ]);
    assert.equal(result.created, 1);
    assert.equal(result.refused, 9);
    assert.deepEqual(
      result.refusals.map(({ line, field }) => `${line} ${field}`),
      [
        '2 line',
        '3 email',
        '4 phone',
        '4 email',
        '5 password_hash',
        '6 invite',
        '7 providers',
        '8 providers[0].issuer',
        '9 created_at',
        '10 locale',
      ],
    );
    for (const refusal of result.refusals) assert.doesNotMatch(refusal.reason, /example|5f4dcc|xx\b/);
    assert.equal(await count(t, 'customers'), 1);
  });

  test('a dry run counts exactly what a real run would do and writes nothing', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    await run(domain, [json({ email: 'ada@example.com', name: 'Ada' })]);
    const lines = [json({ email: 'ada@example.com', name: 'Ada L.' }), json({ email: 'new@example.com' }), 'oops'];
    const dry = await run(domain, lines, { dryRun: true });
    assert.deepEqual(
      { ...dry, refusals: dry.refusals.length },
      { lines: 3, created: 1, updated: 1, unchanged: 0, refused: 1, invited: 0, refusals: 1 },
    );
    assert.equal(await count(t, 'customers'), 1);
    const [ada] = await t.db.query<{ name: string }>('SELECT name FROM customers');
    assert.equal(ada!.name, 'Ada');
  });

  test('the same identity twice in one file: the second line updates what the first made', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const result = await run(domain, [
      json({ email: 'ada@example.com', name: 'Ada' }),
      json({ email: 'ADA@example.com', name: 'Ada Lovelace' }),
    ]);
    assert.deepEqual({ created: result.created, updated: result.updated }, { created: 1, updated: 1 });
    const [ada] = await t.db.query<{ name: string }>('SELECT name FROM customers');
    assert.equal(ada!.name, 'Ada Lovelace');
  });

  test('a file longer than a batch is written batch by batch, with progress after each', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    const lines = Array.from({ length: importBatchLines * 2 + 7 }, (_, i) => json({ email: `c${i}@example.com` }));
    const seen: number[] = [];
    const result = await run(domain, lines, { progress: (counts) => void seen.push(counts.lines) });
    assert.equal(result.created, lines.length);
    assert.deepEqual(seen, [importBatchLines, importBatchLines * 2, lines.length, lines.length]);
  });

  test('provider links come in with a proven identity, and one provider account never links to two customers', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    await addTestProvider(t, { issuer }, { id: 'acme-id', preset: undefined, name: 'Acme' });
    const result = await run(domain, [
      json({
        email: 'ada@example.com',
        verified: true,
        providers: [{ issuer, subject: 'u-1', email: 'ada@example.com' }],
      }),
      json({ email: 'bob@example.com', verified: true, providers: [{ issuer, subject: 'u-1' }] }),
    ]);
    assert.equal(result.created, 1, JSON.stringify(result));
    assert.deepEqual(
      result.refusals.map(({ line, field }) => `${line} ${field}`),
      ['2 providers[0]'],
    );
    assert.equal(await count(t, 'provider_links'), 1);
    assert.equal(await count(t, 'customers'), 1, 'the refused line made no account');
  });

  test('the export writes every customer in the import’s format, and importing it elsewhere gives the same accounts', async () => {
    const t = await harness.start();
    const domain = domainOf(t);
    await run(domain, [
      json({
        email: 'ada@example.com',
        name: 'Ada',
        verified: true,
        password_hash: bcrypt.hash,
        external_id: 'wc-1',
        locale: 'en',
      }),
      json({ email: 'grace@example.com', name: 'Grace', created_at: '2019-04-01T10:00:00.000Z' }),
    ]);
    // Ada has a second step on: the line says so, and no more (no secret travels).
    await t.db.query(`UPDATE customers SET two_factor = true WHERE identity_value = 'ada@example.com'`);
    const exported: string[] = [];
    for await (const line of exportCustomers(domain.deps.db)) exported.push(line);
    assert.equal(exported.length, 2);
    const byIdentity = new Map(exported.map((line) => [JSON.parse(line).email as string, JSON.parse(line)]));
    assert.deepEqual(byIdentity.get('ada@example.com'), {
      email: 'ada@example.com',
      name: 'Ada',
      verified: true,
      password_hash: bcrypt.hash,
      external_id: 'wc-1',
      created_at: new Date(t.clock.now()).toISOString(),
      locale: 'en',
      two_factor: true,
    });
    assert.equal(byIdentity.get('grace@example.com').created_at, '2019-04-01T10:00:00.000Z');
    // Into an empty store: the same accounts, and the same password signs in.
    await t.db.query('DELETE FROM customers');
    const result = await run(
      domain,
      exported.map((line) => line.trimEnd()),
    );
    assert.equal(result.created, 2);
    assert.ok((await signIn(domain, 'ada@example.com', bcrypt.password)).ok);
  });
});
