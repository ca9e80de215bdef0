/**
 * `npm run lint:deps`, second half (madge finds the file-level cycles): imports run down, never
 * back up. Every top-level module and folder of src/ sits in one layer, bottom first:
 * - leaves that import nothing of the service: the clock, keys, TLS failures, metrics (told things
 *   by delivery and the edge, never asking them), the background loops' plumbing, the version,
 *   the strings of each language;
 * - storage (database, embedded server, counters), then what reads the world into storage's terms
 *   or writes through it: config.ts with config/ (the environment, parsed with storage's address
 *   and sslmode readers) and the audit trail;
 * - delivery (a message carries what it says, it never asks the domain), then the store context,
 *   then a store's sign-in providers (their table and the OpenID relying party), then the hooks
 *   to a store's own systems (signed as Standard Webhooks), then the domain (auth), which reads
 *   the store's settings, matches a provider's identity and queues messages; then the platform's
 *   operations on stores (platform/: made, changed, hosts, providers; audited and announced alike
 *   for the admin API and the command line);
 * - the janitor (it deletes through each table's owner), the composition root (services.ts, which
 *   knows nothing of HTTP; its parts in open-database.ts and configured-parts.ts), the edge
 *   (http, web), app.ts, serve.ts, and the command line on top.
 * A part may import its own layer and those below. Two parts of one layer may not import each
 * other: a loop between layers is already an arrow back up. The typed client is not part of the
 * service but a package of its own (packages/client, published without the service): its sources
 * import only each other, no package (it has no dependencies) and nothing of the service, not even
 * a type (its wire types are a copy that scripts/client-types.ts writes); nothing in the service
 * imports it. Import specifiers are read as text, type-only imports included (a type pulled from
 * above ties a module to it just as well), dynamic `import('…')` too.
 *
 *   node --import tsx scripts/layers.ts [src folder [client src folder]]
 *   (default: this repository's src/ and packages/client/src/; the client's default sits beside the
 *   src folder given, as packages/client/src, and is skipped when there is none)
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Bottom first; each entry a top-level file or folder of src/. */
export const layers: readonly (readonly string[])[] = [
  [
    'clock.ts',
    'keys.ts',
    'tls.ts',
    'metrics.ts',
    'periodic.ts',
    'background.ts',
    'idle-collection.ts',
    'version.ts',
    'i18n',
  ],
  ['storage'],
  ['config.ts', 'config', 'audit.ts'],
  ['delivery'],
  ['store'],
  ['providers'],
  ['hooks'],
  ['auth'],
  ['platform'],
  ['janitor.ts'],
  ['open-database.ts', 'configured-parts.ts'],
  ['services.ts'],
  ['http', 'web'],
  ['app.ts'],
  ['serve.ts'],
  ['cli'],
];

/** The client package's name, which no module of the service may import. */
export const clientPackageName = '@storefront-auth/client';

interface Import {
  /** Both relative to the folder read, with `/` separators. */
  from: string;
  to: string;
}

/** An import as written: the importing file (relative to the folder read) and the specifier. */
interface Specifier {
  from: string;
  file: string;
  specifier: string;
}

// `import … from '…'`, `export … from '…'`, `import '…'` (group 3) or `import('…')` (group 4).
const importPattern =
  /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

function relativeTo(root: string, file: string): string {
  return path.relative(root, file).split(path.sep).join('/');
}

function specifiersOf(root: string): Specifier[] {
  const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((name) => name.endsWith('.ts'));
  const specifiers: Specifier[] = [];
  for (const name of files) {
    const file = path.join(root, name);
    for (const match of fs.readFileSync(file, 'utf8').matchAll(importPattern)) {
      specifiers.push({ from: relativeTo(root, file), file, specifier: match[3] ?? match[4]! });
    }
  }
  return specifiers;
}

/** Where a relative specifier leads, as a .ts file. */
function target({ file, specifier }: Specifier): string {
  return path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
}

function importsOf(root: string): Import[] {
  const imports: Import[] = [];
  for (const written of specifiersOf(root)) {
    if (!written.specifier.startsWith('.')) continue;
    const to = relativeTo(root, target(written));
    if (to.startsWith('../')) continue; // outside src/ (package.json, public/): not a layer
    imports.push({ from: written.from, to });
  }
  return imports;
}

function isInside(folder: string, file: string): boolean {
  const relative = path.relative(folder, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

/**
 * The client package's rules: its sources import only each other, and no module of the service
 * imports it, by its name or by a path. Files are named relative to the folder holding `src/`.
 */
function clientProblems(root: string, clientRoot: string): string[] {
  const base = path.dirname(root);
  const problems: string[] = [];
  const clientSources = fs.existsSync(clientRoot) ? specifiersOf(clientRoot) : [];
  for (const written of clientSources) {
    const from = relativeTo(base, written.file);
    const relative = written.specifier.startsWith('.');
    if (relative && isInside(clientRoot, target(written))) continue;
    const what = relative ? relativeTo(base, target(written)) : written.specifier;
    problems.push(
      `${from} imports ${what}: the client is a package of its own and imports only its own files (no dependencies, nothing of the service; its wire types are written by npm run client:types)`,
    );
  }
  for (const written of specifiersOf(root)) {
    const { specifier } = written;
    const byName = specifier === clientPackageName || specifier.startsWith(`${clientPackageName}/`);
    const byPath = specifier.startsWith('.') && isInside(clientRoot, target(written));
    if (byName || byPath) {
      const what = byName ? specifier : relativeTo(base, target(written));
      problems.push(`src/${written.from} imports ${what}: the client is not part of the service`);
    }
  }
  return problems;
}

/**
 * Inside the domain each file has a role, by its folder: src/auth/flows (what a route or a command
 * calls, one flow a file), src/auth/tables (each owns one table's SQL) and src/auth/rules (what
 * flows share: field rules, password hashing and checks, proof of control, the end of a sign-in),
 * beside deps.ts and result.ts. A flow never imports another flow: what two flows share is a rule.
 * Nothing else in the domain imports a flow either; only the edge and the command line call them.
 */
const authFlows = 'auth/flows/';
const authRoles: ReadonlyArray<readonly [folder: string, rule: string]> = [
  [authFlows, 'a flow never imports another flow (what flows share belongs in src/auth/rules)'],
  ['auth/tables/', 'a table owner never imports a flow'],
  ['auth/rules/', 'a rule never imports a flow'],
];

function authRoleProblems(imports: readonly Import[]): string[] {
  return imports.flatMap(({ from, to }) => {
    if (!from.startsWith('auth/') || !to.startsWith(authFlows)) return [];
    const rule = authRoles.find(([folder]) => from.startsWith(folder))?.[1] ?? 'nothing in src/auth imports a flow';
    return [`src/${from} imports src/${to}: ${rule}`];
  });
}

function partOf(file: string): string {
  return file.split('/')[0]!;
}

/** The client package's sources beside a src folder, as in this repository. */
export function clientSourcesBeside(root: string): string {
  return path.join(path.dirname(root), 'packages', 'client', 'src');
}

/**
 * Every import of the tree under `root` (a src folder) and of the client's sources under
 * `clientRoot` (none when there is no such folder) that breaks a rule, each naming both files.
 */
export function layerProblems(root: string, clientRoot = clientSourcesBeside(root)): string[] {
  const layerOf = new Map(layers.flatMap((parts, index) => parts.map((part) => [part, index] as const)));
  const problems: string[] = [];
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    const placed = layerOf.has(entry.name);
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
    const [fromLayer, toLayer] = [layerOf.get(fromPart), layerOf.get(toPart)];
    if (fromLayer === undefined || toLayer === undefined) continue; // reported above
    if (toLayer > fromLayer) problems.push(`${arrow}, but ${fromPart} sits below ${toPart}`);
    if (toLayer === fromLayer) sideways.set(`${fromPart} ${toPart}`, anImport);
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
  problems.push(...authRoleProblems(importsOf(root)));
  problems.push(...clientProblems(root, clientRoot));
  return problems;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, '..', 'src'));
  const clientRoot = path.resolve(process.argv[3] ?? clientSourcesBeside(root));
  const problems = layerProblems(root, clientRoot);
  if (problems.length > 0) {
    console.error('imports running back up:');
    for (const problem of problems) console.error(`  ${problem}`);
    process.exitCode = 1;
  } else {
    console.log('layers: no import runs back up');
  }
}
