import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

const root = fileURLToPath(new URL('../..', import.meta.url));
const slow = { timeout: 60_000 };
const folders: string[] = [];

function freshFolder(): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-cli-'));
  folders.push(folder);
  return folder;
}

/** A clean environment: nothing from the test runner leaks into the child. */
function cliEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', DATA_DIR: dataDir, PORT: '0', ...extra };
}

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function spawnCli(args: string[], env: NodeJS.ProcessEnv): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs one command to its end. */
function run(args: string[], env: NodeJS.ProcessEnv): Promise<Finished> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

type LogLine = Record<string, unknown>;

/** A `serve` child whose log lines can be awaited as they come. */
class ServiceProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  readonly lines: LogLine[] = [];
  readonly finished: Promise<Finished>;
  private stderr = '';
  private readonly waiters = new Set<{
    match: (line: LogLine) => boolean;
    resolve: (line: LogLine) => void;
    reject: (error: Error) => void;
  }>();

  constructor(env: NodeJS.ProcessEnv) {
    this.child = spawnCli(['serve'], env);
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    readline.createInterface({ input: this.child.stdout }).on('line', (text) => {
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        line = { msg: text };
      }
      this.lines.push(line);
      for (const waiter of this.waiters) {
        if (waiter.match(line)) {
          this.waiters.delete(waiter);
          waiter.resolve(line);
        }
      }
    });
    this.finished = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        for (const waiter of this.waiters) {
          waiter.reject(new Error(`the service ended (code ${code}, signal ${signal}) first; stderr: ${this.stderr}`));
        }
        this.waiters.clear();
        resolve({
          code,
          signal,
          stdout: this.lines.map((line) => JSON.stringify(line)).join('\n'),
          stderr: this.stderr,
        });
      });
    });
  }

  /** The first log line (already written or still to come) that matches. */
  waitFor(match: (line: LogLine) => boolean): Promise<LogLine> {
    const seen = this.lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    if (this.child.exitCode !== null || this.child.signalCode !== null) {
      return Promise.reject(new Error(`the service has ended; stderr: ${this.stderr}`));
    }
    return new Promise((resolve, reject) => this.waiters.add({ match, resolve, reject }));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
}

interface HttpAnswer {
  status: number;
  body: any;
}

/** A plain HTTP call without Origin or Sec-Fetch-* headers, as a server-side client makes it. */
function call(method: 'GET' | 'POST', url: string, body?: unknown): Promise<HttpAnswer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method, agent: false, headers: payload === undefined ? {} : { 'content-type': 'application/json' } },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const type = String(response.headers['content-type'] ?? '');
          resolve({
            status: response.statusCode ?? 0,
            body: type.includes('json') && text !== '' ? JSON.parse(text) : text,
          });
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

function json(output: string): Record<string, unknown> {
  return JSON.parse(output) as Record<string, unknown>;
}

after(() => {
  for (const folder of folders) fs.rmSync(folder, { recursive: true, force: true });
});

describe('the command line on its own', () => {
  test('--help prints the usage and exits 0', async () => {
    const result = await run(['--help'], cliEnv(freshFolder()));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Usage: storefront-auth/);
    for (const command of [
      'serve',
      'migrate',
      'store show',
      'store set',
      'outbox list',
      'outbox retry',
      'customer show',
    ]) {
      assert.ok(result.stdout.includes(command), `the usage names ${command}`);
    }
  });

  test('an unknown command exits 2 with the usage on stderr', async () => {
    const result = await run(['frobnicate'], cliEnv(freshFolder()));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /unknown command "frobnicate"/);
    assert.match(result.stderr, /Usage: storefront-auth/);
    assert.equal(result.stdout, '');
  });

  test('a bad configuration value stops the start with exit 2 and names the variable, touching no data folder', async () => {
    const dataDir = path.join(freshFolder(), 'never-made');
    const result = await run(['serve'], cliEnv(dataDir, { STORE_IDENTITY_MODE: 'fax' }));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /STORE_IDENTITY_MODE/);
    assert.equal(fs.existsSync(dataDir), false, 'nothing was created');
  });

  test('store set without any flag exits 2', async () => {
    const result = await run(['store', 'set'], cliEnv(freshFolder()));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /store set needs at least one of/);
  });

  test('outbox list with an unknown status exits 2', async () => {
    const result = await run(['outbox', 'list', '--status', 'bogus'], cliEnv(freshFolder()));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--status must be one of/);
  });

  test(
    'store show on a fresh data folder prints the active store made from configuration and releases the folder',
    slow,
    async () => {
      const dataDir = freshFolder();
      const result = await run(['store', 'show'], cliEnv(dataDir, { STORE_NAME: 'Corner Shop' }));
      assert.equal(result.code, 0, result.stderr);
      const store = json(result.stdout);
      assert.equal(store['status'], 'active');
      assert.equal(store['name'], 'Corner Shop');
      assert.equal(store['identity_mode'], 'email');
      assert.deepEqual(store['settings'], { 'auth.customer_verification_required': false });
      assert.equal(fs.existsSync(path.join(dataDir, 'lock')), false, 'the command let go of the folder');
      assert.ok(fs.existsSync(path.join(dataDir, 'secret')), 'a deployment secret was made on first start');
    },
  );

  test('store set --status paused is kept: the next store show says paused', slow, async () => {
    const env = cliEnv(freshFolder());
    const set = await run(['store', 'set', '--status', 'paused', '--name', 'Night Shop'], env);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(json(set.stdout)['status'], 'paused');

    const shown = await run(['store', 'show'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(json(shown.stdout)['status'], 'paused');
    assert.equal(json(shown.stdout)['name'], 'Night Shop');
  });
});

describe('the command line beside a running service', { timeout: 180_000 }, () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let service: ServiceProcess;
  let base: string;

  before(async () => {
    dataDir = freshFolder();
    env = cliEnv(dataDir);
    service = new ServiceProcess(env);
    const listening = await service.waitFor((line) => String(line['msg']).startsWith('Storefront Auth listening'));
    const address =
      typeof listening['address'] === 'string'
        ? listening['address']
        : /http:\/\/\S+/.exec(String(listening['msg']))?.[0];
    assert.ok(address !== undefined, 'the service logs its address');
    base = address;
    assert.doesNotMatch(base, /:0$/, 'the logged address has the real port');
  });

  after(async () => {
    if (service.running) {
      service.child.kill('SIGKILL');
      await service.finished;
    }
  });

  test('the running service answers and holds the data folder', async () => {
    assert.deepEqual((await call('GET', `${base}/api/v1/health/live`)).body, { status: 'ok' });
    assert.equal(fs.readFileSync(path.join(dataDir, 'lock'), 'utf8').trim(), String(service.child.pid));
  });

  test(
    'store set --status paused goes through the service and the very next login answers 503 store_unavailable; active restores it',
    slow,
    async () => {
      const paused = await run(['store', 'set', '--status', 'paused'], env);
      assert.equal(paused.code, 0, paused.stderr);
      assert.equal(json(paused.stdout)['status'], 'paused');

      const login = { identity: 'nobody@example.com', password: 'whatever 123' };
      const shut = await call('POST', `${base}/api/v1/customer/auth/login`, login);
      assert.equal(shut.status, 503);
      assert.equal(shut.body.code, 'store_unavailable');
      const ready = await call('GET', `${base}/api/v1/health/ready`);
      assert.equal(ready.body.details?.store_status, 'paused', 'readiness reports the status');

      const active = await run(['store', 'set', '--status', 'active'], env);
      assert.equal(active.code, 0, active.stderr);
      assert.equal(json(active.stdout)['status'], 'active');
      const open = await call('POST', `${base}/api/v1/customer/auth/login`, login);
      assert.equal(open.status, 401, 'an unknown account is refused as usual once the store is open');
      assert.equal(open.body.code, 'unauthenticated');
    },
  );

  test(
    'with a customer registered, changing the identity mode is refused with exit 1 and the store is unchanged',
    slow,
    async () => {
      const registered = await call('POST', `${base}/api/v1/customer/auth/register`, {
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        password: 'analytical engine 1843',
        password_confirmation: 'analytical engine 1843',
      });
      assert.equal(registered.status, 201);

      const refused = await run(['store', 'set', '--identity-mode', 'phone'], env);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /--force/);
      assert.equal(refused.stdout, '');

      const shown = await run(['store', 'show'], env);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(json(shown.stdout)['identity_mode'], 'email');

      const customer = await run(['customer', 'show', 'ADA@example.com'], env);
      assert.equal(customer.code, 0, customer.stderr);
      assert.equal((json(customer.stdout)['identity'] as Record<string, unknown>)['value'], 'ada@example.com');
    },
  );

  test(
    'in development the code goes to the service log, verifies the customer, and outbox list shows the message',
    slow,
    async () => {
      const logged = await service.waitFor(
        (line) => line['to'] === 'ada@example.com' && line['purpose'] === 'verification',
      );
      const code = /(?<!\d)(\d{6})(?!\d)/.exec(String(logged['text']))?.[1];
      assert.ok(code !== undefined, 'the log line holds the code');
      const verified = await call('POST', `${base}/api/v1/customer/auth/verify`, { identity: 'ada@example.com', code });
      assert.equal(verified.status, 200);

      const listed = await run(['outbox', 'list', '--status', 'sent'], env);
      assert.equal(listed.code, 0, listed.stderr);
      const entries = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
      assert.equal(entries.length, 1);
      assert.equal(entries[0]!['recipient'], 'ada@example.com');
      assert.equal(entries[0]!['purpose'], 'verification');
      const retry = await run(['outbox', 'retry', String(entries[0]!['id'])], env);
      assert.equal(retry.code, 1, 'a sent message is not sent again');
    },
  );

  test(
    'a second serve on the same data folder exits non-zero saying the folder is in use, and the first keeps serving',
    slow,
    async () => {
      const second = await run(['serve'], env);
      assert.notEqual(second.code, 0);
      assert.match(second.stderr, /in use/);
      assert.ok(service.running);
      assert.equal(fs.readFileSync(path.join(dataDir, 'lock'), 'utf8').trim(), String(service.child.pid));
      assert.equal((await call('GET', `${base}/api/v1/health/live`)).status, 200);
    },
  );

  test('on SIGTERM the service exits 0 and gives the data folder back', slow, async () => {
    service.child.kill('SIGTERM');
    const finished = await service.finished;
    assert.equal(finished.signal, null, finished.stderr);
    assert.equal(finished.code, 0, finished.stderr);
    assert.equal(fs.existsSync(path.join(dataDir, 'lock')), false, 'the lock file is gone');
    assert.ok(
      service.lines.some((line) => line['msg'] === 'stopped'),
      'it logged its stop',
    );

    const shown = await run(['store', 'show'], env);
    assert.equal(shown.code, 0, `the folder opens again without the service: ${shown.stderr}`);
    assert.equal(json(shown.stdout)['status'], 'active');
  });
});
