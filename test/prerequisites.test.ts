import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  findProgram,
  installAllowed,
  missingPrograms,
  planFor,
  programs,
  requirementsOf,
  type Machine,
} from './helpers/prerequisites.js';
import { repoRoot } from './helpers/service-process.js';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-prerequisites-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** A folder for PATH holding the named files, executable or not. */
function binFolder(name: string, files: Record<string, { executable: boolean }> = {}): string {
  const folder = path.join(scratch, name);
  fs.mkdirSync(folder);
  for (const [file, { executable }] of Object.entries(files)) {
    fs.writeFileSync(path.join(folder, file), '#!/bin/sh\n', { mode: executable ? 0o755 : 0o644 });
  }
  return folder;
}

const everything = [programs.pgbouncer, programs.redisServer, programs.redisCli, programs.openssl];
const debianUser: Machine = { root: false, debian: true, aptGet: true };

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `node --import tsx test/run.ts <files>` with exactly this environment. */
function runTests(files: string[], env: NodeJS.ProcessEnv): Promise<Finished> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/run.ts', ...files], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    }),
  );
}

/** The environment of a test run without a server named, but for what is given. */
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { DATABASE_URL: _database, REDIS_URL: _redis, ...rest } = process.env;
  return { ...rest, ...extra };
}

describe('the programs the suites need', () => {
  test('a program is found on PATH only as an executable file', () => {
    const empty = binFolder('empty');
    const unusable = binFolder('unusable', { openssl: { executable: false } });
    const usable = binFolder('usable', { openssl: { executable: true } });
    assert.equal(findProgram(programs.openssl, empty), undefined);
    assert.equal(findProgram(programs.openssl, unusable), undefined);
    assert.equal(findProgram(programs.openssl, [empty, usable].join(path.delimiter)), path.join(usable, 'openssl'));
    assert.deepEqual(missingPrograms([programs.openssl, programs.redisCli], usable), [programs.redisCli]);
    // PgBouncer is run from Debian's fixed path, wherever PATH points.
    assert.equal(findProgram({ command: 'pgbouncer', path: path.join(empty, 'pgbouncer') }, usable), undefined);
  });

  test('which files need which program or the machine’s Redis, by what their suites use', () => {
    const needed = (file: string) => {
      const found = requirementsOf([file]);
      return [...found.programs.keys()]
        .map((program) => program.command)
        .concat(found.redis.length > 0 ? ['redis'] : []);
    };
    assert.deepEqual(needed('test/storage/pgbouncer.test.ts'), ['pgbouncer']);
    assert.deepEqual(needed('test/http/sign-in/forward-auth-nginx.test.ts'), ['nginx']);
    assert.deepEqual(needed('test/http/core/rate-limits-cluster.test.ts').sort(), ['redis-cli', 'redis-server']);
    assert.deepEqual(needed('test/config.test.ts'), ['openssl']);
    assert.deepEqual(needed('test/storage/redis-tls.test.ts').sort(), ['openssl', 'redis-server']);
    assert.deepEqual(needed('test/production/faults.test.ts'), ['redis']);
    assert.deepEqual(needed('test/client/client.test.ts'), []);
    assert.deepEqual(needed('test/production/shutdown.test.ts'), [], 'its Redis is only REDIS_URL’s');
  });

  test('without root, the user is told the one apt-get command that installs what is missing', () => {
    const plan = planFor(everything, debianUser);
    assert.ok(plan !== undefined && 'stop' in plan);
    assert.match(plan.stop, /^ {2}sudo apt-get install pgbouncer redis-server openssl$/m);
    assert.match(plan.stop, /\/usr\/sbin\/pgbouncer, redis-server, redis-cli, openssl/);
  });

  test('as root on Debian with apt-get the packages are installed; without apt-get the command is named', () => {
    assert.deepEqual(planFor([programs.redisCli, programs.openssl], { root: true, debian: true, aptGet: true }), {
      install: ['redis-server', 'openssl'],
    });
    const noApt = planFor([programs.openssl], { root: true, debian: true, aptGet: false });
    assert.ok(noApt !== undefined && 'stop' in noApt);
    assert.match(noApt.stop, /^ {2}apt-get install openssl$/m);
    const elsewhere = planFor([programs.openssl], { root: false, debian: false, aptGet: false });
    assert.ok(elsewhere !== undefined && 'stop' in elsewhere);
    assert.match(elsewhere.stop, /package manager/);
    assert.equal(planFor([], debianUser), undefined, 'nothing missing, nothing to do');
  });

  test('TEST_INSTALL_PACKAGES=false makes root on Debian stop with the apt-get command instead of installing', () => {
    const root: Machine = { root: true, debian: true, aptGet: true };
    const plan = planFor([programs.openssl], root, { install: false });
    assert.ok(plan !== undefined && 'stop' in plan);
    assert.match(plan.stop, /^ {2}apt-get install openssl$/m);
    assert.match(plan.stop, /TEST_INSTALL_PACKAGES=false/);
    assert.equal(installAllowed({}), true);
    assert.equal(installAllowed({ TEST_INSTALL_PACKAGES: 'true' }), true);
    assert.equal(installAllowed({ TEST_INSTALL_PACKAGES: 'false' }), false);
    const typo = installAllowed({ TEST_INSTALL_PACKAGES: 'no' });
    assert.ok(typeof typo === 'object');
    assert.match(typo.stop, /TEST_INSTALL_PACKAGES must be true or false/);
  });

  test('test/run.ts with a PATH that lacks openssl stops within 10 s, running nothing and naming the command', async () => {
    const run = await runTests(['test/config.test.ts'], cleanEnv({ PATH: binFolder('no-openssl') }));
    assert.equal(run.code, 1, run.stderr);
    assert.ok(run.ms < 10_000, `stopped after ${Math.round(run.ms)} ms`);
    assert.match(run.stderr, /no test was run/);
    assert.match(run.stderr, /programs this machine lacks: openssl/);
    assert.match(run.stderr, /apt-get install openssl/);
    assert.match(run.stderr, /openssl: test\/config\.test\.ts/);
    assert.doesNotMatch(run.stdout, /# (pass|fail)/, 'no suite ran');
  });

  test(
    'test/run.ts as root with TEST_INSTALL_PACKAGES=false never runs apt-get',
    {
      skip:
        process.getuid?.() !== 0 || !fs.existsSync('/etc/debian_version')
          ? 'apt-get runs only as root on Debian'
          : false,
    },
    async () => {
      // An apt-get on PATH that only notes it was called: without the switch, the run would call it.
      const folder = binFolder('recording-apt-get');
      const calls = path.join(scratch, 'apt-get-calls');
      fs.writeFileSync(path.join(folder, 'apt-get'), `#!/bin/sh\necho "$@" >> '${calls}'\n`, { mode: 0o755 });
      const run = await runTests(['test/config.test.ts'], cleanEnv({ PATH: folder, TEST_INSTALL_PACKAGES: 'false' }));
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /no test was run/);
      assert.match(run.stderr, /^ {2}apt-get install openssl$/m);
      assert.equal(fs.existsSync(calls), false, 'apt-get was run');
    },
  );
});

describe('the servers a run is pointed at', () => {
  test('test/run.ts with a REDIS_URL that never answers stops within 10 s naming it', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      const run = await runTests(
        ['test/client/api-types.test.ts'],
        cleanEnv({ REDIS_URL: `redis://127.0.0.1:${port}` }),
      );
      assert.equal(run.code, 1, run.stderr);
      assert.ok(run.ms < 10_000, `stopped after ${Math.round(run.ms)} ms`);
      assert.match(run.stderr, new RegExp(`REDIS_URL=redis://127\\.0\\.0\\.1:${port}\\S* does not answer`));
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  test('test/run.ts with a DATABASE_URL nothing listens on stops at once naming it, its password hidden', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const run = await runTests(
      ['test/client/api-types.test.ts'],
      cleanEnv({ DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${port}/postgres` }),
    );
    assert.equal(run.code, 1, run.stderr);
    assert.ok(run.ms < 10_000, `stopped after ${Math.round(run.ms)} ms`);
    assert.match(run.stderr, /DATABASE_URL=postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/postgres does not answer/);
    assert.doesNotMatch(run.stderr, /hunter2/);
  });
});
