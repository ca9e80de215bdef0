import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { openPglite } from '../../src/storage/pglite.js';

describe('openPglite', () => {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-pglite-'));
  after(() => fs.rmSync(parent, { recursive: true, force: true }));

  test('creates a new folder in a child process, reopens it without creating, and keeps its rows', async () => {
    const dataDir = path.join(parent, 'pgdata');
    let created = 0;
    const first = await openPglite(dataDir, { creating: () => (created += 1) });
    try {
      assert.equal(created, 1);
      assert.ok(fs.existsSync(path.join(dataDir, 'PG_VERSION')));
      await first.exec('CREATE TABLE kept (word text)');
      await first.query('INSERT INTO kept VALUES ($1)', ['still here']);
    } finally {
      await first.close();
    }
    const again = await openPglite(dataDir, { creating: () => (created += 1) });
    try {
      assert.equal(created, 1, 'an existing folder is opened, not created');
      assert.deepEqual(await again.query('SELECT word FROM kept'), [{ word: 'still here' }]);
      assert.deepEqual(await again.query('SHOW shared_buffers'), [{ shared_buffers: '16MB' }]);
    } finally {
      await again.close();
    }
  });

  test('a folder that cannot be created is an error naming the cause, not a hang', async () => {
    const blocked = path.join(parent, 'a-file');
    fs.writeFileSync(blocked, 'not a folder');
    await assert.rejects(openPglite(path.join(blocked, 'pgdata')), /ENOTDIR|not a directory|EEXIST|ENOENT/i);
  });
});
