import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { loadOrCreateSecret } from '../../src/storage/data-folder.js';
import { repoRoot } from '../helpers/service-process.js';
import { tempFolders } from '../helpers/cli.js';

const folders = tempFolders('sfa-secret-');
after(() => folders.removeAll());

describe('the generated deployment secret', () => {
  test('is made once, private to its owner, and read back unchanged', () => {
    const dataDir = path.join(folders.fresh(), 'data');
    const secret = loadOrCreateSecret(dataDir);
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(fs.statSync(path.join(dataDir, 'secret')).mode & 0o777, 0o600);
    assert.equal(loadOrCreateSecret(dataDir), secret);
    assert.deepEqual(fs.readdirSync(dataDir), ['secret'], 'no draft is left behind');
  });

  test('an empty or cut secret file stops the start instead of keying everything with it', () => {
    const dataDir = folders.fresh();
    fs.writeFileSync(path.join(dataDir, 'secret'), '', { mode: 0o600 });
    assert.throws(() => loadOrCreateSecret(dataDir), /holds no complete secret/);
    fs.writeFileSync(path.join(dataDir, 'secret'), 'abc', { mode: 0o600 });
    assert.throws(() => loadOrCreateSecret(dataDir), /holds no complete secret/);
  });

  test('processes making it at the same moment all get the one secret', async () => {
    const dataDir = path.join(folders.fresh(), 'data');
    const script = `import { loadOrCreateSecret } from ${JSON.stringify(path.join(repoRoot, 'src/storage/data-folder.ts'))};
      process.stdout.write(loadOrCreateSecret(process.argv[1]));`;
    const run = () =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script, dataDir], {
        cwd: repoRoot,
      });
    const results = await Promise.all(Array.from({ length: 6 }, run));
    const secrets = new Set(results.map((result) => result.stdout));
    assert.equal(secrets.size, 1, [...secrets].join(' / '));
    assert.equal([...secrets][0], fs.readFileSync(path.join(dataDir, 'secret'), 'utf8'));
  });
});
