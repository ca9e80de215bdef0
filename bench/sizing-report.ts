import os from 'node:os';
import type { Mode } from './backends.js';
import { format, type SizingFacts } from './context.js';
import type { Operations } from './operations.js';

/**
 * Figure 10's facts as BENCHMARKS.md's sizing section: a table per mode, and the same figures in
 * one paragraph, the form README.md and docs/running-at-scale.md quote by hand.
 */

export interface ModeSizing {
  mode: Mode;
  facts: SizingFacts;
}

const modeNames: Record<Mode, string> = {
  embedded: 'embedded default',
  production: 'production (PostgreSQL + Redis)',
  scaled: 'behind PgBouncer, on a Redis Cluster',
};

function perRequest(operations: Operations): string {
  const redis =
    operations.redisCommands === undefined
      ? '—'
      : format(operations.redisCommands, operations.redisCommands < 10 ? 1 : 0);
  return `${format(operations.transactions, 1)} | ${format(operations.rowsWritten, 1)} | ${redis}`;
}

export function sizingSection(sizings: ModeSizing[]): string {
  const lines = [
    '## Sizing',
    '',
    `From figure 10 of this run, on ${os.cpus().length} shared cores (argon2id m = 19456 KiB, t = 2, p = 1). Per core means per core of the service process's own CPU, hashing threads included; PostgreSQL and Redis need CPU of their own on top (the embedded server's processes are the service's children and are not counted in it). Operations are per answer, from the servers' counters: the service database's transactions and rows written, and the Redis server's commands (all of that server's clients).`,
    '',
    '| Mode | Logins/s per core | Session checks/s per core | Per login: PostgreSQL transactions | rows written | Redis commands | Per session check: transactions | rows written | Redis commands |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const { mode, facts } of sizings) {
    lines.push(
      `| ${modeNames[mode]} | ${format(facts.loginsPerCore, 1)} (${format(facts.loginsPerSecond, 1)}/s measured) | ${format(facts.sessionReadsPerCore)} (${format(facts.sessionReadsPerSecond)}/s measured) | ${perRequest(facts.perLogin)} | ${perRequest(facts.perSessionRead)} |`,
    );
  }
  lines.push(
    '',
    `${sizingSummary(sizings)} README.md and docs/running-at-scale.md quote these figures: after a run, update them by hand.`,
  );
  return lines.join('\n');
}

function range(values: number[], digits = 0): string {
  const low = Math.min(...values);
  const high = Math.max(...values);
  return format(low, digits) === format(high, digits)
    ? format(low, digits)
    : `${format(low, digits)}–${format(high, digits)}`;
}

/** The figures in brief, each a range over the modes measured. */
function sizingSummary(sizings: ModeSizing[]): string {
  const all = sizings.map((sizing) => sizing.facts);
  const production = sizings.find((sizing) => sizing.mode === 'production')?.facts;
  const operations =
    production === undefined
      ? ''
      : ` In production a login asks PostgreSQL for ${format(production.perLogin.transactions, 1)} transactions and Redis for ${format(production.perLogin.redisCommands ?? Number.NaN, 1)} commands, a session check for ${format(production.perSessionRead.transactions, 1)} and ${format(production.perSessionRead.redisCommands ?? Number.NaN, 1)}.`;
  return `In brief: hashing sets the pace, at about ${range(all.map((facts) => facts.loginsPerCore))} logins a second per core of the service's CPU (${range(all.map((facts) => facts.loginsPerSecond))} measured on the whole machine), and ${range(all.map((facts) => facts.sessionReadsPerCore))} session checks a second per core.${operations}`;
}
