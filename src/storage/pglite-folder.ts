import fs from 'node:fs';
import { createRequire } from 'node:module';
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

/** Opens a PGlite folder of an earlier version for reading; the caller only runs SELECTs on it. */
export async function openLegacyFolder(folder: string): Promise<LegacyFolder> {
  checkLegacyFolder(folder);
  const { PGlite } = await loadPglite();
  let pg: Awaited<ReturnType<PgliteModule['PGlite']['create']>>;
  try {
    pg = await PGlite.create({ dataDir: folder });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new LegacyFolderError(`PGlite could not open ${folder} (${reason})`, { cause: error });
  }
  return {
    async query<Row>(sql: string, params: readonly unknown[] = []) {
      return (await pg.query<Row>(sql, [...params])).rows;
    },
    close: () => pg.close(),
  };
}
