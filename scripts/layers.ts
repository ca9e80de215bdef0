/**
 * `npm run lint:deps`, second half (madge finds the cycles): imports run down, never back up.
 * Each entry names a part of src/ and the parts it may not import:
 * - the domain (src/auth, src/store) never imports the edge (src/http, src/web), the command line
 *   (src/cli) or the composition (src/app.ts, src/services.ts, src/serve.ts), so it stays free of
 *   Fastify and usable from the command line;
 * - delivery and storage sit below the domain: a message carries what it says (a code's expiry),
 *   it never asks the domain;
 * - the composition root (src/services.ts) builds what the domain needs and knows nothing of HTTP.
 * Import specifiers are read as text, type-only imports included, since a type pulled from above
 * ties a module to it just as well.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..', 'src');
const edge = ['http', 'web', 'cli', 'app.ts', 'services.ts', 'serve.ts'];
const rules: { part: string; mayNotImport: string[] }[] = [
  { part: 'auth', mayNotImport: edge },
  { part: 'store', mayNotImport: edge },
  { part: 'delivery', mayNotImport: ['auth', 'store', ...edge] },
  { part: 'storage', mayNotImport: ['auth', 'store', 'delivery', ...edge] },
  { part: 'services.ts', mayNotImport: ['http', 'web', 'cli', 'app.ts', 'serve.ts'] },
];

const importPattern = /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]/g;

function topOf(file: string): string {
  return path.relative(root, file).split(path.sep)[0]!;
}

function filesOf(part: string): string[] {
  const full = path.join(root, part);
  if (part.endsWith('.ts')) return [full];
  return (fs.readdirSync(full, { recursive: true }) as string[])
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.join(full, name));
}

const problems: string[] = [];
for (const { part, mayNotImport } of rules) {
  for (const file of filesOf(part)) {
    const text = fs.readFileSync(file, 'utf8');
    for (const match of text.matchAll(importPattern)) {
      const specifier = match[1]!;
      if (!specifier.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
      if (mayNotImport.includes(topOf(target))) {
        problems.push(`src/${path.relative(root, file)} imports src/${path.relative(root, target)}`);
      }
    }
  }
}

if (problems.length > 0) {
  console.error('imports running back up:');
  for (const problem of problems) console.error(`  ${problem}`);
  process.exitCode = 1;
} else {
  console.log('layers: no import runs back up');
}
