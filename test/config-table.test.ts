import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { endMarker, guideFile, renderConfigTable, startMarker, withConfigTable } from '../scripts/config-table.js';
import { configurationVariables } from '../src/config.js';

describe('the configuration table in docs/guides/production.md', () => {
  const guide = fs.readFileSync(guideFile, 'utf8');

  test('is what scripts/config-table.ts writes from the declaration now (else: npm run docs:config)', () => {
    assert.equal(guide, withConfigTable(guide));
  });

  test('has a row for every variable the service reads, in the declared order', () => {
    const table = guide.slice(guide.indexOf(startMarker), guide.indexOf(endMarker));
    const names = [...table.matchAll(/^\| `([A-Z0-9_]+)` /gm)].map(([, name]) => name);
    assert.deepEqual(names, [...configurationVariables]);
    assert.equal(table.trim(), `${startMarker}\n\n${renderConfigTable()}`);
  });
});
