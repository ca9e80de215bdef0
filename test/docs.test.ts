import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bodyLimitBytes } from '../src/app.js';
import { maxPasswordLength, minPasswordLength } from '../src/auth/rules/password.js';
import { codeLifetimeSeconds, maxCodeAttempts } from '../src/auth/tables/codes.js';
import { sessionAbsoluteLifetimeSeconds, sessionIdleTimeoutSeconds } from '../src/auth/tables/sessions.js';
import { problemCatalogue } from '../src/http/problems.js';
import { limits } from '../src/http/rate-limit.js';

/**
 * The integration reference describes what the code does; these checks catch the cheap kinds of
 * drift (a new error code, a changed limit or lifetime) and any pointer to rules kept outside the
 * repository, which a clone would not have.
 */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const referencePath = path.join(repoRoot, 'docs/reference.md');
const reference = fs.readFileSync(referencePath, 'utf8');
const skippedFolders = new Set(['node_modules', '.git', 'dist', 'data', '.test-artifacts']);

function filesUnder(folder: string, extensions: string[]): string[] {
  return fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return skippedFolders.has(entry.name) ? [] : filesUnder(full, extensions);
    return extensions.some((extension) => entry.name.endsWith(extension)) ? [full] : [];
  });
}

/** The text of a `## ` section of the reference. */
function section(title: string): string {
  const start = reference.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `docs/reference.md has no section ${title}`);
  const end = reference.indexOf('\n## ', start + 1);
  return reference.slice(start, end < 0 ? undefined : end);
}

/** The cells of the first table row (in `text`) whose first cell is `firstCell`, trimmed. */
function row(firstCell: string, text: string): string[] {
  const cells = text
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
    .find((candidate) => candidate[0] === firstCell);
  assert.ok(cells !== undefined, `docs/reference.md has no table row for ${firstCell}`);
  return cells;
}

function windowText(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? 'hour' : `${seconds / 3600} hours`;
  return seconds === 60 ? 'minute' : `${seconds / 60} minutes`;
}

describe('the integration reference', () => {
  test('lists every problem code with its status', () => {
    for (const [code, { status }] of Object.entries(problemCatalogue)) {
      assert.equal(row(`\`${code}\``, section('Errors'))[1], String(status), code);
    }
  });

  test('lists every rate-limit rule by its counter name with its limit and window', () => {
    for (const rule of Object.values(limits)) {
      const expected = `${rule.limit} / ${windowText(rule.windowSeconds)}`;
      assert.ok(row(`\`${rule.name}\``, section('Rate limits')).includes(expected), `${rule.name}: ${expected}`);
    }
  });

  test('states the lifetimes and bounds the code uses', () => {
    const value = (firstCell: string, title: string) => row(firstCell, section(title))[1]!;
    assert.match(value('Lifetime', 'Codes'), new RegExp(`^${codeLifetimeSeconds / 60} minutes`));
    assert.match(value('Tries', 'Codes'), new RegExp(`^${maxCodeAttempts} per code`));
    assert.match(value('Idle timeout', 'Sessions'), new RegExp(`^${sessionIdleTimeoutSeconds / 86_400} days`));
    assert.match(
      value('Absolute lifetime', 'Sessions'),
      new RegExp(`^${sessionAbsoluteLifetimeSeconds / 86_400} days`),
    );
    assert.match(value('Length', 'Passwords'), new RegExp(`^${minPasswordLength}–${maxPasswordLength} characters`));
    assert.match(row('`payload_too_large`', section('Errors'))[2]!, new RegExp(`over ${bodyLimitBytes / 1024} KiB`));
    assert.match(value('`413 payload_too_large`', 'Wire format'), new RegExp(`over ${bodyLimitBytes / 1024} KiB`));
  });

  test('links only to files that exist in the repository', () => {
    for (const [, target] of reference.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      assert.ok(fs.existsSync(path.resolve(path.dirname(referencePath), target!)), `broken link ${target}`);
    }
  });

  test('no documentation or source points to rules kept outside the repository', () => {
    const self = fileURLToPath(import.meta.url);
    const files = filesUnder(repoRoot, ['.md', '.ts']).filter((file) => file !== self);
    const outside = /CONTRACT|\.\.\/shared\b/;
    const offenders = files.filter((file) => outside.test(fs.readFileSync(file, 'utf8')));
    assert.deepEqual(
      offenders.map((file) => path.relative(repoRoot, file)),
      [],
    );
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

describe('the benchmark figures the documents quote', () => {
  // The benchmark writes only BENCHMARKS.md: these documents quote its figures by hand and must
  // say where they come from.
  test('link to BENCHMARKS.md and to sections it has', () => {
    const benchmarks = fs.readFileSync(path.join(repoRoot, 'BENCHMARKS.md'), 'utf8');
    const anchors = new Set([...benchmarks.matchAll(/^#+ (.+)$/gm)].map(([, heading]) => anchorOf(heading!)));
    for (const file of ['README.md', 'docs/running-at-scale.md', 'docs/guides/production.md']) {
      const text = fs.readFileSync(path.join(repoRoot, file), 'utf8');
      const links = [...text.matchAll(/\]\(([^)#]*BENCHMARKS\.md)(?:#([^)]*))?\)/g)];
      assert.ok(links.length > 0, `${file} does not link to BENCHMARKS.md`);
      for (const [, target, anchor] of links) {
        assert.equal(path.resolve(repoRoot, path.dirname(file), target!), path.join(repoRoot, 'BENCHMARKS.md'), file);
        if (anchor !== undefined) assert.ok(anchors.has(anchor), `${file}: BENCHMARKS.md has no #${anchor}`);
      }
    }
  });
});

/** The anchors of a Markdown file's headings, outside code blocks; GitHub keeps `_` in them. */
function headingAnchors(file: string): Set<string> {
  const text = fs.readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set(
    [...text.matchAll(/^#+ (.+)$/gm)].map(([, heading]) =>
      heading!
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );
}

describe('the README and the guides', () => {
  // README.md points readers to a guide for each task; a guide that moves must take its links along.
  const guides = fs.readdirSync(path.join(repoRoot, 'docs/guides')).map((name) => `docs/guides/${name}`);
  test('link only to files and headings that exist', () => {
    for (const file of ['README.md', ...guides]) {
      const text = fs.readFileSync(path.join(repoRoot, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target, anchor] of text.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]*))?\)/g)) {
        if (/^[a-z]+:/.test(target!) || target!.startsWith('<')) continue;
        const resolved =
          target === '' ? path.join(repoRoot, file) : path.resolve(repoRoot, path.dirname(file), target!);
        assert.ok(fs.existsSync(resolved), `${file}: broken link ${target}`);
        if (anchor !== undefined && resolved.endsWith('.md')) {
          assert.ok(headingAnchors(resolved).has(anchor), `${file}: ${target || file} has no #${anchor}`);
        }
      }
    }
  });
});
