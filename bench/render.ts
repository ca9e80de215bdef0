/**
 * `npm run bench:plots`: writes BENCHMARKS.md, docs/benchmarks/*.svg and bench/results.json again
 * from a results file, measuring nothing. Options: --results=bench/results.json, --out=<folder>
 * (the repository unless given), --benchmarks=<the BENCHMARKS.md of that run> (for a results file
 * that lacks settings, machine facts or history: the repository's unless given), and --rounds,
 * --seconds, --minutes to set the run's settings by hand.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeReport } from './report.js';
import { completeResults, parseResults, type RunSettings } from './results.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    results: { type: 'string', default: path.join(repoRoot, 'bench/results.json') },
    out: { type: 'string', default: repoRoot },
    benchmarks: { type: 'string', default: path.join(repoRoot, 'BENCHMARKS.md') },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    minutes: { type: 'string' },
  },
});
const overrides: Partial<RunSettings> = {};
for (const name of ['rounds', 'seconds', 'minutes'] as const)
  if (values[name] !== undefined) overrides[name] = Number(values[name]);
const benchmarks = fs.existsSync(values.benchmarks) ? fs.readFileSync(values.benchmarks, 'utf8') : '';
const results = completeResults(parseResults(fs.readFileSync(values.results, 'utf8')), benchmarks, overrides);
for (const file of await writeReport(results, path.resolve(values.out))) console.log(`wrote ${file}`);
