import fs from 'node:fs';
import { insertBreachedHashes } from '../auth/tables/breached-hashes.js';
import type { Queryable } from '../storage/database.js';
import { counted } from './counted.js';

/**
 * `breached load <file>`: the local copy of the breach corpus, for a deployment that cannot reach
 * the range API. The file is the Pwned Passwords SHA-1 download (`HEX40:COUNT` lines), whole or a
 * part of it. It is read a chunk at a time and written a batch per statement, each committed on
 * its own, so a file of hundreds of millions of lines needs no more memory than one batch, and a
 * load that stopped halfway is finished by running it again: hashes already present are skipped.
 */

export interface BreachedLoadSummary {
  file: string;
  /** Hashes read from the file (padding lines of count 0 and blank lines not counted). */
  hashes: number;
  /** Of those, the ones that were not in the table yet. */
  added: number;
}

export class BreachedFileError extends Error {}

/** Hashes per INSERT: about 400 KB of parameters, a few tens of milliseconds of work. */
const batchSize = 10_000;
const liveRedrawMs = 200;
const plainLineMs = 10_000;

const hashLine = /^([0-9A-Fa-f]{40})(?::(\d+))?$/;

export async function loadBreachedFile(
  db: Pick<Queryable, 'query'>,
  file: string,
  stream: NodeJS.WriteStream = process.stderr,
): Promise<BreachedLoadSummary> {
  if (!fs.existsSync(file)) throw new BreachedFileError(`${file}: no such file`);
  const size = fs.statSync(file).size;
  const input = fs.createReadStream(file, { encoding: 'latin1' });
  const progress = progressLine(stream, size, () => input.bytesRead);
  let lineNumber = 0;
  let hashes = 0;
  let added = 0;
  let batch: string[] = [];
  const flush = async () => {
    added += await insertBreachedHashes(db, batch);
    batch = [];
    progress.update(hashes);
  };
  const take = (line: string) => {
    lineNumber += 1;
    const trimmed = line.trim();
    if (trimmed === '') return;
    const match = hashLine.exec(trimmed);
    if (match === null) {
      throw new BreachedFileError(
        `${file}: line ${lineNumber} is not HEX40:COUNT (the SHA-1 download of Pwned Passwords); ${counted(added, 'hash', 'hashes')} added before it stay`,
      );
    }
    // Count 0 marks padding in a range answer, never a breach.
    if (match[2] !== undefined && Number(match[2]) === 0) return;
    batch.push((match[1] as string).toUpperCase());
    hashes += 1;
  };
  // Pulled a chunk at a time: the next chunk is read only once the batch before it is written.
  let rest = '';
  for await (const chunk of input as AsyncIterable<string>) {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      take(line);
      if (batch.length >= batchSize) await flush();
    }
  }
  take(rest);
  await flush();
  progress.end(hashes, added);
  return { file, hashes, added };
}

/** On a terminal a line redrawn with the share of the file read; elsewhere a line every ten seconds. */
function progressLine(stream: NodeJS.WriteStream, size: number, read: () => number) {
  const live = stream.isTTY === true;
  let shownMs = performance.now();
  return {
    update(hashes: number) {
      const nowMs = performance.now();
      if (nowMs - shownMs < (live ? liveRedrawMs : plainLineMs)) return;
      shownMs = nowMs;
      const percent = size > 0 ? Math.min(100, Math.floor((read() / size) * 100)) : 100;
      const text = `storefront-auth: breached load: ${percent}%, ${counted(hashes, 'hash', 'hashes')}`;
      stream.write(live ? `\r\x1b[K${text}` : `${text}\n`);
    },
    end(hashes: number, added: number) {
      stream.write(
        `${live ? '\r\x1b[K' : ''}storefront-auth: breached load: ${counted(hashes, 'hash', 'hashes')} read, ${added} new\n`,
      );
    },
  };
}
