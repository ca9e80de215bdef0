import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { parseCommand, UsageError } from '../../src/cli/arguments.js';
import { runAdminCommand } from '../../src/cli/commands.js';
import { loadConfig } from '../../src/config.js';
import { deriveKeys } from '../../src/keys.js';
import { ensureStore } from '../../src/store/store.js';
import { runAdminInProcess, type AdminOutcome } from '../helpers/admin-cli.js';
import { cliEnv, runCommand, tempFolders, type Finished } from '../helpers/cli.js';
import { FakeClock } from '../helpers/clock.js';
import { openTestDatabase, useMigratedDatabase, type TestDatabase } from '../helpers/database.js';
import { testSecret } from '../helpers/harness.js';

/**
 * `webhooks add|list|remove`: a store's webhook endpoints from the command line, under the admin
 * API's rules. Most tests parse the words and run the command in-process against a real database,
 * as main.ts does; the last suite runs the binary.
 */

const environment = { APP_SECRET: testSecret, DATA_DIR: '/nonexistent' };
const privateRefusal = (url: string) =>
  `--url ${JSON.stringify(url)} points at a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE=true allows it)`;

describe('the webhooks commands against a real database', () => {
  const database = useMigratedDatabase();
  const clock = new FakeClock();

  const webhooksCommand = {
    what: 'a webhooks command',
    is: (name: string) => name.startsWith('webhooks.'),
  };
  /** `storefront-auth …argv` in-process, with the environment given (WEBHOOK_ALLOW_PRIVATE, say). */
  const cliWith = (env: Record<string, string>, ...argv: string[]): Promise<AdminOutcome> =>
    runAdminInProcess(
      { db: database.db, clock, config: loadConfig({ ...environment, ...env }), keys: deriveKeys(testSecret) },
      argv,
      webhooksCommand,
    );
  const cli = (...argv: string[]) => cliWith({ WEBHOOK_ALLOW_PRIVATE: 'true' }, ...argv);

  async function ok(...argv: string[]): Promise<any> {
    const outcome = await cli(...argv);
    assert.equal(outcome.code, 0, `${argv.join(' ')}: ${outcome.error}`);
    return outcome.output;
  }

  /** `store.changed` entries of the store named, newest first, by the `audit` command. */
  async function storeChanges(store = 'default'): Promise<Array<Record<string, string>>> {
    const outcome = await runAdminCommand(
      { db: database.db, clock, config: loadConfig(environment) },
      { name: 'audit.list', event: 'store.changed', store },
    );
    return (outcome.output as Array<{ details: Record<string, string>; client_address: string | null }>).map(
      (entry) => {
        assert.equal(entry.client_address, null, 'an operator has no client address');
        return entry.details;
      },
    );
  }

  beforeEach(async () => {
    // A deployment as first started: the store made from configuration, alone.
    await database.db.query('TRUNCATE stores, store_hosts RESTART IDENTITY CASCADE');
    await ensureStore(database.db, clock, { name: 'My Store', identityMode: 'email', verificationRequired: false });
  });

  test('add prints the endpoint with its secret, list shows it without, remove removes it; add and remove are audited', async () => {
    const url = 'http://127.0.0.1:9/hooks';
    const added = await ok(
      'webhooks',
      'add',
      '--url',
      url,
      '--events',
      'customer.registered, customer.deleted,customer.registered',
      '--description',
      'CRM',
    );
    assert.match(added.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(added.url, url);
    assert.deepEqual(added.events, ['customer.registered', 'customer.deleted'], 'spaces and repeats forgiven');
    assert.equal(added.description, 'CRM');
    assert.equal(added.enabled, true);

    const listed = await ok('webhooks', 'list');
    const { secret, ...withoutSecret } = added;
    assert.deepEqual(listed, [withoutSecret]);
    assert.ok(!JSON.stringify(listed).includes(secret), 'the secret is shown once only');
    assert.deepEqual(await storeChanges(), [{ webhook_added: added.id, by: 'operator' }]);

    assert.deepEqual(await ok('webhooks', 'remove', '--id', added.id), { id: added.id, status: 'removed' });
    assert.deepEqual(await ok('webhooks', 'list'), []);
    assert.deepEqual(await cli('webhooks', 'remove', '--id', added.id), {
      code: 1,
      error: `the store default has no webhook endpoint ${added.id}`,
    });
    assert.deepEqual(await cli('webhooks', 'remove', '--id', 'not-an-id'), {
      code: 1,
      error: 'the store default has no webhook endpoint not-an-id',
    });
    assert.deepEqual(await storeChanges(), [
      { webhook_removed: added.id, by: 'operator' },
      { webhook_added: added.id, by: 'operator' },
    ]);
  });

  test('without WEBHOOK_ALLOW_PRIVATE a private, loopback or link-local target is refused naming --url, and nothing is added', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hooks',
      'http://10.1.2.3/hooks',
      'http://[::1]/hooks',
      'http://169.254.169.254/latest',
    ]) {
      assert.deepEqual(await cliWith({}, 'webhooks', 'add', '--url', url, '--events', '*'), {
        code: 1,
        error: privateRefusal(url),
      });
    }
    const named = await cliWith({}, 'webhooks', 'add', '--url', 'http://localhost:8080/hooks', '--events', '*');
    assert.equal(named.code, 1);
    assert.match(
      named.error!,
      /^--url "localhost" resolves to (127\.0\.0\.1|::1), a private, loopback or link-local address/,
    );
    assert.deepEqual(await ok('webhooks', 'list'), []);
    assert.deepEqual(await storeChanges(), [], 'a refusal is not audited');
  });

  test('a bad URL and unknown events are refused together, each naming its flag; production takes https:// only', async () => {
    const refused = await cli(
      'webhooks',
      'add',
      '--url',
      'crm.example/hooks',
      '--events',
      'customer.nope,customer.deleted',
    );
    assert.equal(refused.code, 1);
    assert.equal(
      refused.error,
      '--url "crm.example/hooks" is not a URL, such as https://shop.example/webhooks; --events "customer.nope": no such event (see the admin OpenAPI document\'s webhooks)',
    );
    assert.deepEqual(await cli('webhooks', 'add', '--url', 'https://crm.example/hooks', '--events', ' , '), {
      code: 1,
      error: '--events must name at least one event, or "*" for all',
    });
    const production = await cliWith(
      { NODE_ENV: 'production', DELIVERY_LOG_IN_PRODUCTION: 'true' },
      'webhooks',
      'add',
      '--url',
      'http://crm.example/hooks',
      '--events',
      '*',
    );
    assert.deepEqual(production, { code: 1, error: '--url "http://crm.example/hooks" must be https://' });
    assert.deepEqual(await ok('webhooks', 'list'), []);
  });

  test('a store has 20 endpoints at most: the 21st is refused saying so', async () => {
    for (let n = 0; n < 20; n++) await ok('webhooks', 'add', '--url', `http://127.0.0.1:9/hooks/${n}`, '--events', '*');
    assert.deepEqual(await cli('webhooks', 'add', '--url', 'http://127.0.0.1:9/one-more', '--events', '*'), {
      code: 1,
      error: 'the store default has 20 webhook endpoints, as many as it may: remove one first',
    });
    assert.equal((await ok('webhooks', 'list')).length, 20);
  });

  test('--store names the store; an unknown store is refused naming it; with two stores the store must be named', async () => {
    await runAdminCommand(
      { db: database.db, clock, config: loadConfig(environment) },
      {
        name: 'store.create',
        store: { slug: 'books', name: 'Books', identityMode: 'email', hosts: ['books.example'] },
      },
    );
    const added = await ok('webhooks', 'add', '--store', 'books', '--url', 'http://127.0.0.1:9/books', '--events', '*');
    assert.deepEqual(
      (await ok('webhooks', 'list', '--store', 'books')).map((endpoint: { id: string }) => endpoint.id),
      [added.id],
    );
    assert.deepEqual(await ok('webhooks', 'list', '--store', 'default'), [], "another store's list does not show it");
    assert.deepEqual(await cli('webhooks', 'remove', '--store', 'default', '--id', added.id), {
      code: 1,
      error: `the store default has no webhook endpoint ${added.id}`,
    });
    assert.deepEqual(await storeChanges('books'), [{ webhook_added: added.id, by: 'operator' }]);
    for (const argv of [
      ['webhooks', 'list', '--store', 'nowhere'],
      ['webhooks', 'add', '--store', 'nowhere', '--url', 'https://crm.example/hooks', '--events', '*'],
      ['webhooks', 'remove', '--store', 'nowhere', '--id', added.id],
    ])
      assert.deepEqual(await cli(...argv), { code: 1, error: 'no store nowhere' }, argv.join(' '));
    assert.deepEqual(await cli('webhooks', 'list'), {
      code: 1,
      error: 'the deployment has several stores: name one with --store <slug>',
    });
  });
});

describe('webhooks command words are checked before any database is opened, with one line naming the flag', () => {
  const cases: Array<[string[], RegExp]> = [
    [['webhooks'], /^webhooks needs add, list or remove$/],
    [['webhooks', 'show'], /^webhooks needs add, list or remove$/],
    [['webhooks', 'add', '--url', 'https://crm.example/hooks'], /^webhooks add needs --url and --events/],
    [['webhooks', 'add', '--events', '*'], /^webhooks add needs --url and --events/],
    [
      ['webhooks', 'add', '--url', `https://crm.example/${'a'.repeat(2030)}`, '--events', '*'],
      /^--url must be at most 2048 characters$/,
    ],
    [
      ['webhooks', 'add', '--url', 'https://crm.example/hooks', '--events', '*', '--description', 'd'.repeat(501)],
      /^--description must be at most 500 characters$/,
    ],
    [
      [
        'webhooks',
        'add',
        '--url',
        'https://crm.example/hooks',
        '--events',
        Array(21).fill('customer.deleted').join(','),
      ],
      /^--events names at most 20 event types$/,
    ],
    [['webhooks', 'remove'], /^webhooks remove needs --id, the endpoint to remove$/],
    [['webhooks', 'list', '--url', 'https://crm.example/hooks'], /^webhooks list takes no --url$/],
    [['webhooks', 'list', 'extra'], /^unexpected argument "extra"$/],
    [['store', 'show', '--events', '*'], /^store show takes no --events$/],
  ];
  for (const [argv, reason] of cases) {
    test(`${argv.join(' ').slice(0, 80)} is refused as bad usage, in one line saying what is wrong`, () => {
      assert.throws(
        () => parseCommand(argv),
        (error: unknown) => error instanceof UsageError && reason.test(error.message) && !error.message.includes('\n'),
      );
    });
  }
});

describe('the webhooks commands as the binary runs them, against DATABASE_URL', { timeout: 120_000 }, () => {
  const folders = tempFolders('sfa-cli-webhooks-');
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  const slow = { timeout: 60_000 };
  const run = (extra: Record<string, string>, ...argv: string[]): Promise<Finished> =>
    runCommand(argv, { ...env, ...extra });

  before(async () => {
    database = await openTestDatabase();
    env = cliEnv(path.join(folders.fresh(), 'unused'), { DATABASE_URL: database.url, APP_SECRET: testSecret });
  });
  after(async () => {
    await database.drop();
    folders.removeAll();
  });

  test(
    'add prints JSON with the secret and list without it, with WEBHOOK_ALLOW_PRIVATE=true; remove exits 0',
    slow,
    async () => {
      const allowed = { WEBHOOK_ALLOW_PRIVATE: 'true' };
      const added = await run(allowed, 'webhooks', 'add', '--url', 'http://127.0.0.1:9/hooks', '--events', '*');
      assert.equal(added.code, 0, added.stderr);
      const endpoint = JSON.parse(added.stdout) as { id: string; secret: string };
      assert.match(endpoint.secret, /^whsec_/);
      const listed = await run(allowed, 'webhooks', 'list', '--store', 'default');
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(
        (JSON.parse(listed.stdout) as Array<{ id: string }>).map((each) => each.id),
        [endpoint.id],
      );
      assert.ok(!listed.stdout.includes(endpoint.secret));
      const removed = await run({}, 'webhooks', 'remove', '--id', endpoint.id);
      assert.equal(removed.code, 0, removed.stderr);
      assert.deepEqual(JSON.parse(removed.stdout), { id: endpoint.id, status: 'removed' });
    },
  );

  test(
    'a private URL without WEBHOOK_ALLOW_PRIVATE exits 1 with one line naming --url and the variable',
    slow,
    async () => {
      const refused = await run({}, 'webhooks', 'add', '--url', 'http://127.0.0.1:9/hooks', '--events', '*');
      assert.equal(refused.code, 1);
      assert.equal(refused.stderr, `storefront-auth: ${privateRefusal('http://127.0.0.1:9/hooks')}\n`);
      assert.equal(refused.stdout, '');
    },
  );

  test(
    'an unknown store exits 1 naming it; bad words exit 2 with the usage, which names the webhooks commands',
    slow,
    async () => {
      const unknown = await run({}, 'webhooks', 'list', '--store', 'nowhere');
      assert.equal(unknown.code, 1);
      assert.equal(unknown.stderr, 'storefront-auth: no store nowhere\n');
      const bad = await run({}, 'webhooks', 'add', '--url', 'https://crm.example/hooks');
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /^storefront-auth: webhooks add needs --url and --events/);
      for (const words of [
        'webhooks add [--store S] --url U --events',
        'webhooks list [--store S]',
        'webhooks remove [--store S] --id ID',
      ])
        assert.ok(bad.stderr.includes(words), `the usage names ${words}`);
    },
  );
});
