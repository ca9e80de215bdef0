/**
 * `npm run lint:deps`, second half (madge finds the cycles): imports run down, never back up.
 * The domain and its stores (src/auth, src/storage, src/delivery, src/store) must not import the
 * edge (src/http, src/web), the command line (src/cli) or the composition (src/app.ts,
 * src/services.ts, src/main.ts): that keeps the domain free of Fastify and usable from the CLI.
 * Reads import specifiers as text, type-only imports included, since a type pulled from the edge
 * ties the domain to it just as well.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..', 'src');
const lower = ['auth', 'storage', 'delivery', 'store'];
const upper = ['http', 'web', 'cli', 'app.ts', 'services.ts', 'main.ts'];

const importPattern = /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]/g;

function topOf(file: string): string {
  return path.relative(root, file).split(path.sep)[0]!;
}

const problems: string[] = [];
for (const folder of lower) {
  const files = (fs.readdirSync(path.join(root, folder), { recursive: true }) as string[])
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.join(root, folder, name));
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    for (const match of text.matchAll(importPattern)) {
      const specifier = match[1]!;
      if (!specifier.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
      if (upper.includes(topOf(target))) {
        problems.push(`${path.relative(root, file)} imports ${path.relative(root, target)}`);
      }
    }
  }
}

if (problems.length > 0) {
  console.error(`imports running back up (src/${lower.join(', src/')} may not import the edge):`);
  for (const problem of problems) console.error(`  src/${problem}`);
  process.exitCode = 1;
} else {
  console.log('layers: no import runs back up');
}
