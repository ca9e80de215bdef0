import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * The embedded server's folder inside DATA_DIR: the account that runs the server, the folder's
 * owner and modes, and which process (if any) runs a server on it now.
 */

/** The unprivileged account a server started by root runs as. */
const serverAccountName = 'postgres';
const stopTimeoutMs = 60_000;
export const pollIntervalMs = 25;

/** Where the server's files live inside DATA_DIR; its socket is there too. */
export const serverFolderName = 'postgres';
/** PostgreSQL builds the socket file name from the port; with no TCP listener it is only a name. */
const socketFileName = '.s.PGSQL.5432';
/** sun_path holds 108 bytes including the final NUL. */
export const maxSocketPathBytes = 107;

export function serverFolder(dataDir: string): string {
  return path.join(dataDir, serverFolderName);
}

export function socketPath(dataDir: string): string {
  return path.join(serverFolder(dataDir), socketFileName);
}

export interface Account {
  name: string;
  uid: number;
  gid: number;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function findAccount(name: string): Account | undefined {
  let passwd: string;
  try {
    passwd = fs.readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) return { name, uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

/**
 * PostgreSQL refuses to run as root. Then the server runs as the unprivileged `postgres` account,
 * made here (a system account without a home or login shell) when the system has none.
 */
export async function serverAccount(): Promise<Account | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const existing = findAccount(serverAccountName);
  if (existing !== undefined) return existing;
  try {
    await promisify(execFile)('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      serverAccountName,
    ]);
  } catch (error) {
    throw new Error(
      'PostgreSQL cannot run as root, and no "postgres" account exists or could be made: create one, or run the service as a normal user',
      { cause: error },
    );
  }
  const made = findAccount(serverAccountName);
  if (made === undefined) throw new Error('the "postgres" account was made but cannot be found');
  return made;
}

function chownTree(target: string, { uid, gid }: Account): void {
  fs.lchownSync(target, uid, gid);
  if (!fs.lstatSync(target).isDirectory()) return;
  for (const entry of fs.readdirSync(target)) chownTree(path.join(target, entry), { name: '', uid, gid });
}

/**
 * DATA_DIR stays the service's own. When the server runs as another account it needs to pass
 * through DATA_DIR to its folder, so DATA_DIR gets the search bit for others (0701 from 0700): they can
 * reach an entry whose name they know, but not list the folder or read the 0600 secret, and the
 * server folder itself is 0700.
 */
export function prepareFolders(dataDir: string, account: Account | undefined): void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const folder = serverFolder(dataDir);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  if (account === undefined) return;
  const mode = fs.statSync(dataDir).mode & 0o7777;
  if ((mode & 0o001) === 0) fs.chmodSync(dataDir, mode | 0o001);
  if (fs.statSync(folder).uid !== account.uid) chownTree(folder, account);
}

export function readPidFile(folder: string): string[] | undefined {
  try {
    return fs.readFileSync(path.join(folder, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
}

/**
 * The postmaster that postmaster.pid names, if it still runs on this folder. After a crash the pid
 * may belong to another process: in a fresh pid namespace (a restarted container) small pids come
 * back at once, often as threads of this very service, and PostgreSQL would then refuse to start
 * ("lock file already exists"). A PostgreSQL process works in its data folder, so a pid whose
 * working folder is elsewhere marks the file stale, and it is removed, with the socket's lock.
 */
export function runningServer(folder: string): number | undefined {
  const pid = Number(readPidFile(folder)?.[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) {
    removeStaleLocks(folder);
    return undefined;
  }
  let cwd: string;
  try {
    cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
  } catch (error) {
    // No /proc (macOS): PostgreSQL's own lock file check decides. No right to look (another
    // user's process): it may be a server on this folder, so it counts as one.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return pid;
    return undefined;
  }
  if (cwd === fs.realpathSync(folder)) return pid;
  removeStaleLocks(folder);
  return undefined;
}

/**
 * With no server on the folder, its lock files are leftovers of one that died. The socket's lock
 * (beside the socket, in this folder) names the dead postmaster's pid too,
 * and PostgreSQL refuses to start while that pid is alive, whoever has it now. A server writes
 * postmaster.pid before it makes its socket, so no starting server can lose its lock here.
 */
function removeStaleLocks(folder: string): void {
  fs.rmSync(path.join(folder, 'postmaster.pid'), { force: true });
  fs.rmSync(path.join(folder, `${socketFileName}.lock`), { force: true });
}

/** The parent of a process, or undefined when it cannot be told. */
function parentOf(pid: number): number | undefined {
  try {
    // The command name in field 2 may hold spaces and parentheses; fields after the last ')' do not.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * A server still runs on the folder. Its owner is the process that started it when that process
 * lives on as its parent; a server whose owner was killed has been adopted by init (or a
 * subreaper), and is an orphan nobody will stop.
 */
export function ownerOf(serverPid: number): number | undefined {
  const parent = parentOf(serverPid);
  if (parent === undefined || parent <= 1 || !isAlive(parent)) return undefined;
  try {
    // The owner is another node running this service; anything else adopted the orphan.
    return fs.readlinkSync(`/proc/${parent}/exe`) === fs.readlinkSync('/proc/self/exe') ? parent : undefined;
  } catch {
    return parent; // cannot look: assume it is owned rather than stop someone's server
  }
}

export async function waitForExit(pid: number): Promise<void> {
  const deadline = performance.now() + stopTimeoutMs;
  while (isAlive(pid)) {
    if (performance.now() > deadline) throw new Error(`PostgreSQL (process ${pid}) did not stop`);
    await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
  }
}

/** The socket path must fit sun_path; checked in configuration so the error names DATA_DIR. */
export function socketPathFits(dataDir: string): { fits: boolean; bytes: number } {
  const bytes = Buffer.byteLength(socketPath(dataDir));
  return { fits: bytes <= maxSocketPathBytes, bytes };
}
