import { Writable } from 'node:stream';
import type { LogLevel } from '../../src/config.js';
import { createLogger } from '../../src/services.js';

/** The service's logger (at `info` unless told), its JSON lines kept, parsed, in `lines`. */
export function capturingLogger(level: LogLevel = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level, destination: stream }), lines };
}
