import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './service-process.js';

/** Fails the test unless the Redocly linter finds no error in the OpenAPI document. */
export async function assertRedoclyClean(document: unknown): Promise<void> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-'));
  const file = path.join(folder, 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(document));
  const redocly = path.join(repoRoot, 'node_modules/.bin/redocly');
  try {
    const { stdout, stderr } = await promisify(execFile)(redocly, ['lint', file, '--format', 'stylish'], {
      cwd: repoRoot,
    }).catch((error: { stdout: string; stderr: string }) => {
      assert.fail(`redocly lint failed:\n${error.stdout}\n${error.stderr}`);
    });
    assert.match(`${stdout}${stderr}`, /0 errors|valid/i);
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
}
