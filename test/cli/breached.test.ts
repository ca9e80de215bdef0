import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseCommand, UsageError } from '../../src/cli/arguments.js';
import { createBreachedPasswords, type BreachOutcome } from '../../src/auth/rules/breached.js';
import { cliEnv, runCommand, tempFolders, type Finished } from '../helpers/cli.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { testSecret } from '../helpers/harness.js';

/**
 * `breached load <file>` as the binary runs it, against DATABASE_URL: the Pwned Passwords SHA-1
 * download's lines (`HEX40:COUNT`, CRLF) go into the local copy in batches, a run again adds
 * nothing, and a password whose hash was loaded is then found by the check.
 */

function sha1(password: string): string {
  return createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
}

/** More hashes than one batch holds, so the load writes several. */
const corpusSize = 25_000;
const leaked = 'summer garden 2019';

describe('breached load from the command line', { timeout: 120_000 }, () => {
  const folders = tempFolders('sfa-cli-breached-');
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  let folder: string;
  const run = (...argv: string[]): Promise<Finished> => runCommand(argv, env);
  const rows = async () => {
    const [row] = await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM breached_hashes');
    return row?.n ?? -1;
  };

  before(async () => {
    database = await openTestDatabase();
    folder = folders.fresh();
    env = cliEnv(path.join(folder, 'unused'), { DATABASE_URL: database.url, APP_SECRET: testSecret });
  });
  after(async () => {
    await database.drop();
    folders.removeAll();
  });

  function file(name: string, lines: string[]): string {
    const at = path.join(folder, name);
    fs.writeFileSync(at, `${lines.join('\r\n')}\r\n`);
    return at;
  }

  test('loads every hash of the file in batches, skips count-0 lines, and a second run adds nothing', async () => {
    const lines = Array.from({ length: corpusSize }, (_, i) => `${sha1(`leaked ${i}`)}:${i + 1}`);
    lines.splice(12_345, 0, `${sha1(leaked).toLowerCase()}:37861`, `${sha1('only padding 1')}:0`, '');
    const corpus = file('pwned-passwords-sha1.txt', lines);

    const first = await run('breached', 'load', corpus);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout), { file: corpus, hashes: corpusSize + 1, added: corpusSize + 1 });
    assert.match(first.stderr, /breached load: 25001 hashes read, 25001 new/);
    assert.equal(await rows(), corpusSize + 1);

    const again = await run('breached', 'load', corpus);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), { file: corpus, hashes: corpusSize + 1, added: 0 });
    assert.equal(await rows(), corpusSize + 1);

    const outcomes: BreachOutcome[] = [];
    const check = createBreachedPasswords({ db: database.db, checked: (outcome) => outcomes.push(outcome) });
    assert.equal(await check.isBreached(leaked), true);
    assert.equal(await check.isBreached('leaked 24999'), true);
    assert.equal(await check.isBreached('only padding 1'), false);
    assert.equal(await check.isBreached('a password nobody leaked 1'), false);
    assert.deepEqual(outcomes, ['breached', 'breached', 'clean', 'clean']);
  });

  test('stops at a line that is no SHA-1, naming it; the batches before it stay and a fixed file resumes', async () => {
    await database.db.query('TRUNCATE breached_hashes');
    const good = Array.from({ length: 10_000 }, (_, i) => `${sha1(`resumed ${i}`)}:1`);
    const broken = file('broken.txt', [...good, '8846F7EAEE8FB117AD06BDD830B7586C:5', `${sha1('after')}:2`]);
    const failed = await run('breached', 'load', broken);
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /broken\.txt: line 10001 is not HEX40:COUNT/);
    assert.equal(await rows(), 10_000);

    const fixed = file('fixed.txt', [...good, `${sha1('after')}:2`]);
    const resumed = await run('breached', 'load', fixed);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.deepEqual(JSON.parse(resumed.stdout), { file: fixed, hashes: 10_001, added: 1 });
  });

  test('names a file that is not there', async () => {
    const missing = await run('breached', 'load', path.join(folder, 'nowhere.txt'));
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /nowhere\.txt: no such file/);
  });

  test('parses `breached load <file>` and refuses anything else', () => {
    assert.deepEqual(parseCommand(['breached', 'load', 'pwned.txt']), { name: 'breached.load', file: 'pwned.txt' });
    assert.throws(() => parseCommand(['breached', 'load']), UsageError);
    assert.throws(() => parseCommand(['breached', 'drop', 'pwned.txt']), UsageError);
    assert.throws(() => parseCommand(['breached', 'load', 'a.txt', 'b.txt']), UsageError);
    assert.throws(() => parseCommand(['breached', 'load', 'a.txt', '--store', 'shop']), UsageError);
  });
});
