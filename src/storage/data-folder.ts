import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Two processes opening one PGlite folder corrupt it, so the folder is held by one process at a time. */
export class DataFolderBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`the data folder ${dataDir} is in use by process ${pid}`);
    this.name = 'DataFolderBusyError';
  }
}

export interface DataFolderLock {
  release(): void;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function lockFilePath(dataDir: string): string {
  return path.join(dataDir, 'lock');
}

/** The pid holding the folder, or null when nobody does (a lock left by a dead process counts as free). */
export function lockHolder(dataDir: string): number | null {
  let text: string;
  try {
    text = fs.readFileSync(lockFilePath(dataDir), 'utf8');
  } catch {
    return null;
  }
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}

export function lockDataFolder(dataDir: string): DataFolderLock {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = lockFilePath(dataDir);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      // 'wx' fails when the file exists, so exactly one of two racing processes creates it.
      fs.writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          fs.rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = lockHolder(dataDir);
      if (holder !== null) throw new DataFolderBusyError(dataDir, holder);
      fs.rmSync(file, { force: true }); // left behind by a process that died
    }
  }
  throw new DataFolderBusyError(dataDir, lockHolder(dataDir) ?? 0);
}

/** The deployment secret: the configured one, else one generated into the folder on first start. */
export function loadOrCreateSecret(dataDir: string): string {
  const file = path.join(dataDir, 'secret');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  fs.writeFileSync(file, secret, { mode: 0o600, flag: 'wx' });
  return secret;
}

export function readSecret(dataDir: string): string | null {
  try {
    return fs.readFileSync(path.join(dataDir, 'secret'), 'utf8').trim();
  } catch {
    return null;
  }
}

export function adminSocketPath(dataDir: string): string {
  return path.join(dataDir, 'admin.sock');
}
