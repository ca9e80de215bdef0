import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { sizingFigures } from '../../bench/report.js';
import { parseResults, type Results } from '../../bench/results.js';
import { repoRoot } from '../helpers/service-process.js';

/**
 * The sizing the guides quote by hand is the sizing of the last complete benchmark run
 * (bench/results.json): a run that moves it fails here until the guides say the new figures.
 */

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8').replace(/\s+/g, ' ');
const results = parseResults(fs.readFileSync(path.join(repoRoot, 'bench/results.json'), 'utf8')) as Results;
const sizings = results.modes.flatMap((mode) => (mode.sizing === undefined ? [] : [mode.sizing]));
const production = results.modes.find((mode) => mode.mode === 'production')?.sizing;
const figures = sizingFigures(sizings, production);

test('the results hold the sizing of the embedded default and of production', () => {
  assert.ok(sizings.length >= 2 && production !== undefined, 'bench/results.json has no sizing for both modes');
});

test("the production guide quotes the last run's sizing", () => {
  const guide = read('docs/guides/production.md');
  for (const phrase of [
    `about ${figures.loginsPerCore} logins a second per core`,
    `(${figures.loginsPerSecond} measured on the whole machine)`,
    `${figures.checksPerCore} session checks a second per core`,
    `a login asks PostgreSQL for ${figures.production!.loginTransactions} transactions and Redis for ${figures.production!.loginCommands} commands`,
    `a session check asks PostgreSQL for ${figures.production!.checkTransactions}`,
  ])
    assert.ok(guide.includes(phrase), `docs/guides/production.md says "${phrase}"`);
});

test("running at scale quotes the last run's sizing", () => {
  const page = read('docs/running-at-scale.md');
  for (const phrase of [
    `about ${figures.loginsPerCore} a second per core`,
    `(${figures.loginsPerSecond} a second measured on 2 shared cores)`,
    `about ${figures.checksPerCore} a second per core`,
  ])
    assert.ok(page.includes(phrase), `docs/running-at-scale.md says "${phrase}"`);
});
