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
  'auth/tables/sessions.ts': "import type { Queryable } from '../../storage/database.js';\n",
  'auth/rules/reauthentication.ts': "import { deleteCustomerSessions } from '../tables/sessions.js';\n",
  'auth/flows/account.ts':
    "import { wrongCurrentPassword } from '../rules/reauthentication.js';\nimport { deleteCustomerSessions } from '../tables/sessions.js';\n",
  'auth/flows/identity-change.ts': "import { wrongCurrentPassword } from '../rules/reauthentication.js';\n",
  'http/account.ts': "import { changePassword } from '../auth/flows/account.js';\n",
  'http/problems.ts': "export type ProblemCode = 'invalid';\n",
  'http/schemas.ts': "import { maxPasswordLength } from '../auth/password.js';\n",
  'http/edge.ts': "import { findCustomer } from '../auth/customers.js';\n",
  'web/page.ts': "import type { Edge } from '../http/edge.js';\n",
};

/** The client package's sources, beside src/ as packages/client/src: they import only each other. */
const cleanClient: Record<string, string> = {
  'api-types.ts': "export type ProblemCode = 'invalid';\n",
  'index.ts': "import type { ProblemCode } from './api-types.js';\nexport * from './api-types.js';\n",
};

let trees = 0;
function writeFiles(folder: string, clean: Record<string, string>, planted: Record<string, string>): void {
  const files = { ...clean };
  for (const [name, text] of Object.entries(planted)) files[name] = (files[name] ?? '') + text;
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(folder, name)), { recursive: true });
    fs.writeFileSync(path.join(folder, name), text);
  }
}

/**
 * The clean tree in a folder of its own (its src/, and packages/client/src/ beside it), `planted`
 * lines added to its src files and `plantedClient` lines to the client's (or as new files); the src folder.
 */
function plantedTree(planted: Record<string, string> = {}, plantedClient: Record<string, string> = {}): string {
  const tree = path.join(scratch, `tree-${trees++}`);
  writeFiles(path.join(tree, 'src'), cleanTree, planted);
  writeFiles(path.join(tree, 'packages', 'client', 'src'), cleanClient, plantedClient);
  return path.join(tree, 'src');
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

  test('fails when the client package imports the service, even a type of the wire schemas', () => {
    const schemas = plantedTree(
      {},
      { 'index.ts': "import type { Customer } from '../../../src/http/core/schemas.js';\n" },
    );
    assert.match(
      theOneProblem(schemas),
      /packages\/client\/src\/index\.ts imports src\/http\/core\/schemas\.ts: the client is a package of its own/,
    );
    const domain = plantedTree({}, { 'index.ts': "const later = () => import('../../../src/auth/customers.js');\n" });
    assert.match(theOneProblem(domain), /packages\/client\/src\/index\.ts imports src\/auth\/customers\.ts/);
  });

  test('fails when the client package imports any package: it has no dependencies', () => {
    const typebox = plantedTree({}, { 'api-types.ts': "import type { Static } from '@sinclair/typebox';\n" });
    assert.match(
      theOneProblem(typebox),
      /packages\/client\/src\/api-types\.ts imports @sinclair\/typebox: the client is a package of its own/,
    );
    const node = plantedTree({}, { 'index.ts': "import { Buffer } from 'node:buffer';\n" });
    assert.match(theOneProblem(node), /packages\/client\/src\/index\.ts imports node:buffer/);
  });

  test('fails when the service imports the client, by its package name or by a path', () => {
    const byName = plantedTree({
      'web/page.ts': "import { createStorefrontAuthClient } from '@storefront-auth/client';\n",
    });
    assert.match(
      theOneProblem(byName),
      /src\/web\/page\.ts imports @storefront-auth\/client: the client is not part of the service/,
    );
    const byPath = plantedTree({
      'cli/main.ts': "import type { Customer } from '../../packages/client/src/index.js';\n",
    });
    assert.match(
      theOneProblem(byPath),
      /src\/cli\/main\.ts imports packages\/client\/src\/index\.ts: the client is not part of the service/,
    );
  });

  test('a client folder back in src/ has no layer', () => {
    const root = plantedTree({ 'client/index.ts': "import type { ProblemCode } from '../http/problems.js';\n" });
    assert.match(theOneProblem(root), /src\/client is in no layer/);
  });

  test('fails when a flow imports another flow (identity-change → account)', () => {
    const root = plantedTree({ 'auth/flows/identity-change.ts': "import { changePassword } from './account.js';\n" });
    assert.match(
      theOneProblem(root),
      /src\/auth\/flows\/identity-change\.ts imports src\/auth\/flows\/account\.ts: a flow never imports another flow/,
    );
  });

  test('fails when a table owner imports a flow (tables → flows)', () => {
    const root = plantedTree({ 'auth/tables/sessions.ts': "import type { SignedIn } from '../flows/account.js';\n" });
    assert.match(
      theOneProblem(root),
      /src\/auth\/tables\/sessions\.ts imports src\/auth\/flows\/account\.ts: a table owner never imports a flow/,
    );
  });

  test('fails when a rule imports a flow (rules → flows)', () => {
    const root = plantedTree({
      'auth/rules/reauthentication.ts': "const later = () => import('../flows/account.js');\n",
    });
    assert.match(
      theOneProblem(root),
      /src\/auth\/rules\/reauthentication\.ts imports src\/auth\/flows\/account\.ts: a rule never imports a flow/,
    );
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
