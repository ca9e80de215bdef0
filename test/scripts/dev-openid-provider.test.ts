import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { test } from 'node:test';
import { parseCommand } from '../../src/cli/arguments.js';

const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const script = path.join(repoRoot, 'scripts', 'dev-openid-provider.ts');

/** The script's output up to the end of the command it prints (or its errors), then the script stopped. */
async function printedBy(args: string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const lines: string[] = [];
  try {
    for await (const line of readline.createInterface({ input: child.stdout })) {
      lines.push(line);
      if (line.includes('--client-id')) break;
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return lines.length > 0 ? lines.join('\n') : errors;
}

/** The words a shell makes of the printed command: continuation lines joined, quotes removed. */
function shellWords(command: string): string[] {
  return [...command.replace(/\\\n/g, ' ').matchAll(/"([^"]*)"|(\S+)/g)].map((match) => (match[1] ?? match[2])!);
}

test('the printed command adds the provider to the store named by --store, and the CLI accepts it', async () => {
  const output = await printedBy(['--port', '0', '--id', 'dev', '--store', 'shop-b']);
  const issuer = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
  assert.ok(issuer, output);
  const line = output.slice(output.indexOf('npm run cli -- '));
  const words = shellWords(line);
  assert.deepEqual(words.slice(0, 4), ['npm', 'run', 'cli', '--'], line);
  const command = parseCommand(words.slice(4));
  assert.ok(typeof command === 'object', line);
  assert.deepEqual(
    { name: command.name, ...('store' in command ? { store: command.store } : {}) },
    { name: 'store.providers.add', store: 'shop-b' },
  );
  assert.match(line, new RegExp(`--id dev --issuer ${issuer} `));
});

test('without --store the printed command names the first store, default', async () => {
  const output = await printedBy(['--port', '0']);
  assert.match(output, /npm run cli -- store providers add --store default --id test /);
});
