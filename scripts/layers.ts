/**
 * `npm run lint:deps`, second half (madge finds the file-level cycles): imports run down, never
 * back up. Every top-level module and folder of src/ sits in one layer, bottom first:
 * - leaves that import nothing of the service: the clock, keys, TLS failures, metrics (told things
 *   by delivery and the edge, never asking them), the background loops' plumbing, the version;
 * - storage (database, embedded server, counters), then what reads the world into storage's terms
 *   or writes through it: config.ts (the environment, parsed with storage's address and sslmode
 *   readers) and the audit trail;
 * - delivery (a message carries what it says, it never asks the domain), then the store context,
 *   then the domain (auth), which reads the store's settings and queues messages;
 * - the janitor (it deletes through each table's owner), the composition root (services.ts, which
 *   knows nothing of HTTP), the edge (http, web), app.ts, serve.ts, and the command line on top.
 * A part may import its own layer and those below. Two parts of one layer may not import each
 * other: a loop between layers is already an arrow back up. The typed client (src/client) is not
 * part of the service: it takes only types, and only from the wire contract (the route schemas and
 * problem codes in src/http), which vanish at build time; nothing in the service imports it.
 * Import specifiers are read as text, type-only imports included (a type pulled from above ties a
 * module to it just as well), dynamic `import('…')` too.
 *
 *   node --import tsx scripts/layers.ts [src folder]   (default: this repository's src/)
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Bottom first; each entry a top-level file or folder of src/. */
export const layers: readonly (readonly string[])[] = [
  ['clock.ts', 'keys.ts', 'tls.ts', 'metrics.ts', 'periodic.ts', 'background.ts', 'idle-collection.ts', 'version.ts'],
  ['storage'],
  ['config.ts', 'audit.ts'],
  ['delivery'],
  ['store'],
  ['auth'],
  ['janitor.ts'],
  ['services.ts'],
  ['http', 'web'],
  ['app.ts'],
  ['serve.ts'],
  ['cli'],
];

const client = 'client';

/** What the client may take types from: the route schemas and the problem codes, nothing else. */
function isWireContract(file: string): boolean {
  return file.startsWith('http/') && (file.endsWith('schemas.ts') || file === 'http/problems.ts');
}

interface Import {
  /** Both relative to the src folder, with `/` separators. */
  from: string;
  to: string;
  typeOnly: boolean;
}

// `import … from '…'`, `export … from '…'`, `import '…'` (group 3) or `import('…')` (group 4).
const importPattern =
  /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

function relativeTo(root: string, file: string): string {
  return path.relative(root, file).split(path.sep).join('/');
}

function importsOf(root: string): Import[] {
  const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((name) => name.endsWith('.ts'));
  const imports: Import[] = [];
  for (const name of files) {
    const file = path.join(root, name);
    for (const match of fs.readFileSync(file, 'utf8').matchAll(importPattern)) {
      const specifier = match[3] ?? match[4]!;
      if (!specifier.startsWith('.')) continue;
      const to = relativeTo(root, path.resolve(path.dirname(file), specifier)).replace(/\.js$/, '.ts');
      if (to.startsWith('../')) continue; // outside src/ (package.json, public/): not a layer
      imports.push({ from: relativeTo(root, file), to, typeOnly: match[2] !== undefined });
    }
  }
  return imports;
}

function partOf(file: string): string {
  return file.split('/')[0]!;
}

/** Every import of the tree under `root` that breaks a rule, each naming both files. */
export function layerProblems(root: string): string[] {
  const layerOf = new Map(layers.flatMap((parts, index) => parts.map((part) => [part, index] as const)));
  const problems: string[] = [];
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    const placed = entry.name === client || layerOf.has(entry.name);
    if ((entry.isDirectory() || entry.name.endsWith('.ts')) && !placed) {
      problems.push(`src/${entry.name} is in no layer: give it one in scripts/layers.ts`);
    }
  }
  // Imports between two parts of one layer, by direction, to find the pairs that import each other.
  const sideways = new Map<string, Import>();
  for (const anImport of importsOf(root)) {
    const { from, to } = anImport;
    const [fromPart, toPart] = [partOf(from), partOf(to)];
    if (fromPart === toPart) continue;
    const arrow = `src/${from} imports src/${to}`;
    if (fromPart === client) {
      if (!anImport.typeOnly || !isWireContract(to)) {
        problems.push(`${arrow}: the client takes only types, only from src/http's schemas and problems.ts`);
      }
    } else if (toPart === client) {
      problems.push(`${arrow}: the client is not part of the service`);
    } else {
      const [fromLayer, toLayer] = [layerOf.get(fromPart), layerOf.get(toPart)];
      if (fromLayer === undefined || toLayer === undefined) continue; // reported above
      if (toLayer > fromLayer) problems.push(`${arrow}, but ${fromPart} sits below ${toPart}`);
      if (toLayer === fromLayer) sideways.set(`${fromPart} ${toPart}`, anImport);
    }
  }
  for (const [key, there] of sideways) {
    const [a, b] = key.split(' ') as [string, string];
    const back = sideways.get(`${b} ${a}`);
    if (a < b && back !== undefined) {
      problems.push(
        `src/${there.from} imports src/${there.to}, and src/${back.from} imports src/${back.to}: ${a} and ${b} import each other`,
      );
    }
  }
  return problems;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '..', 'src'));
  const problems = layerProblems(root);
  if (problems.length > 0) {
    console.error('imports running back up:');
    for (const problem of problems) console.error(`  ${problem}`);
    process.exitCode = 1;
  } else {
    console.log('layers: no import runs back up');
  }
}
