import { counted } from './counted.js';

/** How often a terminal's line is redrawn at most. */
const redrawIntervalMs = 100;

export interface TableProgress {
  /** Rows of `table` so far, of `total` when known. */
  rows(table: string, rows: number, total?: number): void;
  done(table: string, rows: number): void;
  /** A line of its own. */
  say(line: string): void;
}

/**
 * The progress of a command that goes through tables, on standard error: on a terminal a line per
 * table that counts up while its rows go by; elsewhere (a log, a cron mail) a line per table once
 * it is done.
 */
export function tableProgress(stream: NodeJS.WriteStream = process.stderr): TableProgress {
  const live = stream.isTTY === true;
  let drawnAtMs = -Infinity;
  return {
    rows(table, rows, total) {
      const nowMs = performance.now();
      if (!live || nowMs - drawnAtMs < redrawIntervalMs) return;
      drawnAtMs = nowMs;
      stream.write(`\r\x1b[Kstorefront-auth: ${table}: ${total === undefined ? rows : `${rows} of ${total}`} rows`);
    },
    done(table, rows) {
      stream.write(`${live ? '\r\x1b[K' : ''}storefront-auth: ${table}: ${counted(rows, 'row')}\n`);
    },
    say(line) {
      stream.write(`storefront-auth: ${line}\n`);
    },
  };
}
