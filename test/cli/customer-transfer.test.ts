import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseCommand, UsageError } from '../../src/cli/arguments.js';
import { cliEnv, runCommand, tempFolders, type Finished } from '../helpers/cli.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { testSecret } from '../helpers/harness.js';

/**
 * `customers import` and `customers export` as the binary runs them, against DATABASE_URL: a
 * summary on standard output, progress on standard error, exit 1 naming the file of refusals.
 */

const vectors = JSON.parse(fs.readFileSync(new URL('../fixtures/legacy-hashes.json', import.meta.url), 'utf8')) as {
  password: string;
  hash: string;
}[];

describe('customers import and export from the command line', { timeout: 120_000 }, () => {
  const folders = tempFolders('sfa-cli-customers-');
  const slow = { timeout: 60_000 };
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  let folder: string;
  const run = (...argv: string[]): Promise<Finished> => runCommand(argv, env);

  before(async () => {
    database = await openTestDatabase();
    folder = folders.fresh();
    env = cliEnv(path.join(folder, 'unused'), { DATABASE_URL: database.url, APP_SECRET: testSecret });
  });
  after(async () => {
    await database.drop();
    folders.removeAll();
  });

  function file(name: string, lines: unknown[]): string {
    const at = path.join(folder, name);
    fs.writeFileSync(at, lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n'));
    return at;
  }

  test('imports a file, prints its counts, and running it again changes nothing', slow, async () => {
    const input = file('shop.ndjson', [
      { email: 'ada@example.com', name: 'Ada', verified: true, password_hash: vectors[0]!.hash },
      { email: 'grace@example.com', name: 'Grace' },
    ]);
    const dry = await run('customers', 'import', '--dry-run', input);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(JSON.parse(dry.stdout).created, 2);
    assert.equal((await database.db.query('SELECT 1 FROM customers')).length, 0);

    const first = await run('customers', 'import', input);
    assert.equal(first.code, 0, first.stderr);
    const summary = JSON.parse(first.stdout);
    assert.deepEqual(
      { lines: summary.lines, created: summary.created, refused: summary.refused, dry_run: summary.dry_run },
      { lines: 2, created: 2, refused: 0, dry_run: false },
    );
    // Not a terminal: a summary line on standard error, no bar.
    assert.match(
      first.stderr,
      /storefront-auth: import: 2 lines in \d+s: 2 created, 0 updated, 0 unchanged, 0 refused\n/,
    );
    assert.doesNotMatch(first.stderr, /\x1b\[/);
    assert.equal(fs.existsSync(`${input}.refused`), false);

    const again = await run('customers', 'import', input);
    assert.equal(JSON.parse(again.stdout).unchanged, 2);
  });

  test('a refused line: exit 1, naming the file where every refusal is written by line and field', slow, async () => {
    const input = file('broken.ndjson', [
      { email: 'ok@example.com' },
      'not json',
      { email: 'x@example.com', password_hash: 'plain' },
    ]);
    const result = await run('customers', 'import', input);
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`2 lines refused: see ${input.replaceAll('.', '\\.')}\\.refused\n`));
    assert.equal(
      fs.readFileSync(`${input}.refused`, 'utf8'),
      'line 2: line: not a JSON object\nline 3: password_hash: unknown format\n',
    );
    assert.equal(JSON.parse(result.stdout).refusals_file, `${input}.refused`);
  });

  test('a file that is not there: exit 1 naming it', slow, async () => {
    const missing = path.join(folder, 'missing.ndjson');
    const result = await run('customers', 'import', missing);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `storefront-auth: ${missing}: no such file\n`);
  });

  test('exports every customer to a file in the import’s format', slow, async () => {
    const output = path.join(folder, 'export.ndjson');
    const result = await run('customers', 'export', output);
    assert.equal(result.code, 0, result.stderr);
    const lines = fs
      .readFileSync(output, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => line.email).sort(), [
      'ada@example.com',
      'grace@example.com',
      'ok@example.com',
    ]);
    assert.equal(lines.find((line) => line.email === 'ada@example.com').password_hash, vectors[0]!.hash);
  });

  test('the words: a file is needed to import, and flags of other commands are refused', () => {
    assert.throws(() => parseCommand(['customers', 'import']), UsageError);
    assert.throws(() => parseCommand(['customers', 'import', '--yes', 'f']), /takes no --yes/);
    assert.deepEqual(parseCommand(['customers', 'import', '--store', 'books', '--dry-run', 'f.ndjson']), {
      name: 'customers.import',
      store: 'books',
      file: 'f.ndjson',
      dryRun: true,
    });
    assert.deepEqual(parseCommand(['customers', 'export']), { name: 'customers.export' });
  });
});
