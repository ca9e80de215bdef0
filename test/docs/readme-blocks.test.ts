import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import ts from 'typescript';
import { useHarness } from '../helpers/harness.js';
import { serviceBackend } from '../helpers/service-backend.js';
import { repoRoot, startService, type ServiceProcess } from '../helpers/service-process.js';

/**
 * Every fenced block of README.md, checked as written: the two commands are the project's contract
 * (asserted, not run), the log-line example is compared with the line the service really prints,
 * the "Try it with curl" block runs with bash and curl against the service started as a process,
 * the typed client's block is type-checked and run against the app, and the benchmark commands
 * (too long to run here) are checked against the script and the options it takes.
 */

interface Block {
  /** The info string after the fence; '' for a block without a language. */
  lang: string;
  /** The block's text, without the indentation of its fence. */
  code: string;
  /** The nearest heading above it. */
  heading: string;
}

/** The fenced blocks of a Markdown text, in order (fences may be indented, as in a list item). */
function fencedBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  for (const match of text.matchAll(/^( *)```(\S*)\n([\s\S]*?)^\1```[ \t]*$/gm)) {
    const [, indent, lang, body] = match;
    const before = text.slice(0, match.index);
    const heading = [...before.matchAll(/^#+ (.+)$/gm)].at(-1)?.[1] ?? '';
    const code = body!
      .split('\n')
      .map((line) => (line.startsWith(indent!) ? line.slice(indent!.length) : line))
      .join('\n');
    blocks.push({ lang: lang!, code, heading });
  }
  return blocks;
}

const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const blocks = fencedBlocks(readme);
const packageJson = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
};

/** The block under `heading` with this language; exactly one. */
function blockUnder(heading: string, lang: string): Block {
  const found = blocks.filter((block) => block.heading === heading && block.lang === lang);
  assert.equal(found.length, 1, `README.md has one ${lang} block under "${heading}"`);
  return found[0]!;
}

describe("README.md's code blocks", () => {
  test('are the ones this test checks, each handled below (a new block needs a check here)', () => {
    assert.deepEqual(
      blocks.map((block) => `${block.lang || '(no language)'} under ${block.heading}`),
      [
        'sh under The two commands', // asserted: the contract
        'sh under The two commands', // asserted: the contract
        '(no language) under Five-minute quick start', // a log line, not a command: compared with the real one
        'sh under Try it with curl', // run with bash and curl against the service
        'ts under A typed client', // type-checked, and run against the app
        'sh under Benchmarks', // not run (45 minutes): the script and its options exist
        'sh under Benchmarks',
      ],
    );
  });

  test('the two commands are exactly the contract, and their scripts exist', () => {
    const [start, run] = blocks.filter((block) => block.heading === 'The two commands');
    assert.equal(start!.code, 'npm ci && npm start\n');
    assert.equal(run!.code, 'npm ci && npm test\n');
    assert.match(packageJson.scripts['start'] ?? '', /\bserve\b/, 'npm start serves');
    assert.ok(packageJson.scripts['test'], 'npm test is a script');
    assert.ok(packageJson.scripts['prepare'], 'npm ci builds what npm start runs (prepare)');
  });

  test('the benchmark commands name the bench script and options it takes (not run: a full run is 45 minutes)', () => {
    const benchBlocks = blocks.filter((block) => block.heading === 'Benchmarks');
    const commands = benchBlocks.flatMap((block) =>
      block.code
        .split('\n')
        .map((line) => line.replace(/\s+#.*$/, '').trim())
        .filter((line) => line !== ''),
    );
    assert.equal(commands.length, 4);
    assert.match(packageJson.scripts['bench'] ?? '', /bench\/run\.ts/);
    const source = fs.readFileSync(path.join(repoRoot, 'bench/run.ts'), 'utf8');
    const figures = /const figureOrder = \[([^\]]*)\]/.exec(source)?.[1] ?? '';
    for (const command of commands) {
      const match = /^((?:[A-Z_]+=\S+ )*)npm run bench(?: -- (.*))?$/.exec(command);
      assert.ok(match, `a bench command: ${command}`);
      for (const variable of match[1]!.trim().split(' ').filter(Boolean)) {
        const name = variable.split('=')[0]!;
        assert.ok(source.includes(`process.env['${name}']`), `bench/run.ts reads ${name}`);
      }
      for (const option of (match[2] ?? '').split(' ').filter(Boolean)) {
        const [, name, value] = /^--(\w+)=(.*)$/.exec(option) ?? [];
        assert.ok(name !== undefined && value !== undefined, `--name=value: ${option}`);
        assert.match(source, new RegExp(`^    ${name}: \\{ type: 'string'`, 'm'), `bench/run.ts takes --${name}`);
        if (name === 'only') for (const id of value.split(',')) assert.ok(figures.includes(`'${id}'`), `figure ${id}`);
        if (name === 'mode') assert.match(value, /^(embedded|production|scaled)$/);
      }
    }
  });
});

/** One step of the curl block: a command as written, with the comment lines above it. */
interface Command {
  comment: string;
  text: string;
}

/** The block's commands, one a line (`\`-continued lines joined), each with the comment above it. */
function commandsOf(code: string): Command[] {
  const commands: Command[] = [];
  let comment = '';
  const lines = code.replace(/\\\n\s*/g, '').split('\n');
  for (const line of lines) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      comment = line.slice(1).trim();
      continue;
    }
    commands.push({ comment, text: line });
  }
  return commands;
}

/** A bash process that runs one command at a time and keeps its variables between them. */
class BashSession {
  private readonly child: ChildProcessWithoutNullStreams;
  private stdout = '';
  private readonly marker = `@@done-${randomBytes(6).toString('hex')}`;
  stderr = '';

  constructor(env: Record<string, string>) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd: repoRoot, env });
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => (this.stdout += chunk));
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
  }

  /** Runs `command`; its standard output and exit code, or a failure after `timeoutMs`. */
  async run(command: string, timeoutMs = 30_000): Promise<{ output: string; exitCode: number }> {
    this.stdout = '';
    this.child.stdin.write(`${command}\nprintf '\\n${this.marker} %s\\n' "$?"\n`);
    const done = new RegExp(`\\n${this.marker} (\\d+)\\n`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = done.exec(this.stdout);
      if (match) return { output: this.stdout.slice(0, match.index), exitCode: Number(match[1]) };
      assert.ok(this.child.exitCode === null, `bash exited during: ${command}\n${this.stderr}`);
      assert.ok(Date.now() < deadline, `no end of "${command}" in ${timeoutMs} ms: ${this.stdout}\n${this.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close() {
    this.child.stdin.end();
    this.child.kill();
  }
}

/** What curl printed: the body, and the status the curlrc's write-out adds after it. */
function curlAnswer(output: string): { status: number; body: any } {
  const match = /\n@@status (\d{3})\n?$/.exec(output);
  assert.ok(match, `curl printed its status: ${output}`);
  const text = output.slice(0, match.index);
  return { status: Number(match[1]), body: text === '' ? '' : JSON.parse(text) };
}

/** Waits, for at most `timeoutMs`, until `check` answers something. */
async function poll<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    assert.ok(Date.now() < deadline, `${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The status of a customer-facing call, the one the store gate answers 503 to while paused. */
async function gateStatus(service: ServiceProcess): Promise<number> {
  const reply = await fetch(`${service.url}/api/v1/csrf-cookie`, { signal: AbortSignal.timeout(5_000) });
  await reply.arrayBuffer();
  return reply.status;
}

describe('the "Try it with curl" block, run with bash and curl against the service', () => {
  /** The verification code line the service printed, as the quick start shows one. */
  let printedLine: string | undefined;

  test('answers as its comments say, step by step', { timeout: 180_000 }, async (context) => {
    const curl = spawnSync('curl', ['--version'], { encoding: 'utf8' });
    assert.equal(curl.status, 0, 'curl is installed (apt-get install curl)');

    const block = blockUnder('Try it with curl', 'sh');
    const commands = commandsOf(block.code);
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-readme-curl-'));
    // curl reads $CURL_HOME/.curlrc: it adds each answer's status after its body (the block's
    // requests are unchanged) and bounds each call.
    fs.writeFileSync(path.join(folder, '.curlrc'), 'write-out = "\\n@@status %{http_code}\\n"\nmax-time = 20\n');
    const backend = await serviceBackend('readme_curl');
    let service: ServiceProcess | undefined;
    let bash: BashSession | undefined;
    try {
      service = await startService({ ...backend.env });
      let messages = '';
      service.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (messages += chunk));
      const port = new URL(service.url).port;
      bash = new BashSession({
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? folder,
        TMPDIR: folder,
        CURL_HOME: folder,
        PORT: port,
        // The command line runs against the service's own database.
        ...backend.env,
      });
      const session = bash;
      const running = service;

      /** The code in the newest line ">>> ada@example.com: NNNNNN is your … <purpose> code" after `from`. */
      const codeLine = (purpose: string, from: number) =>
        poll(`a ${purpose} code for ada@example.com on the service's stderr`, () => {
          const lines = [...messages.slice(from).matchAll(/^ {2}>>> ada@example\.com: (\d{6}) is your .+$/gm)];
          const line = lines.filter((found) => found[0].endsWith(` ${purpose} code`)).at(-1);
          return line === undefined ? undefined : { line: line[0], code: line[1]! };
        });

      let step = 0;
      const next = (pattern: RegExp): Command => {
        const command = commands[step++];
        assert.ok(command, `the block has a step matching ${pattern}`);
        assert.match(command.text, pattern, `step ${step} of the block`);
        return command;
      };
      const run = async (text: string) => {
        const result = await session.run(text);
        assert.equal(result.exitCode, 0, `${text}: exit ${result.exitCode}\n${result.output}\n${session.stderr}`);
        return result.output;
      };
      const call = async (text: string) => curlAnswer(await run(text));

      await run(next(/^B=http:\/\/127\.0\.0\.1:\$\{PORT:-3000\}\/api\/v1\/customer\/auth$/).text);
      await run(next(/^J=/).text);
      await run(next(/^JAR=\$\(mktemp\)$/).text);
      const jar = (await run('printf %s "$JAR"')).trim();
      assert.equal(path.dirname(jar), folder, 'the jar is a temporary file outside the repository');

      let seen = messages.length;
      const register = next(/\$B\/register /);
      assert.match(register.comment, /201 with the customer, its identity.verified_at null/);
      const registered = await call(register.text);
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      assert.equal(registered.body.name, 'Ada');
      assert.deepEqual(registered.body.identity, { type: 'email', value: 'ada@example.com', verified_at: null });

      const verify = next(/\$B\/verify .*"code":"123456"/);
      const verification = await codeLine('verification', seen);
      printedLine = verification.line;
      // The comment quotes the line the service prints, with a made-up code.
      assert.ok(
        verify.comment.includes(`"${verification.line.trim().replace(verification.code, '123456')}"`),
        `the comment quotes the real line: ${verification.line}`,
      );
      const verified = await call(verify.text.replace('"code":"123456"', `"code":"${verification.code}"`));
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      assert.equal(verified.body.id, registered.body.id);
      assert.match(String(verified.body.identity.verified_at), /^\d{4}-\d\d-\d\dT/, 'verified');

      const login = next(/^curl -s -c "\$JAR" \$B\/login /);
      const signedIn = await call(login.text);
      assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
      assert.ok(!/token/i.test(JSON.stringify(signedIn.body)), 'no token in the body');
      const cookies = fs.readFileSync(jar, 'utf8');
      assert.match(cookies, /^#HttpOnly_127\.0\.0\.1\t/m, `the answer set the session cookie: ${cookies}`);

      const who = next(/^curl -s -b "\$JAR" \$B\/session$/);
      const me = await call(who.text);
      assert.equal(me.status, 200, JSON.stringify(me.body));
      assert.equal(me.body.auth_type, 'session');
      assert.equal(me.body.customer.name, 'Ada');
      // The comment's other half, with the same command less the cookie (a check of this test's).
      const anonymous = await call(who.text.replace(' -b "$JAR"', ''));
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.body.code, 'unauthenticated');

      const logout = next(/^curl -s -b "\$JAR" -X POST \$B\/logout$/);
      const signedOut = await call(logout.text);
      assert.equal(signedOut.status, 200, JSON.stringify(signedOut.body));
      assert.deepEqual(signedOut.body, { status: 'signed_out' });
      const again = await call(logout.text);
      assert.equal(again.status, 401, 'a second time');
      assert.equal(again.body.code, 'unauthenticated');

      seen = messages.length;
      const forgot = next(/\$B\/password\/forgot /);
      const forgotten = await call(forgot.text);
      assert.equal(forgotten.status, 202, JSON.stringify(forgotten.body));

      const reset = next(/\$B\/password\/reset .*"code":"654321"/);
      const resetCode = await codeLine('password reset', seen);
      const wasReset = await call(reset.text.replace('"code":"654321"', `"code":"${resetCode.code}"`));
      assert.equal(wasReset.status, 200, JSON.stringify(wasReset.body));
      assert.equal(wasReset.body.status, 'password_reset');

      const pause = next(/^npm run cli -- store set --status paused$/);
      assert.match(pause.comment, /503 store_unavailable within 2 s/);
      await run(pause.text);
      const pausedAt = Date.now();
      // The gate reads the store through a short cache: wait for the change with a cheap call
      // (the comment's "within 2 s", with room for a loaded machine), then run the block's login.
      await poll('the store gate answers 503', async () => ((await gateStatus(running)) === 503 ? true : undefined));
      const pauseSeenMs = Date.now() - pausedAt;
      const refused = await call(next(/\$B\/login .*"password":"new secret 77x"/).text);
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.equal(refused.body.code, 'store_unavailable');

      await run(next(/^npm run cli -- store set --status active$/).text);
      await poll('the store gate answers again', async () => ((await gateStatus(running)) === 204 ? true : undefined));

      for (const probe of ['platform', 'health/live', 'health/ready']) {
        const escaped = probe.replace('/', '\\/');
        const text = next(new RegExp(`^curl -s http://127\\.0\\.0\\.1:\\$\\{PORT:-3000\\}/api/v1/${escaped}$`)).text;
        const answer = await call(text);
        assert.equal(answer.status, 200, `${probe}: ${JSON.stringify(answer.body)}`);
      }

      await run(next(/^rm -f "\$JAR"$/).text);
      assert.ok(!fs.existsSync(jar), 'the jar is removed');
      assert.equal(step, commands.length, 'every command of the block ran');
      context.diagnostic(`the store gate saw the pause after ${pauseSeenMs} ms`);
      assert.equal(await running.stop(), 0, 'the service stops cleanly');
    } finally {
      bash?.close();
      await service?.stop();
      await backend.remove();
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  test('the quick start quotes the code line as the service printed it in the run above', () => {
    const example = blocks.find((block) => block.lang === '' && block.heading === 'Five-minute quick start');
    assert.ok(example, 'the quick start shows the code line');
    assert.ok(printedLine !== undefined, 'the curl run saw a verification code line');
    const line = printedLine.replace('ada@example.com', 'you@example.com').replace(/\d{6}/, '123456');
    assert.equal(example.code, `${line}\n`);
  });
});

describe('the typed client block', () => {
  const harness = useHarness();
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-readme-client-'));
  after(() => fs.rmSync(folder, { recursive: true, force: true }));
  const client = path.join(repoRoot, 'packages/client/src/index.js');

  /** The block as written, its import pointed at the client's source (the package is not installed here). */
  function clientBlock(baseUrl = 'http://127.0.0.1:3000'): string {
    const code = blockUnder('A typed client', 'ts').code;
    assert.ok(code.includes("from '@storefront-auth/client'"));
    assert.ok(code.includes("baseUrl: 'http://127.0.0.1:3000'"));
    return code
      .replace("'@storefront-auth/client'", JSON.stringify(client))
      .replace("baseUrl: 'http://127.0.0.1:3000'", `baseUrl: ${JSON.stringify(baseUrl)}`);
  }

  test('type-checks (strict)', { timeout: 60_000 }, () => {
    const file = path.join(folder, 'typecheck.mts');
    fs.writeFileSync(file, clientBlock());
    try {
      const program = ts.createProgram([file], {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
        types: [],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
      });
      const problems = ts
        .getPreEmitDiagnostics(program)
        .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      assert.deepEqual(problems, []);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  test('runs: registers Ada, signs in, changes the name, signs out', { timeout: 60_000 }, async () => {
    const t = await harness.start({ clockAt: Date.now() });
    const file = path.join(folder, 'run.mts');
    try {
      const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
      fs.writeFileSync(file, clientBlock(address));
      const child = spawn(process.execPath, ['--import', 'tsx', file], {
        cwd: repoRoot,
        env: { PATH: process.env['PATH'] ?? '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      let errors = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
      const timer = setTimeout(() => child.kill(), 45_000);
      const exitCode = await new Promise((resolve) => child.once('close', resolve));
      clearTimeout(timer);
      assert.equal(exitCode, 0, errors);
      assert.equal(output, 'Ada\n', 'signed in with a session, and no StorefrontAuthError printed');
      const rows = await t.db.query<{ name: string }>('SELECT name FROM customers');
      assert.deepEqual(
        rows.map((row) => row.name),
        ['Ada Lovelace'],
      );
      const [sessions] = await t.db.query<{ count: string }>('SELECT count(*) FROM sessions');
      assert.equal(Number(sessions!.count), 0, 'signed out');
    } finally {
      await t.close();
      fs.rmSync(file, { force: true });
    }
  });
});
