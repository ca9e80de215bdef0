import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Queryable } from './database.js';

/**
 * The data folder of the PGlite-based embedded mode of earlier versions, opened only to read its
 * rows. PGlite is a development dependency, loaded when a folder is opened: a production install
 * (`npm ci --omit=dev`) does not carry it for a command that runs once per deployment.
 */

const pglitePackage = '@electric-sql/pglite';

/** The version range this project's package.json asks for, without the range sign. */
function pgliteVersion(): string {
  const require = createRequire(import.meta.url);
  // package.json sits at the package root, two levels above this file in both src/ and dist/.
  const manifest = require('../../package.json') as { devDependencies?: Record<string, string> };
  return (manifest.devDependencies?.[pglitePackage] ?? 'latest').replace(/^[\^~]/, '');
}

/** Why a folder cannot be read: missing, not a PGlite folder, or PGlite not installed. */
export class LegacyFolderError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LegacyFolderError';
  }
}

export interface LegacyFolder extends Pick<Queryable, 'query'> {
  close(): Promise<void>;
}

interface PgliteModule {
  PGlite: {
    create(options: { dataDir: string }): Promise<{
      query<Row>(sql: string, params?: unknown[]): Promise<{ rows: Row[] }>;
      close(): Promise<void>;
    }>;
  };
}

/** PGlite, or one line telling the operator how to install it. */
export async function loadPglite(): Promise<PgliteModule> {
  try {
    return (await import(pglitePackage)) as PgliteModule;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new LegacyFolderError(
      `reading a PGlite folder needs ${pglitePackage}, which a production install leaves out: run npm install --no-save ${pglitePackage}@${pgliteVersion()} in the service's folder, then this command again`,
      { cause: error },
    );
  }
}

/**
 * Checks what can be checked before PGlite touches the folder: PGlite would create a new database in
 * an empty or missing one, and must never open the folder of a PostgreSQL server.
 */
export function checkLegacyFolder(folder: string): void {
  if (!fs.existsSync(folder)) throw new LegacyFolderError(`${folder} does not exist`);
  if (!fs.statSync(folder).isDirectory()) throw new LegacyFolderError(`${folder} is not a folder`);
  if (!fs.existsSync(path.join(folder, 'PG_VERSION')))
    throw new LegacyFolderError(`${folder} is not a PGlite data folder (it has no PG_VERSION)`);
  // A PostgreSQL server writes postmaster.opts at every start; PGlite never does.
  if (fs.existsSync(path.join(folder, 'postmaster.opts')))
    throw new LegacyFolderError(`${folder} is the folder of a PostgreSQL server, not of PGlite`);
  const holder = earlierServiceHolding(folder);
  if (holder !== undefined)
    throw new LegacyFolderError(`the earlier version still runs on ${folder} (process ${holder}): stop it first`);
}

/**
 * The earlier version held its data folder with a file `lock` beside `pgdata` naming its pid; two
 * processes opening one PGlite folder corrupt it. The pid of a live holder, if any.
 */
function earlierServiceHolding(folder: string): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(path.dirname(folder), 'lock'), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

export interface OpenOptions {
  /** Where the working copy is made: os.tmpdir() (TMPDIR) unless given. */
  scratch?: string;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A copy of `folder` as `pgdata` in a new folder under `scratch`, which it returns; none is left if copying fails. */
async function copyAside(folder: string, scratch: string): Promise<string> {
  let parent: string | undefined;
  try {
    parent = await fs.promises.mkdtemp(path.join(scratch, 'storefront-auth-import-'));
    await fs.promises.cp(folder, path.join(parent, 'pgdata'), { recursive: true });
    return parent;
  } catch (error) {
    if (parent !== undefined) await fs.promises.rm(parent, { recursive: true, force: true });
    throw new LegacyFolderError(
      `could not copy ${folder} into ${scratch} to read it (${reasonOf(error)}); TMPDIR chooses where the copy goes`,
      { cause: error },
    );
  }
}

/**
 * Opens a PGlite folder of an earlier version for reading; the caller only runs SELECTs on it.
 * PGlite writes to any folder it opens, even to answer only SELECTs (its control file, its WAL, its
 * catalog caches), so it opens a copy made in `scratch`: the earlier version's folder stays exactly
 * as it was, to go back to. Closing removes the copy; so does a failure to open it.
 */
export async function openLegacyFolder(
  folder: string,
  { scratch = os.tmpdir() }: OpenOptions = {},
): Promise<LegacyFolder> {
  checkLegacyFolder(folder);
  const { PGlite } = await loadPglite();
  const copyParent = await copyAside(folder, scratch);
  const removeCopy = () => fs.promises.rm(copyParent, { recursive: true, force: true });
  let pg: Awaited<ReturnType<PgliteModule['PGlite']['create']>>;
  try {
    pg = await PGlite.create({ dataDir: path.join(copyParent, 'pgdata') });
  } catch (error) {
    await removeCopy();
    throw new LegacyFolderError(`PGlite could not open ${folder} (${reasonOf(error)})`, { cause: error });
  }
  return {
    async query<Row>(sql: string, params: readonly unknown[] = []) {
      return (await pg.query<Row>(sql, [...params])).rows;
    },
    async close() {
      try {
        await pg.close();
      } finally {
        await removeCopy();
      }
    },
  };
}
