import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type { TextRow } from './table-copy.js';

/**
 * The backup file: gzip-compressed JSON lines. The first line is the header (BackupHeader); then,
 * per table, a line `{"table": name, "columns": [...]}`, a line per row (an array of its values as
 * PostgreSQL's text, null for NULL, in the order of the columns), and `{"rows": n}`; the last line
 * is `{"complete": true, "tables": {name: rows}}`. A file without that last line was cut short.
 */

export const backupFormat = 'storefront-auth-backup';
export const backupFormatVersion = 1;

export interface BackupHeader {
  format: typeof backupFormat;
  /** How the file is laid out; a reader refuses a layout newer than its own. */
  format_version: number;
  /** The newest migration of the database it was made from: the schema its rows have. */
  schema_version: number;
  migrations: number[];
  made_at: string;
  /** The version of storefront-auth that made it. */
  made_by: string;
  /** Tells whether a deployment has the secret of the one backed up, without revealing it (secretFingerprint). */
  secret_fingerprint: string;
}

/** A file that is not a complete backup this version can read; the message says why. */
export class BackupFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupFileError';
  }
}

/**
 * An HMAC of a fixed text under the deployment secret: equal for equal secrets, and no more help
 * in guessing a secret than the code HMACs the rows already hold.
 */
export function secretFingerprint(secret: string): string {
  return createHmac('sha256', secret).update('storefront-auth:backup-fingerprint').digest('base64url').slice(0, 22);
}

/** fsyncs a file or a folder; its size. */
async function durable(target: string, flags: string): Promise<{ size: number }> {
  const handle = await fs.promises.open(target, flags);
  try {
    await handle.sync();
    return await handle.stat();
  } finally {
    await handle.close();
  }
}

/**
 * Writes a backup into a temporary file beside `file` (mode 0600: it holds password hashes and
 * identities), made durable and renamed into place by `commit`, so a backup cut short by a crash
 * or an error never stands where a complete one is expected.
 */
export class BackupWriter {
  private readonly gzip = zlib.createGzip();
  private readonly written: Promise<void>;

  private constructor(
    private readonly file: string,
    private readonly draft: string,
    private readonly handle: fs.promises.FileHandle,
  ) {
    // The stream closes the file at its end; commit opens it again to make it durable.
    this.written = pipeline(this.gzip, handle.createWriteStream());
    this.written.catch(() => {}); // awaited by commit; a failure before then surfaces there
  }

  static async open(file: string, header: BackupHeader): Promise<BackupWriter> {
    const draft = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}.partial`);
    const handle = await fs.promises.open(draft, 'wx', 0o600);
    const writer = new BackupWriter(file, draft, handle);
    await writer.line(header);
    return writer;
  }

  private async line(...values: unknown[]): Promise<void> {
    const text = values.map((value) => `${JSON.stringify(value)}\n`).join('');
    // A write that failed (a full disk) ends the pipeline without a drain: its error comes instead.
    if (!this.gzip.write(text)) await Promise.race([once(this.gzip, 'drain'), this.written]);
  }

  startTable(table: string, columns: readonly string[]): Promise<void> {
    return this.line({ table, columns });
  }

  writeRows(rows: readonly TextRow[]): Promise<void> {
    return this.line(...rows);
  }

  endTable(rows: number): Promise<void> {
    return this.line({ rows });
  }

  /** Ends the file with its last line, makes it durable and renames it into place; its size in bytes. */
  async commit(tables: Record<string, number>): Promise<number> {
    await this.line({ complete: true, tables });
    this.gzip.end();
    await this.written;
    const { size } = await durable(this.draft, 'r+');
    await fs.promises.rename(this.draft, this.file);
    // The rename is durable once the folder is.
    await durable(path.dirname(this.file), 'r');
    return size;
  }

  /** Removes the temporary file after a failure. */
  async abandon(): Promise<void> {
    this.gzip.destroy();
    await this.written.catch(() => {});
    await this.handle.close().catch(() => {});
    await fs.promises.rm(this.draft, { force: true });
  }
}

/** The lines of a gzip-compressed file, read as they are decompressed. */
async function* lines(file: string): AsyncGenerator<string> {
  const source = fs.createReadStream(file);
  const gunzip = zlib.createGunzip();
  source.on('error', (error) => gunzip.destroy(error));
  source.pipe(gunzip);
  const decoder = new StringDecoder('utf8');
  let rest = '';
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      const parts = (rest + decoder.write(chunk)).split('\n');
      rest = parts.pop()!;
      yield* parts;
    }
  } finally {
    source.destroy();
    gunzip.destroy();
  }
  rest += decoder.end();
  if (rest !== '') yield rest;
}

/** What a backup holds, table by table; `rows` come in batches. */
export type BackupEvent =
  | { kind: 'table'; table: string; columns: string[] }
  | { kind: 'rows'; rows: TextRow[] }
  | { kind: 'end'; table: string; rows: number };

const isText = (value: unknown) => value === null || typeof value === 'string';
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function readHeader(file: string, line: string | undefined): BackupHeader {
  let header: unknown;
  try {
    header = JSON.parse(line ?? '');
  } catch {
    header = undefined;
  }
  if (!isObject(header) || header['format'] !== backupFormat)
    throw new BackupFileError(`${file} is not a storefront-auth backup`);
  const formatVersion = header['format_version'];
  if (typeof formatVersion !== 'number' || formatVersion > backupFormatVersion)
    throw new BackupFileError(
      `${file} is in backup format ${String(formatVersion)}, which this version cannot read (it reads format ${backupFormatVersion}): restore it with storefront-auth ${String(header['made_by'])} or newer`,
    );
  const migrations = header['migrations'];
  if (
    typeof header['schema_version'] !== 'number' ||
    !Array.isArray(migrations) ||
    !migrations.every((version) => typeof version === 'number') ||
    typeof header['secret_fingerprint'] !== 'string'
  )
    throw new BackupFileError(`${file} is not a storefront-auth backup: its first line is damaged`);
  return header as unknown as BackupHeader;
}

/**
 * Reads a backup: its header at once, then its tables as events. Anything out of place, a
 * decompression error or a missing last line is a BackupFileError that says the file is damaged.
 */
export async function openBackup(
  file: string,
  batchSize = 2_000,
): Promise<{ header: BackupHeader; events: AsyncGenerator<BackupEvent> }> {
  const handle = await fs.promises.open(file, 'r').catch((error: NodeJS.ErrnoException) => {
    throw new BackupFileError(`cannot read ${file}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  });
  try {
    const magic = Buffer.alloc(2);
    await handle.read(magic, 0, 2, 0);
    if (magic[0] !== 0x1f || magic[1] !== 0x8b)
      throw new BackupFileError(`${file} is not a storefront-auth backup (it is not gzip-compressed)`);
  } finally {
    await handle.close();
  }
  const source = lines(file);
  const first = await next(file, source);
  const header = readHeader(file, first);
  return { header, events: tableEvents(file, source, batchSize) };
}

const damaged = (file: string, why: string) =>
  new BackupFileError(`${file} is damaged or incomplete (${why}); nothing was restored`);

async function next(file: string, source: AsyncGenerator<string>): Promise<string | undefined> {
  try {
    const { value, done } = await source.next();
    return done === true ? undefined : value;
  } catch (error) {
    throw damaged(file, (error as Error).message);
  }
}

async function* tableEvents(
  file: string,
  source: AsyncGenerator<string>,
  batchSize: number,
): AsyncGenerator<BackupEvent> {
  const seen: Record<string, number> = {};
  let table: { name: string; columns: number; rows: number } | undefined;
  let batch: TextRow[] = [];
  try {
    for (;;) {
      const line = await next(file, source);
      if (line === undefined) throw damaged(file, 'it ends before its last line: it was cut short');
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw damaged(file, 'a line is not JSON');
      }
      if (Array.isArray(value)) {
        if (table === undefined || value.length !== table.columns || !value.every(isText))
          throw damaged(file, `a row does not fit ${table?.name ?? 'any table'}`);
        batch.push(value as TextRow);
        table.rows += 1;
        if (batch.length >= batchSize) {
          yield { kind: 'rows', rows: batch };
          batch = [];
        }
        continue;
      }
      if (!isObject(value)) throw damaged(file, 'a line is neither a row nor a marker');
      if (table !== undefined) {
        if (value['rows'] !== table.rows) throw damaged(file, `${table.name} does not have the rows it says`);
        if (batch.length > 0) yield { kind: 'rows', rows: batch };
        batch = [];
        seen[table.name] = table.rows;
        yield { kind: 'end', table: table.name, rows: table.rows };
        table = undefined;
        continue;
      }
      if (value['complete'] === true) {
        if (JSON.stringify(value['tables']) !== JSON.stringify(seen))
          throw damaged(file, 'its tables are not those its last line lists');
        if ((await next(file, source)) !== undefined) throw damaged(file, 'lines follow its last line');
        return;
      }
      const columns = value['columns'];
      if (
        typeof value['table'] !== 'string' ||
        seen[value['table']] !== undefined ||
        !Array.isArray(columns) ||
        !columns.every((column) => typeof column === 'string')
      )
        throw damaged(file, 'a table starts without its name and columns');
      table = { name: value['table'], columns: columns.length, rows: 0 };
      yield { kind: 'table', table: table.name, columns: columns as string[] };
    }
  } finally {
    await source.return(undefined);
  }
}
