import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import { layerProblems } from '../../scripts/layers.js';

const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const script = path.join(repoRoot, 'scripts', 'layers.ts');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'layers-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** A small src/ whose arrows all run down, shaped like the real one. */
const cleanTree: Record<string, string> = {
  'clock.ts': 'export const now = () => new Date();\n',
  'metrics.ts': 'export class Metrics {}\n',
  'storage/database.ts': 'export interface Queryable {}\n',
  'storage/postgres.ts':
    "import type { Queryable } from './database.js';\nexport const defaultDatabasePoolSize = 10;\n",
  'config.ts': "import { defaultDatabasePoolSize } from './storage/postgres.js';\n",
  'delivery/outbox.ts':
    "import type { Metrics } from '../metrics.js';\nimport type { Queryable } from '../storage/database.js';\n",
  'store/store.ts': "import type { IdentityMode } from '../config.js';\nimport { now } from '../clock.js';\n",
  'auth/customers.ts':
    "import { loadStore } from '../store/store.js';\nimport { queue } from '../delivery/outbox.js';\n",
  'auth/password.ts': 'export const maxPasswordLength = 1000;\n',
  'http/problems.ts': "export type ProblemCode = 'invalid';\n",
  'http/schemas.ts': "import { maxPasswordLength } from '../auth/password.js';\n",
  'http/edge.ts': "import { findCustomer } from '../auth/customers.js';\n",
  'web/page.ts': "import type { Edge } from '../http/edge.js';\n",
  'client/index.ts':
    "import type { ProblemCode } from '../http/problems.js';\nimport type * as schemas from '../http/schemas.js';\n",
};

let trees = 0;
/** The clean tree in a folder of its own, `planted` lines added to its files (or as new files). */
function plantedTree(planted: Record<string, string> = {}): string {
  const root = path.join(scratch, `src-${trees++}`);
  const files = { ...cleanTree };
  for (const [name, text] of Object.entries(planted)) files[name] = (files[name] ?? '') + text;
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

function theOneProblem(root: string): string {
  const problems = layerProblems(root);
  assert.equal(problems.length, 1, problems.join('\n'));
  return problems[0]!;
}

describe('scripts/layers.ts', () => {
  test('passes on the real src/, exiting 0', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { cwd: repoRoot });
    assert.match(stdout, /no import runs back up/);
  });

  test('passes on the planted tree before anything is planted in it', () => {
    assert.deepEqual(layerProblems(plantedTree()), []);
  });

  test('fails when the store imports the domain (store → auth)', () => {
    const root = plantedTree({ 'store/store.ts': "import { countCustomers } from '../auth/customers.js';\n" });
    assert.match(
      theOneProblem(root),
      /src\/store\/store\.ts imports src\/auth\/customers\.ts, but store sits below auth/,
    );
  });

  test('fails when metrics import delivery (metrics → delivery)', () => {
    const root = plantedTree({ 'metrics.ts': "import { countByStatus } from './delivery/outbox.js';\n" });
    assert.match(theOneProblem(root), /src\/metrics\.ts imports src\/delivery\/outbox\.ts, but metrics\.ts sits below/);
  });

  test('fails when storage imports config.ts (storage → config)', () => {
    const root = plantedTree({ 'storage/postgres.ts': "import { poolSize } from '../config.js';\n" });
    assert.match(theOneProblem(root), /src\/storage\/postgres\.ts imports src\/config\.ts, but storage sits below/);
  });

  test('fails when a type alone is imported from above', () => {
    const root = plantedTree({ 'delivery/outbox.ts': "import type { CustomerRow } from '../auth/customers.js';\n" });
    assert.match(theOneProblem(root), /src\/delivery\/outbox\.ts imports src\/auth\/customers\.ts/);
  });

  test('fails when two folders of one layer import each other (http ↔ web)', () => {
    const root = plantedTree({ 'http/edge.ts': "export { page } from '../web/page.js';\n" });
    assert.match(
      theOneProblem(root),
      /src\/http\/edge\.ts imports src\/web\/page\.ts, and src\/web\/page\.ts imports src\/http\/edge\.ts: http and web import each other/,
    );
  });

  test('fails when the client imports the service, but for types of the wire schemas', () => {
    const value = plantedTree({ 'client/index.ts': "import { Customer } from '../http/schemas.js';\n" });
    assert.match(
      theOneProblem(value),
      /src\/client\/index\.ts imports src\/http\/schemas\.ts: the client takes only types/,
    );
    const domain = plantedTree({ 'client/index.ts': "import type { CustomerRow } from '../auth/customers.js';\n" });
    assert.match(theOneProblem(domain), /src\/client\/index\.ts imports src\/auth\/customers\.ts/);
    const served = plantedTree({ 'web/page.ts': "import { createClient } from '../client/index.js';\n" });
    assert.match(theOneProblem(served), /src\/web\/page\.ts imports src\/client\/index\.ts: the client is not part/);
  });

  test('fails on a top-level module that has no layer', () => {
    const root = plantedTree({ 'search.ts': "import { now } from './clock.js';\n" });
    assert.match(theOneProblem(root), /src\/search\.ts is in no layer/);
  });

  test('catches a dynamic import running back up', () => {
    const root = plantedTree({ 'storage/postgres.ts': "const later = () => import('../config.js');\n" });
    assert.match(theOneProblem(root), /src\/storage\/postgres\.ts imports src\/config\.ts/);
  });

  test('run on a planted tree, exits 1 naming both files', async () => {
    const root = plantedTree({ 'store/store.ts': "import { countCustomers } from '../auth/customers.js';\n" });
    const run = promisify(execFile)(process.execPath, ['--import', 'tsx', script, root], { cwd: repoRoot });
    const failure = await run.then(
      () => assert.fail('passed'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failure.code, 1);
    assert.match(failure.stderr, /src\/store\/store\.ts imports src\/auth\/customers\.ts/);
  });
});
