/**
 * Figures 2 and 3's information line: raw argon2id on the service's own hashing threads, no HTTP.
 * Run as a child process: `node --import tsx bench/argon2-baseline.ts hash|verify <seconds> [concurrency]`;
 * prints one JSON line: {"operation","operations","seconds","perSecond"}.
 */
import { Algorithm } from '@node-rs/argon2';
import { sharedHashPool } from '../src/auth/rules/hash-pool.js';
import { productionArgon2 } from '../src/auth/rules/password.js';

const [operation = 'hash', secondsText = '4', concurrencyText = '2'] = process.argv.slice(2);
if (operation !== 'hash' && operation !== 'verify') throw new Error(`unknown operation ${operation}`);
const durationMs = Number(secondsText) * 1000;
const concurrency = Number(concurrencyText);

const options = { algorithm: Algorithm.Argon2id, ...productionArgon2 };
const password = 'bench-Passw0rd-42';
const pool = sharedHashPool();
const stored = await pool.hash(password, options);
// Warm both hashing threads before the clock starts, as the service is warm when measured.
await Promise.all(Array.from({ length: concurrency }, () => pool.verify(stored, password)));

const work = operation === 'hash' ? () => pool.hash(password, options) : () => pool.verify(stored, password);
let operations = 0;
const started = performance.now();
const deadline = started + durationMs;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline) {
      await work();
      operations += 1;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
process.stdout.write(`${JSON.stringify({ operation, operations, seconds, perSecond: operations / seconds })}\n`);
