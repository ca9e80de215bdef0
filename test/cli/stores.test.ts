import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { writeAuditEntry } from '../../src/audit.js';
import { insertCustomer } from '../../src/auth/tables/customers.js';
import { insertPasskey } from '../../src/auth/tables/passkeys.js';
import { parseCommand, UsageError } from '../../src/cli/arguments.js';
import { loadConfig } from '../../src/config.js';
import { deriveKeys } from '../../src/keys.js';
import { loadProvider } from '../../src/providers/configured.js';
import { forStore } from '../../src/storage/database.js';
import { ensureStore, firstStoreId } from '../../src/store/store.js';
import { runAdminInProcess, type AdminOutcome } from '../helpers/admin-cli.js';
import { cliEnv, runCommand, tempFolders, type Finished } from '../helpers/cli.js';
import { FakeClock } from '../helpers/clock.js';
import { openTestDatabase, useMigratedDatabase, type TestDatabase } from '../helpers/database.js';
import { testSecret } from '../helpers/harness.js';

/**
 * The command line for many stores: store create, list, show, set, hosts and
 * delete, and --store on the commands about one store's data. Most tests parse the words and run
 * the command in-process against a real database, as main.ts does; the last suite runs the binary.
 */

const config = loadConfig({ APP_SECRET: testSecret, DATA_DIR: '/nonexistent' });
const several = 'the deployment has several stores: name one with --store <slug>';

describe('the store commands against a real database', () => {
  const database = useMigratedDatabase();
  const clock = new FakeClock();

  const adminCommand = { what: 'an admin command', is: (name: string) => name !== 'import' };
  const cli = (...argv: string[]): Promise<AdminOutcome> =>
    runAdminInProcess({ db: database.db, clock, config, keys: deriveKeys(testSecret) }, argv, adminCommand);

  /** Runs a command that must succeed: its output. */
  async function ok(...argv: string[]): Promise<any> {
    const outcome = await cli(...argv);
    assert.equal(outcome.code, 0, `${argv.join(' ')}: ${outcome.error}`);
    return outcome.output;
  }

  /** Makes the store books beside the first one; while that has no host, the answer warns of it. */
  async function secondStore(firstHasHost = false): Promise<any> {
    const { warning, ...created } = await ok(
      'store',
      'create',
      '--slug',
      'books',
      '--name',
      'Book Shop',
      '--host',
      'bücher.example',
      '--host',
      'Books.Example.com.',
    );
    if (firstHasHost) assert.equal(warning, undefined);
    else assert.match(warning, /^the store default has no host: it answered on every host as the only store/);
    return created;
  }

  beforeEach(async () => {
    // A deployment as first started: the store made from configuration, alone.
    await database.db.query('TRUNCATE stores, store_hosts RESTART IDENTITY CASCADE');
    await ensureStore(database.db, clock, { name: 'My Store', identityMode: 'email', verificationRequired: false });
  });

  test('store create makes a second store with two hosts, an IDN host kept as punycode, and store list shows both', async () => {
    const created = await secondStore();
    assert.equal(created.slug, 'books');
    assert.equal(created.name, 'Book Shop');
    assert.equal(created.status, 'active');
    assert.equal(created.identity_mode, 'email');
    assert.equal(created.settings['auth.customer_verification_required'], false);
    assert.deepEqual(
      created.hosts,
      ['books.example.com', 'xn--bcher-kva.example'],
      'lowercase, punycode, no trailing dot',
    );
    assert.match(created.id, /^[0-9a-f-]{36}$/);

    const listed = await ok('store', 'list');
    assert.deepEqual(
      listed.map((store: any) => [store.slug, store.hosts]),
      [
        ['books', ['books.example.com', 'xn--bcher-kva.example']],
        ['default', []],
      ],
    );
  });

  test('store create takes the identity mode, verification and the settings of store set', async () => {
    const created = await ok(
      'store',
      'create',
      '--slug',
      'phone-shop',
      '--name',
      'Phone Shop',
      '--identity-mode',
      'phone',
      '--verification-required',
      'true',
      '--allowed-origin',
      'http://localhost:5173',
      '--mail-from',
      'Phone Shop <shop@phone.example>',
    );
    assert.equal(created.identity_mode, 'phone');
    assert.equal(created.settings['auth.customer_verification_required'], true);
    assert.deepEqual(created.allowed_origins, ['http://localhost:5173']);
    assert.equal(created.mail_from, 'Phone Shop <shop@phone.example>');
    assert.deepEqual(created.hosts, []);
  });

  test('store create refuses a slug a live store has', async () => {
    await secondStore();
    const again = await cli('store', 'create', '--slug', 'books', '--name', 'Other');
    assert.deepEqual(again, { code: 1, error: 'a store with the slug books exists already' });
  });

  test('store show and store set find a store by its slug or id, and change that store only', async () => {
    const books = await secondStore();
    assert.deepEqual(await ok('store', 'show', '--store', 'books'), books);
    assert.deepEqual(await ok('store', 'show', '--store', books.id), books);

    const set = await ok(
      'store',
      'set',
      '--store',
      'books',
      '--name',
      'Books & More',
      '--allowed-origin',
      'https://Shop.Books.example/',
      '--allowed-origin',
      'http://localhost:5173',
      '--mail-from',
      'Books, Ltd <shop@books.example>',
      '--sms-sender',
      'BOOKS',
      '--webauthn-rp-id',
      'Bücher.example',
    );
    assert.equal(set.name, 'Books & More');
    assert.deepEqual(set.allowed_origins, ['https://shop.books.example', 'http://localhost:5173']);
    assert.equal(set.mail_from, '"Books, Ltd" <shop@books.example>', 'quoted, so the comma splits no From line');
    assert.equal(set.sms_sender, 'BOOKS');
    assert.equal(set.webauthn_rp_id, 'xn--bcher-kva.example');
    assert.deepEqual(await ok('store', 'show', '--store', 'books'), set);

    const replaced = await ok('store', 'set', '--store', 'books', '--allowed-origin', 'https://books.example.org');
    assert.deepEqual(replaced.allowed_origins, ['https://books.example.org'], '--allowed-origin replaces the list');
    const cleared = await ok(
      'store',
      'set',
      '--store',
      'books',
      '--allowed-origin',
      '',
      '--mail-from',
      '',
      '--sms-sender',
      '',
    );
    assert.deepEqual(cleared.allowed_origins, []);
    assert.equal(cleared.mail_from, null);
    assert.equal(cleared.sms_sender, null);
    assert.equal(cleared.webauthn_rp_id, 'xn--bcher-kva.example', 'what was not named stays');

    const first = await ok('store', 'show', '--store', 'default');
    assert.equal(first.name, 'My Store');
    assert.deepEqual(first.allowed_origins, []);
    assert.equal(first.mail_from, null);
  });

  test("store set and create take the languages and default; only a default or only languages are checked against the store's", async () => {
    const first = await ok('store', 'show');
    assert.deepEqual([first.languages, first.default_language], [['en'], 'en'], 'a store made before: English');
    const set = await ok('store', 'set', '--languages', 'en, AR,en', '--default-language', 'ar');
    assert.deepEqual([set.languages, set.default_language], [['en', 'ar'], 'ar']);
    assert.deepEqual(await ok('store', 'show'), set);
    assert.deepEqual(await cli('store', 'set', '--languages', 'en'), {
      code: 1,
      error: `--default-language must be given: the store's default language, "ar", is not among the new languages (en)`,
    });
    const onlyDefault = await ok('store', 'set', '--default-language', 'en');
    assert.deepEqual([onlyDefault.languages, onlyDefault.default_language], [['en', 'ar'], 'en']);
    const dropped = await ok('store', 'set', '--languages', 'en');
    assert.deepEqual([dropped.languages, dropped.default_language], [['en'], 'en'], 'the default kept');
    assert.deepEqual(await cli('store', 'set', '--default-language', 'ar'), {
      code: 1,
      error: `--default-language "ar" is not one of the store's languages (en); give the languages with it`,
    });

    const created = await ok('store', 'create', '--slug', 'souk', '--name', 'Souk', '--languages', 'ar,en');
    assert.deepEqual([created.languages, created.default_language], [['ar', 'en'], 'ar'], 'by default the first');
    const listed = await ok('store', 'list');
    assert.deepEqual(
      listed.map((store: any) => [store.slug, store.languages, store.default_language]),
      [
        ['default', ['en'], 'en'],
        ['souk', ['ar', 'en'], 'ar'],
      ],
    );
  });

  test('a host another store holds is refused naming the host and its store, and nothing is made or moved', async () => {
    await secondStore();
    const created = await cli(
      'store',
      'create',
      '--slug',
      'rival',
      '--name',
      'Rival',
      '--host',
      'rival.example',
      '--host',
      'BÜCHER.example',
    );
    assert.equal(created.code, 1);
    assert.equal(
      created.error,
      'the host bücher.example (xn--bcher-kva.example) belongs to the store books; remove it there first',
    );
    assert.deepEqual(
      (await ok('store', 'list')).map((store: any) => store.slug),
      ['books', 'default'],
      'the store was not made, not even without the host',
    );

    const added = await cli('store', 'hosts', 'add', '--store', 'default', 'books.example.com');
    assert.deepEqual(added, {
      code: 1,
      error: 'the host books.example.com belongs to the store books; remove it there first',
    });
    assert.deepEqual((await ok('store', 'show', '--store', 'default')).hosts, []);
    assert.deepEqual((await ok('store', 'show', '--store', 'books')).hosts, [
      'books.example.com',
      'xn--bcher-kva.example',
    ]);
  });

  test('store hosts add and remove change the hosts of the store named, and removing a host it lacks is refused', async () => {
    await secondStore();
    const added = await ok('store', 'hosts', 'add', '--store', 'books', 'Livres.example');
    assert.deepEqual(added.hosts, ['books.example.com', 'livres.example', 'xn--bcher-kva.example']);
    assert.deepEqual(
      (await ok('store', 'hosts', 'add', '--store', 'books', 'livres.example')).hosts,
      added.hosts,
      'adding a host the store has changes nothing',
    );

    const removed = await ok('store', 'hosts', 'remove', '--store', 'books', 'bücher.example');
    assert.deepEqual(removed.hosts, ['books.example.com', 'livres.example'], 'removed by its Unicode form');
    const missing = await cli('store', 'hosts', 'remove', '--store', 'books', 'bücher.example');
    assert.deepEqual(missing, { code: 1, error: 'the store books has no host bücher.example (xn--bcher-kva.example)' });

    // The host another store gave up is free.
    assert.deepEqual((await ok('store', 'hosts', 'add', '--store', 'default', 'bücher.example')).hosts, [
      'xn--bcher-kva.example',
    ]);
  });

  test("store set --cookie-domain is checked against the hosts; removing the last host on the passkeys' relying party needs --force", async () => {
    const books = await secondStore();
    assert.equal(books.webauthn_rp_id, 'xn--bcher-kva.example', 'fixed to the first host given');
    await ok('store', 'hosts', 'add', '--store', 'default', 'shop.example.org');
    const set = await ok('store', 'set', '--store', 'books', '--cookie-domain', 'example.com');
    assert.equal(set.cookie_domain, 'example.com');
    // example.com would now carry books' cookies to the first store's host.
    const shared = await cli('store', 'hosts', 'add', '--store', 'default', 'www.example.com');
    assert.equal(shared.code, 1);
    assert.match(shared.error!, /^the host www\.example\.com is under another store's cookie domain/);
    const offHosts = await cli('store', 'set', '--store', 'default', '--cookie-domain', 'elsewhere.example');
    assert.equal(offHosts.code, 1);
    assert.match(
      offHosts.error!,
      /^--cookie-domain "elsewhere\.example" is neither a host of the store nor a parent of one/,
    );
    assert.equal((await ok('store', 'set', '--store', 'books', '--cookie-domain', '')).cookie_domain, null);

    const customerId = '00000000-0000-4000-8000-00000000000d';
    const sdb = forStore(database.db, books.id);
    const now = clock.now();
    await insertCustomer(sdb, {
      id: customerId,
      name: 'A',
      type: 'email',
      value: 'a@example.com',
      passwordHash: 'x',
      now,
    });
    const passkey = {
      customerId,
      credentialId: 'credential',
      publicKey: new Uint8Array([0]),
      counter: 0,
      transports: [],
      name: 'Phone',
    };
    assert.ok(await insertPasskey(sdb, clock, passkey));
    const refused = await cli('store', 'hosts', 'remove', '--store', 'books', 'bücher.example');
    assert.equal(refused.code, 1);
    assert.match(refused.error!, /the relying party ID of the store's 1 passkey, .* or remove the host with --force$/);
    const forced = await ok('store', 'hosts', 'remove', '--store', 'books', '--force', 'bücher.example');
    assert.deepEqual(forced.hosts, ['books.example.com']);
    assert.equal(forced.webauthn_rp_id, 'xn--bcher-kva.example');
    const moved = await ok('store', 'set', '--store', 'books', '--webauthn-rp-id', 'books.example.com');
    assert.match(moved.warning, /^1 passkey was made for the relying party ID xn--bcher-kva\.example/);
  });

  test('on one store the commands work without --store as before; with two they refuse naming --store', async () => {
    const alone = [
      ['store', 'show'],
      ['store', 'set', '--sign-in-with-code', 'true'],
      ['store', 'hosts', 'add', 'shop.example.com'],
      ['customer', 'show', 'nobody@example.com'],
      ['outbox', 'list'],
      ['audit'],
    ];
    const first = await ok('store', 'show');
    assert.equal(first.id, firstStoreId);
    assert.equal(first.slug, 'default');
    assert.equal((await ok('store', 'set', '--sign-in-with-code', 'true')).settings['auth.sign_in_with_code'], true);
    assert.deepEqual((await ok('store', 'hosts', 'add', 'shop.example.com')).hosts, ['shop.example.com']);
    assert.deepEqual(await cli('customer', 'show', 'nobody@example.com'), {
      code: 1,
      error: 'no customer with email nobody@example.com',
    });
    assert.deepEqual(await ok('outbox', 'list'), []);
    // The two changes are in the store's trail, as the admin API records them.
    assert.deepEqual(
      (await ok('audit')).map(({ event, details }: any) => ({ event, details })),
      [
        { event: 'store.changed', details: { by: 'operator', host_added: 'shop.example.com' } },
        { event: 'store.changed', details: { by: 'operator', fields: 'settings' } },
      ],
    );

    await secondStore(true);
    for (const argv of [
      ...alone,
      ['store', 'hosts', 'remove', 'shop.example.com'],
      ['customer', 'delete', 'ada@example.com', '--yes'],
      ['customer', 'sessions', 'ada@example.com'],
      ['outbox', 'retry', '1'],
    ]) {
      assert.deepEqual(await cli(...argv), { code: 1, error: several }, argv.join(' '));
    }
    assert.ok((await ok('prune')).removed !== undefined, 'prune works on every store without --store');
    assert.equal((await ok('store', 'list')).length, 2);
  });

  test('store providers add, list and remove manage the providers of the store named, and refuse bad flags naming them', async () => {
    await secondStore();
    const added = await ok(
      'store',
      'providers',
      'add',
      '--store',
      'books',
      '--id',
      'google',
      '--preset',
      'google',
      '--client-id',
      'books.apps.example',
      '--client-secret',
      'books-secret',
    );
    assert.equal(added.status, 'added');
    assert.equal(added.issuer, 'https://accounts.google.com');
    assert.ok(!JSON.stringify(added).includes('books-secret'));
    // Another store's list does not show it.
    assert.deepEqual(await ok('store', 'providers', 'list', '--store', 'default'), []);
    const listed = await ok('store', 'providers', 'list', '--store', 'books');
    assert.deepEqual(
      listed.map((p: { id: string }) => p.id),
      ['google'],
    );
    assert.ok(!JSON.stringify(listed).includes('books-secret'));

    const refused = await cli(
      'store',
      'providers',
      'add',
      '--store',
      'books',
      '--id',
      'own',
      '--issuer',
      'http://idp.example.com',
      '--client-id',
      'c',
      '--private-key',
      '/nonexistent/key.p8',
      '--key-id',
      'K',
      '--team-id',
      'T',
    );
    assert.equal(refused.code, 1);
    assert.match(refused.error!, /^--private-key \/nonexistent\/key\.p8 cannot be read/);

    // A secret from a file, out of the shell's history: its trailing newline is not part of it.
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-cli-secret-'));
    const secretFile = path.join(folder, 'secret');
    fs.writeFileSync(secretFile, 'from-a-file\n');
    const args = ['--store', 'books', '--id', 'filed', '--preset', 'google', '--client-id', 'c'];
    await ok('store', 'providers', 'add', ...args, '--client-secret-file', secretFile);
    const booksId = (await ok('store', 'show', '--store', 'books')).id as string;
    assert.deepEqual((await loadProvider(forStore(database.db, booksId), deriveKeys(testSecret), 'filed'))?.secret, {
      kind: 'client_secret',
      value: 'from-a-file',
    });
    fs.rmSync(folder, { recursive: true, force: true });
    const badFields = await cli(
      'store',
      'providers',
      'add',
      '--store',
      'books',
      '--id',
      'own',
      '--issuer',
      'http://idp.example.com',
      '--client-id',
      'c',
    );
    assert.equal(badFields.code, 1);
    assert.match(badFields.error!, /--issuer "http:\/\/idp\.example\.com" must be https:\/\//);
    assert.match(badFields.error!, /--client-secret give the client secret/);
    assert.equal((await cli('store', 'providers', 'add', '--store', 'books', '--id', 'x')).code, 2);
    assert.equal((await cli('store', 'providers', 'rename', '--store', 'books')).code, 2);

    assert.deepEqual(await ok('store', 'providers', 'remove', '--store', 'books', '--id', 'google'), {
      id: 'google',
      status: 'removed',
    });
    assert.deepEqual(await cli('store', 'providers', 'remove', '--store', 'books', '--id', 'google'), {
      code: 1,
      error: 'the store books has no provider google',
    });
  });

  test('a store named that does not exist is refused naming it', async () => {
    assert.deepEqual(await cli('store', 'show', '--store', 'nowhere'), { code: 1, error: 'no store nowhere' });
    assert.deepEqual(await cli('customer', 'show', 'a@example.com', '--store', 'nowhere'), {
      code: 1,
      error: 'no store nowhere',
    });
  });

  test('store delete needs --confirm equal to the slug; afterwards the slug and hosts are free for a new store', async () => {
    const books = await secondStore();
    assert.deepEqual(await cli('store', 'delete', '--store', 'books'), {
      code: 2,
      error:
        'store delete needs --store <slug> and --confirm <the same slug>: it deletes the store and everything it holds',
    });
    assert.deepEqual(await cli('store', 'delete', '--store', 'books', '--confirm', 'default'), {
      code: 1,
      error: '--confirm must repeat the slug of the store to delete, books; nothing was deleted',
    });
    assert.deepEqual(await cli('store', 'delete', '--store', books.id, '--confirm', books.id), {
      code: 1,
      error: '--confirm must repeat the slug of the store to delete, books; nothing was deleted',
    });
    assert.deepEqual(await ok('store', 'show', '--store', 'books'), books, 'still there');

    const deleted = await ok('store', 'delete', '--store', books.id, '--confirm', 'books');
    assert.equal(deleted.id, books.id);
    assert.equal(deleted.slug, 'books');
    assert.equal(deleted.status, 'deleted');
    assert.deepEqual(deleted.freed_hosts, books.hosts);
    assert.match(deleted.erasure, /continues in the background/);

    assert.deepEqual(await cli('store', 'show', '--store', 'books'), { code: 1, error: 'no store books' });
    assert.deepEqual(
      (await ok('store', 'list')).map((store: any) => store.slug),
      ['default'],
    );
    assert.equal((await ok('store', 'show')).slug, 'default', 'one store again: no --store needed');

    const reborn = await secondStore();
    assert.notEqual(reborn.id, books.id, 'a new store');
    assert.deepEqual(reborn.hosts, books.hosts, 'took the hosts of the deleted store');
    assert.deepEqual(await cli('store', 'delete', '--store', books.id, '--confirm', 'books'), {
      code: 1,
      error: `no store ${books.id}`,
    });
  });

  test('customer show, audit and outbox list with --store read the store named only', async () => {
    const books = await secondStore();
    const now = clock.now();
    const insert = async (storeId: string, id: string, value: string) => {
      const row = await insertCustomer(forStore(database.db, storeId), {
        id,
        name: value,
        type: 'email',
        value,
        passwordHash: 'not-a-hash',
        now,
      });
      assert.ok(row !== null);
      await writeAuditEntry(forStore(database.db, storeId), clock, { event: 'login.failed', customerId: id });
    };
    await insert(firstStoreId, '00000000-0000-4000-8000-00000000000a', 'ada@example.com');
    await insert(books.id, '00000000-0000-4000-8000-00000000000b', 'ada@example.com');
    await insert(books.id, '00000000-0000-4000-8000-00000000000c', 'grace@example.com');

    assert.equal(
      (await ok('customer', 'show', 'ADA@example.com', '--store', 'default')).id,
      '00000000-0000-4000-8000-00000000000a',
    );
    assert.equal(
      (await ok('customer', 'show', 'ada@example.com', '--store', 'books')).id,
      '00000000-0000-4000-8000-00000000000b',
    );
    assert.equal(
      (await ok('customer', 'show', 'grace@example.com', '--store', books.id)).id,
      '00000000-0000-4000-8000-00000000000c',
    );
    assert.deepEqual(await cli('customer', 'show', 'grace@example.com', '--store', 'default'), {
      code: 1,
      error: 'no customer with email grace@example.com',
    });

    const audit = async (store: string) =>
      (await ok('audit', '--store', store, '--event', 'login.failed')).map((entry: any) => entry.customer_id).sort();
    assert.deepEqual(await audit('default'), ['00000000-0000-4000-8000-00000000000a']);
    assert.deepEqual(await audit('books'), [
      '00000000-0000-4000-8000-00000000000b',
      '00000000-0000-4000-8000-00000000000c',
    ]);
    assert.deepEqual(await ok('outbox', 'list', '--store', 'books'), []);
  });
});

describe('store command values are checked before any database is opened, with one line naming the flag', () => {
  const cases: Array<[string[], RegExp]> = [
    [['store', 'create', '--name', 'X'], /^store create needs --slug .* and --name$/],
    [['store', 'create', '--slug', 'ab', '--name', 'X'], /^--slug "ab" must be 3 to 63 of a-z, 0-9 and -$/],
    [['store', 'create', '--slug', 'Books', '--name', 'X'], /^--slug "Books" must be 3/],
    [['store', 'create', '--slug', 'a'.repeat(64), '--name', 'X'], /^--slug "a{64}" must be 3/],
    [
      ['store', 'create', '--slug', 'books', '--name', 'X', '--host', 'shop.example.com:8443'],
      /^--host "shop.example.com:8443": give the host name without a port/,
    ],
    [
      ['store', 'create', '--slug', 'books', '--name', 'X', '--host', '*.example.com'],
      /^--host "\*.example.com": a wildcard is not a host/,
    ],
    [
      ['store', 'create', '--slug', 'books', '--name', 'X', '--host', 'https://shop.example.com/'],
      /^--host .*without a scheme or path/,
    ],
    [
      ['store', 'create', '--slug', 'books', '--name', 'X', '--host', '10.0.0.1'],
      /^--host "10.0.0.1" is not a host name/,
    ],
    [
      ['store', 'create', '--slug', 'books', '--name', 'X', '--identity-mode', 'fax'],
      /^--identity-mode must be one of email, phone$/,
    ],
    [
      ['store', 'set', '--allowed-origin', 'https://shop.example.com/checkout'],
      /^--allowed-origin "https:\/\/shop.example.com\/checkout" must be an origin alone, without a path/,
    ],
    [['store', 'set', '--allowed-origin', 'shop.example.com'], /^--allowed-origin "shop.example.com" is not an origin/],
    [
      ['store', 'set', '--allowed-origin', 'ftp://shop.example.com'],
      /^--allowed-origin .* must be an http:\/\/ or https:\/\/ origin/,
    ],
    [['store', 'set', '--allowed-origin', 'https://*.example.com'], /^--allowed-origin .*: a wildcard is not allowed/],
    [
      ['store', 'set', '--mail-from', 'shop@example.com'],
      /^--mail-from "shop@example.com" must be a sender name and an address/,
    ],
    [['store', 'set', '--mail-from', 'Shop <shop@example.com>\r\nBcc: x@y'], /^--mail-from .* holds a line break/],
    [['store', 'set', '--webauthn-rp-id', 'shop.example.com:443'], /^--webauthn-rp-id .* without a port/],
    [['store', 'set', '--languages', 'en,xx'], /^--languages "xx" is not a language this service speaks \(ar, en\)$/],
    [['store', 'set', '--languages', ' , '], /^--languages must name at least one language, such as en$/],
    [['store', 'set', '--default-language', 'xx'], /^--default-language "xx" is not a language this service speaks/],
    [
      ['store', 'set', '--languages', 'en', '--default-language', 'ar'],
      /^--default-language "ar" is not one of the store's languages \(en\)$/,
    ],
    [
      ['store', 'create', '--slug', 'souk', '--name', 'X', '--default-language', 'ar'],
      /^--default-language "ar" is not one of the store's languages \(en\); give the languages with it$/,
    ],
    [['store', 'hosts', 'add', 'a:b:c'], /^store hosts add "a:b:c" is not a host name/],
    [['store', 'hosts', 'add'], /^store hosts add needs a host$/],
    [['store', 'hosts', 'move', 'shop.example.com'], /^store hosts needs add or remove, and a host$/],
    [['store', 'delete', '--confirm', 'books'], /^store delete needs --store <slug> and --confirm/],
    [['store', 'show', '--store', ' '], /^--store needs a store slug \(or id\)$/],
    [['prune', '--store', 'books'], /^prune works on every store at once: it takes no --store$/],
    [
      ['store', 'create', '--store', 'books', '--slug', 'books', '--name', 'X'],
      /^store create names the new store with --slug, not --store$/,
    ],
    [['customer', 'show', 'a@example.com', '--confirm', 'x'], /^customer show takes no --confirm$/],
  ];
  for (const [argv, reason] of cases) {
    test(`${argv.join(' ')} is refused as bad usage, in one line saying what is wrong`, () => {
      assert.throws(
        () => parseCommand(argv),
        (error: unknown) => error instanceof UsageError && reason.test(error.message) && !error.message.includes('\n'),
      );
    });
  }
});

describe('the store commands as the binary runs them, against DATABASE_URL', { timeout: 120_000 }, () => {
  const folders = tempFolders('sfa-cli-stores-');
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  const slow = { timeout: 60_000 };
  const run = (...argv: string[]): Promise<Finished> => runCommand(argv, env);

  before(async () => {
    database = await openTestDatabase();
    env = cliEnv(path.join(folders.fresh(), 'unused'), { DATABASE_URL: database.url, APP_SECRET: testSecret });
  });
  after(async () => {
    await database.drop();
    folders.removeAll();
  });

  test('creates a store with an IDN host, then store show without --store exits 1 naming --store', slow, async () => {
    const created = await run('store', 'create', '--slug', 'books', '--name', 'Book Shop', '--host', 'bücher.example');
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual(JSON.parse(created.stdout).hosts, ['xn--bcher-kva.example']);

    const unnamed = await run('store', 'show');
    assert.equal(unnamed.code, 1);
    assert.equal(unnamed.stderr, `storefront-auth: ${several}\n`);
    assert.equal(unnamed.stdout, '');

    const listed = await run('store', 'list');
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as Array<{ slug: string }>).map((store) => store.slug),
      ['books', 'default'],
    );
  });

  test('store delete with a --confirm other than the slug exits 1, and with the slug exits 0', slow, async () => {
    const created = await run('store', 'create', '--slug', 'music', '--name', 'Music Shop', '--host', 'music.example');
    assert.equal(created.code, 0, created.stderr);
    const refused = await run('store', 'delete', '--store', 'music', '--confirm', 'musik');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^storefront-auth: --confirm must repeat the slug of the store to delete, music/);
    const deleted = await run('store', 'delete', '--store', 'music', '--confirm', 'music');
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(JSON.parse(deleted.stdout).status, 'deleted');
    const shown = await run('store', 'show', '--store', 'music');
    assert.equal(shown.code, 1);
    assert.equal(shown.stderr, 'storefront-auth: no store music\n');
  });

  test(
    'a host with a port exits 2 with the reason and the usage, and --help names the store commands',
    slow,
    async () => {
      const bad = await run('store', 'hosts', 'add', 'shop.example.com:8080');
      assert.equal(bad.code, 2);
      assert.match(
        bad.stderr,
        /^storefront-auth: store hosts add "shop.example.com:8080": give the host name without a port/,
      );
      assert.match(bad.stderr, /Usage: storefront-auth/);
      const help = await run('--help');
      assert.equal(help.code, 0);
      for (const words of [
        'store list',
        'store create --slug S --name N',
        'store hosts add',
        'store delete --store S --confirm S',
        '--store S',
      ])
        assert.ok(help.stdout.includes(words), `the usage names ${words}`);
    },
  );
});
