import assert from 'node:assert/strict';
import type { ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { cliEnv, isAlive, runCommand, spawnCli, tempFolders, type Finished } from '../helpers/cli.js';

const slow = { timeout: 60_000 };
const folders = tempFolders('sfa-cli-');
const freshFolder = () => folders.fresh();
const run = runCommand;

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

  /** What the service wrote to stderr so far. */
  get errorOutput(): string {
    return this.stderr;
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

/** The process that runs the embedded server of a data folder, from its postmaster.pid. */
function serverPid(dataDir: string): number | undefined {
  try {
    return Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

function parentOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Asks until `check` holds: the service applies a store change through its short cache. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the condition did not come true in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function json(output: string): Record<string, unknown> {
  return JSON.parse(output) as Record<string, unknown>;
}

after(() => {
  folders.removeAll();
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

  test('no command at all is bad usage: exit 2 with the usage on stderr, nothing on stdout', async () => {
    const result = await run([], cliEnv(freshFolder()));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^storefront-auth: no command given\n\nUsage: storefront-auth/);
    assert.equal(result.stdout, '');
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

  test('serve on a port in use exits 1 with one line naming PORT and HOST, before creating anything in DATA_DIR', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const dataDir = path.join(freshFolder(), 'never-made');
      const result = await run(['serve'], cliEnv(dataDir, { PORT: String(port), HOST: '127.0.0.1' }));
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(`^storefront-auth: PORT=${port} HOST=127\\.0\\.0\\.1: the port is in use; [^\\n]*PORT[^\\n]*\\n$`),
      );
      assert.equal(fs.existsSync(dataDir), false, 'no database was created first');
    } finally {
      taken.close();
    }
  });

  test('serve warns in its log of a variable one or two letters off a setting, naming the setting', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      // The port in use ends the start right after the warning, before any database is opened.
      const env = cliEnv(path.join(freshFolder(), 'never-made'), {
        PORT: String(port),
        DATABSE_URL: 'postgres://auth@db:5432/storefront',
      });
      const result = await run(['serve'], env);
      assert.equal(result.code, 1, result.stderr);
      const warning = result.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as LogLine)
        .find((line) => line['variable'] === 'DATABSE_URL');
      assert.ok(warning, `a warning names DATABSE_URL: ${result.stdout}`);
      assert.equal(warning['level'], 40, 'logged as a warning');
      assert.equal(warning['resembles'], 'DATABASE_URL');
      assert.match(String(warning['msg']), /did you mean DATABASE_URL\?/);
    } finally {
      taken.close();
    }
  });

  test('serve with METRICS_PORT in use exits 1 with one line naming METRICS_PORT, before creating anything', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const dataDir = path.join(freshFolder(), 'never-made');
      const result = await run(['serve'], cliEnv(dataDir, { METRICS_PORT: String(port) }));
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(`^storefront-auth: METRICS_PORT=${port} METRICS_HOST=127\\.0\\.0\\.1: [^\\n]*\\n$`),
      );
      assert.equal(fs.existsSync(dataDir), false, 'no database was created first');
    } finally {
      taken.close();
    }
  });

  test('a shutdown delay not shorter than the shutdown timeout stops the start with exit 2 naming the variable', async () => {
    const result = await run(
      ['serve'],
      cliEnv(freshFolder(), { SHUTDOWN_DELAY_SECONDS: '30', SHUTDOWN_TIMEOUT_SECONDS: '25' }),
    );
    assert.equal(result.code, 2);
    assert.match(result.stderr, /SHUTDOWN_DELAY_SECONDS: must be less than SHUTDOWN_TIMEOUT_SECONDS/);
  });

  test(
    'a command against a database server that never answers exits 1 saying the database is not answering',
    slow,
    async () => {
      const sockets = new Set<net.Socket>();
      const silent = net.createServer((socket) => sockets.add(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      try {
        const port = (silent.address() as net.AddressInfo).port;
        const result = await run(
          ['store', 'show'],
          cliEnv(freshFolder(), {
            DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x`,
            APP_SECRET: 'c'.repeat(40),
          }),
        );
        assert.equal(result.code, 1);
        assert.match(result.stderr, /^storefront-auth: the database is not answering \(.*timeout.*\)/);
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => silent.close(() => resolve()));
      }
    },
  );

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
    'store show on a fresh data folder prints the active store made from configuration and stops the server it started',
    slow,
    async () => {
      const dataDir = freshFolder();
      const result = await run(['store', 'show'], cliEnv(dataDir, { STORE_NAME: 'Corner Shop' }));
      assert.equal(result.code, 0, result.stderr);
      const store = json(result.stdout);
      assert.equal(store['status'], 'active');
      assert.equal(store['name'], 'Corner Shop');
      assert.equal(store['identity_mode'], 'email');
      assert.deepEqual(store['settings'], {
        'auth.customer_verification_required': false,
        'auth.sign_in_with_code': false,
        'auth.sign_in_notices': true,
        'auth.passkeys': false,
        'auth.two_factor': 'off',
        'auth.phone_countries': [],
        'auth.bot_check': null,
      });
      assert.equal(serverPid(dataDir), undefined, 'the command stopped the server it started');
      assert.ok(fs.existsSync(path.join(dataDir, 'secret')), 'a deployment secret was made on first start');
      assert.equal(fs.statSync(path.join(dataDir, 'secret')).mode & 0o777, 0o600, 'only the owner reads the secret');
    },
  );

  test('store set --status paused is kept (with its settings): the next store show says paused', slow, async () => {
    const env = cliEnv(freshFolder());
    const set = await run(
      [
        'store',
        'set',
        '--status',
        'paused',
        '--name',
        'Night Shop',
        '--sign-in-with-code',
        'true',
        '--passkeys',
        'true',
        '--two-factor',
        'required',
        '--phone-countries',
        'de, AT',
      ],
      env,
    );
    assert.equal(set.code, 0, set.stderr);
    assert.equal(json(set.stdout)['status'], 'paused');

    const shown = await run(['store', 'show'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(json(shown.stdout)['status'], 'paused');
    assert.equal(json(shown.stdout)['name'], 'Night Shop');
    assert.deepEqual(json(shown.stdout)['settings'], {
      'auth.customer_verification_required': false,
      'auth.sign_in_with_code': true,
      'auth.sign_in_notices': true,
      'auth.passkeys': true,
      'auth.two_factor': 'required',
      'auth.phone_countries': ['DE', 'AT'],
      'auth.bot_check': null,
    });
  });

  test('store set --two-factor with a value other than off, optional or required exits 2', async () => {
    const result = await run(['store', 'set', '--two-factor', 'on'], cliEnv(freshFolder()));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--two-factor must be one of off, optional, required/);
  });

  test('store set --sign-in-with-code with a value other than true or false exits 2', async () => {
    const result = await run(['store', 'set', '--sign-in-with-code', 'yes'], cliEnv(freshFolder()));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--sign-in-with-code must be one of true, false/);
  });
});

describe('the command line in production without a transport for the store’s channel', () => {
  test(
    'serve refuses with one line naming the variable, store set --identity-mode phone refuses naming SMS_WEBHOOK_URL, and the opt-in lets both through',
    { timeout: 120_000 },
    async () => {
      const dataDir = freshFolder();
      const production = { NODE_ENV: 'production' };

      const email = await run(['serve'], cliEnv(dataDir, production));
      assert.equal(email.code, 2, email.stderr);
      assert.match(
        email.stderr,
        /^storefront-auth: configuration error: SMTP_URL: .*DELIVERY_LOG_IN_PRODUCTION=true.*\n$/,
      );
      assert.equal(email.stderr.trim().split('\n').length, 1, 'one line');
      assert.equal(fs.existsSync(path.join(dataDir, 'lock')), false, 'the folder is given back');

      const withSmtp = { ...production, SMTP_URL: 'smtp://127.0.0.1:2525' };
      const refused = await run(['store', 'set', '--identity-mode', 'phone'], cliEnv(dataDir, withSmtp));
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /SMS_WEBHOOK_URL .*DELIVERY_LOG_IN_PRODUCTION=true/);
      assert.equal(refused.stdout, '');

      const optedIn = { ...withSmtp, DELIVERY_LOG_IN_PRODUCTION: 'true' };
      const switched = await run(['store', 'set', '--identity-mode', 'phone'], cliEnv(dataDir, optedIn));
      assert.equal(switched.code, 0, switched.stderr);
      assert.equal(json(switched.stdout)['identity_mode'], 'phone');

      const phone = await run(['serve'], cliEnv(dataDir, withSmtp));
      assert.equal(phone.code, 2, phone.stderr);
      assert.match(phone.stderr, /configuration error: SMS_WEBHOOK_URL: /, 'the store row decides the channel');
    },
  );
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

  test('the running service answers and runs the server of the data folder as its child', async () => {
    assert.deepEqual((await call('GET', `${base}/api/v1/health/live`)).body, { status: 'ok' });
    const pid = serverPid(dataDir);
    assert.ok(pid !== undefined);
    assert.equal(parentOf(pid), service.child.pid);
  });

  test(
    'store set --status paused reaches the running service through the database; logins then answer 503 store_unavailable, and active restores them',
    slow,
    async () => {
      const paused = await run(['store', 'set', '--status', 'paused'], env);
      assert.equal(paused.code, 0, paused.stderr);
      assert.equal(json(paused.stdout)['status'], 'paused');

      const login = { identity: 'nobody@example.com', password: 'whatever 123' };
      // Readiness reads the store afresh, while the store gate in front of customer calls reads it
      // through a short cache of its own: wait until a customer-facing call sees the change.
      const gateAnswers = async (status: number) =>
        eventually(async () => (await call('GET', `${base}/api/v1/csrf-cookie`)).status === status);
      await gateAnswers(503);
      const shut = await call('POST', `${base}/api/v1/customer/auth/login`, login);
      assert.equal(shut.status, 503);
      assert.equal(shut.body.code, 'store_unavailable');
      const ready = await call('GET', `${base}/api/v1/health/ready`);
      assert.equal(ready.body.details?.store_status, 'paused', 'readiness reports the status');

      const active = await run(['store', 'set', '--status', 'active'], env);
      assert.equal(active.code, 0, active.stderr);
      assert.equal(json(active.stdout)['status'], 'active');
      await gateAnswers(204);
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
      assert.match(refused.stderr, /the store has 1 customer registered/, 'one customer, in the singular');
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
      const registered = await call('POST', `${base}/api/v1/customer/auth/register`, {
        name: 'Grace Hopper',
        email: 'grace@example.com',
        password: 'compiler engine 1952',
        password_confirmation: 'compiler engine 1952',
      });
      assert.equal(registered.status, 201);
      const logged = await service.waitFor(
        (line) => line['to'] === 'grace@example.com' && line['purpose'] === 'verification',
      );
      const code = /(?<!\d)(\d{6})(?!\d)/.exec(String(logged['text']))?.[1];
      assert.ok(code !== undefined, 'the log line holds the code');
      // A person reading the terminal finds the code on a plain line of its own, outside the JSON.
      await eventually(async () =>
        service.errorOutput.includes(`\n  >>> grace@example.com: ${code} is your My Store verification code\n`),
      );
      const verified = await call('POST', `${base}/api/v1/customer/auth/verify`, {
        identity: 'grace@example.com',
        code,
      });
      assert.equal(verified.status, 200);

      const listed = await run(['outbox', 'list', '--status', 'sent'], env);
      assert.equal(listed.code, 0, listed.stderr);
      const entries = (JSON.parse(listed.stdout) as Array<Record<string, unknown>>).filter(
        (entry) => entry['recipient'] === 'grace@example.com',
      );
      assert.equal(entries.length, 1);
      assert.equal(entries[0]!['purpose'], 'verification');
      const retry = await run(['outbox', 'retry', String(entries[0]!['id'])], env);
      assert.equal(retry.code, 1, 'a sent message is not sent again');
    },
  );

  test(
    'a second serve on the same data folder exits 1 with one line naming the serving process and what to do, and the first keeps serving',
    slow,
    async () => {
      const second = await run(['serve'], env);
      assert.equal(second.code, 1, second.stderr);
      assert.match(
        second.stderr,
        /^storefront-auth: another storefront-auth is already serving DATA_DIR=\S+ \(process \d+\): stop it, or give this one another DATA_DIR\n$/,
      );
      assert.ok(service.running);
      assert.equal(parentOf(serverPid(dataDir)!), service.child.pid, 'the first service still runs its server');
      assert.equal((await call('GET', `${base}/api/v1/health/live`)).status, 200);
    },
  );

  test('on SIGTERM the service exits 0 and stops its server', slow, async () => {
    const pid = serverPid(dataDir)!;
    service.child.kill('SIGTERM');
    const finished = await service.finished;
    assert.equal(finished.signal, null, finished.stderr);
    assert.equal(finished.code, 0, finished.stderr);
    assert.equal(isAlive(pid), false, 'the server has stopped');
    assert.equal(serverPid(dataDir), undefined, 'and removed its postmaster.pid');
    assert.ok(
      service.lines.some((line) => line['msg'] === 'stopped'),
      'it logged its stop',
    );

    const shown = await run(['store', 'show'], env);
    assert.equal(shown.code, 0, `the folder opens again without the service: ${shown.stderr}`);
    assert.equal(json(shown.stdout)['status'], 'active');
  });
});
