import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cliEntry = path.join(repoRoot, 'src/cli/main.ts');

export interface ServiceProcess {
  url: string;
  /** The admin listener's URL, when ADMIN_TOKENS or INTROSPECTION_TOKENS started one. */
  adminUrl: string | undefined;
  child: ChildProcess;
  /** Every JSON log line so far. */
  logs: Array<Record<string, unknown>>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export interface SpawnOptions {
  /** Leads a process group of its own (to be killed as a group). */
  detached?: boolean;
  /** A command the service runs under, such as `unshare …`. */
  wrapper?: string[];
}

/** Runs `storefront-auth` from source in a child process, with only the given environment. */
export function runCli(
  args: string[],
  env: Record<string, string>,
  { detached = false, wrapper = [] }: SpawnOptions = {},
) {
  const command = [...wrapper, process.execPath, '--import', 'tsx', cliEntry, ...args];
  return spawn(command[0]!, command.slice(1), {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
}

/** Starts `storefront-auth serve` on a free port and resolves once it listens. */
export function startService(
  env: Record<string, string>,
  timeoutMs = 60_000,
  options: SpawnOptions = {},
): Promise<ServiceProcess> {
  // No load balancer to wait for unless a test asks for one.
  const child = runCli(['serve'], { PORT: '0', SHUTDOWN_DELAY_SECONDS: '0', ...env }, options);
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start in ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening: ${stderr}`));
    });
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(entry);
      if (typeof entry['address'] === 'string' && String(entry['msg']).startsWith('Storefront Auth listening')) {
        clearTimeout(timer);
        resolve({
          url: entry['address'] as string,
          adminUrl: typeof entry['admin'] === 'string' ? entry['admin'] : undefined,
          child,
          logs,
          async stop() {
            if (child.exitCode === null) child.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
  });
}

/** Runs a `storefront-auth` command to its end and asserts that it succeeded; its standard output. */
export async function runCliOk(args: string[], env: Record<string, string>): Promise<string> {
  const child = runCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, `storefront-auth ${args.join(' ')}: ${stderr}`);
  return stdout;
}

/**
 * Pauses or opens the store of the service on the backend in `env` with the command line, as an
 * operator would, and resolves once the service answers accordingly.
 */
export async function setStoreStatus(
  service: ServiceProcess,
  env: Record<string, string>,
  status: 'paused' | 'active',
) {
  await runCliOk(['store', 'set', '--status', status], env);
  // The store gate reads the store row through a short cache of its own (readiness reads it
  // afresh, so it can report the change earlier): ask a customer-facing call until it agrees.
  const expected = status === 'active' ? 204 : 503;
  const deadline = Date.now() + 15_000;
  for (;;) {
    const reply = await fetch(`${service.url}/api/v1/csrf-cookie`);
    await reply.arrayBuffer();
    if (reply.status === expected) return;
    assert.ok(Date.now() < deadline, `the service did not see the store ${status} in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
