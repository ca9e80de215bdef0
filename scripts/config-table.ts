/**
 * `npm run docs:config`: writes the configuration table of docs/guides/production.md, between
 * its config-table markers, from the declaration of every variable (src/config/declaration.ts),
 * so the guide names the same defaults and limits the service checks. test/config-table.test.ts
 * fails when the table in the guide is not what this script makes now.
 *
 *   node --import tsx scripts/config-table.ts [--check]   (--check: exit 1 when the table is stale)
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { maxPort, settings, type Setting } from '../src/config/declaration.js';

export const guideFile = path.join(import.meta.dirname, '..', 'docs', 'guides', 'production.md');
export const startMarker = '<!-- config-table:start -->';
export const endMarker = '<!-- config-table:end -->';

function code(value: string | number | boolean): string {
  return `\`${value}\``;
}

function shownDefault(setting: Setting): string {
  if (setting.shownDefault !== undefined) return setting.shownDefault;
  return 'default' in setting && setting.default !== undefined ? code(setting.default) : 'unset';
}

/** The values the reader accepts, as the kind and its limits say unless the declaration words them. */
function allowed(setting: Setting): string {
  if (setting.allowed !== undefined) return setting.allowed;
  switch (setting.kind) {
    case 'boolean':
      return '`true` or `false`';
    case 'number':
      return `${setting.integer === true ? 'a whole number' : 'a number'} from ${setting.min} to ${setting.max}`;
    case 'port':
      return `a port number from 0 to ${maxPort}`;
    case 'choice':
      return setting.choices.map(code).join(', ');
    case 'url':
      return `a URL: ${setting.protocols.map((protocol) => code(`${protocol}//`)).join(' or ')}`;
    case 'caFile':
      return 'the path of a PEM file';
    case 'text':
    case 'list':
      return 'any text';
  }
}

/**
 * The Markdown table, padded the way Prettier lays a table out, so formatting the guide leaves it
 * as written and the staleness check compares text for text.
 */
export function renderConfigTable(): string {
  const rows = Object.entries(settings as Record<string, Setting>).map(([name, setting]) =>
    [code(name), shownDefault(setting), allowed(setting), setting.description].map((cell) =>
      cell.replaceAll('|', '\\|'),
    ),
  );
  const header = ['Variable', 'Default', 'Allowed values', 'Meaning'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

/** The guide with the table between the markers replaced by `table`. */
export function withConfigTable(guide: string, table = renderConfigTable()): string {
  const start = guide.indexOf(startMarker);
  const end = guide.indexOf(endMarker);
  if (start < 0 || end < start) throw new Error(`the guide has no ${startMarker} … ${endMarker}`);
  return `${guide.slice(0, start + startMarker.length)}\n\n${table}\n\n${guide.slice(end)}`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const current = fs.readFileSync(guideFile, 'utf8');
  const wanted = withConfigTable(current);
  const relative = path.relative(process.cwd(), guideFile);
  if (process.argv.includes('--check')) {
    if (current !== wanted) {
      console.error(`the configuration table in ${relative} is stale: run npm run docs:config`);
      process.exitCode = 1;
    } else {
      console.log(`the configuration table in ${relative} is up to date`);
    }
  } else if (current === wanted) {
    console.log(`the configuration table in ${relative} is up to date`);
  } else {
    fs.writeFileSync(guideFile, wanted);
    console.log(`wrote the configuration table in ${relative}`);
  }
}
