import { Writable } from 'node:stream';
import { pino } from 'pino';

/** A pino logger at `info` whose JSON lines are kept, parsed, in `lines`. */
export function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}
