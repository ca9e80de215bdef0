import { spawn, type ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { repoRoot } from './service-process.js';

/** Temporary data folders for one test file, removed together at its end. */
export function tempFolders(prefix: string) {
  const made: string[] = [];
  return {
    fresh(): string {
      const folder = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      made.push(folder);
      return folder;
    },
    removeAll(): void {
      for (const folder of made) fs.rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** A clean environment: nothing from the test runner leaks into the child. */
export function cliEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? '',
    DATA_DIR: dataDir,
    PORT: '0',
    SHUTDOWN_DELAY_SECONDS: '0', // no load balancer to wait for
    ...extra,
  };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `storefront-auth …` from source, with exactly the given environment. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs one command to its end. */
export function runCommand(args: string[], env: NodeJS.ProcessEnv): Promise<Finished> {
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

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
