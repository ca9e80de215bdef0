/**
 * `npm test`: starts ONE embedded PostgreSQL server for the whole run (Node's test runner has no
 * global setup), hands its URL to the test files, each of which makes a database of its own on it,
 * and removes the server afterwards. With DATABASE_URL set, the files use that server instead.
 *
 * Before anything starts it checks what the chosen files need of the machine
 * (helpers/prerequisites.ts): the programs their suites spawn (openssl, redis-server, redis-cli,
 * PgBouncer), installed here when the run may (root on Debian or Ubuntu, with apt-get, unless
 * TEST_INSTALL_PACKAGES=false), and the servers the run is pointed at (DATABASE_URL, REDIS_URL or
 * the machine's Redis). When one is missing it stops within seconds, exit 1, naming what to
 * install or start.
 *
 *   node --import tsx test/run.ts [test files…]   (default: every test/**\/*.test.ts)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './helpers/service-process.js';
import { startTestServer, testServerUrlVariable, type TestServer } from './helpers/embedded-server.js';
import { prepareMachine } from './helpers/prerequisites.js';

const given = process.argv.slice(2);
const files =
  given.length > 0
    ? given
    : (fs.readdirSync(path.join(repoRoot, 'test'), { recursive: true }) as string[])
        .filter((file) => file.endsWith('.test.ts'))
        .map((file) => path.join('test', file))
        .sort();

const missing = await prepareMachine(files);
if (missing !== undefined) {
  process.stderr.write(`test/run.ts: no test was run. ${missing}`);
  process.exit(1);
}

let testServer: TestServer | undefined;
const env = { ...process.env };
if (env['DATABASE_URL'] === undefined) {
  testServer = await startTestServer();
  env[testServerUrlVariable] = testServer.server.adminUrl;
}

const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], {
  cwd: repoRoot,
  env,
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
const code = await new Promise<number>((resolve) =>
  child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 128))),
);
await testServer?.remove();
process.exitCode = code;
