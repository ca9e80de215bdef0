/**
 * `npm run test:pgbouncer`: the suites of `npm test` on PostgreSQL and Redis, with every connection
 * of the code under test going through a PgBouncer in transaction mode that this run starts in front
 * of the server and stops afterwards. Test databases are still made and dropped on the server itself
 * (STOREFRONT_TEST_DIRECT_URL); everything else, spawned services included, uses the pooler.
 *
 *   [DATABASE_URL=postgres://…] [REDIS_URL=redis://…] node --import tsx test/pgbouncer-run.ts [test files…]
 *
 * DATABASE_URL names the server behind the pooler (default: postgres://postgres@127.0.0.1:5432/postgres).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { testDirectUrlVariable } from './helpers/database.js';
import { startPgBouncer, testPoolerAdminVariable } from './helpers/pgbouncer.js';
import { prepareMachine } from './helpers/prerequisites.js';
import { repoRoot } from './helpers/service-process.js';

const upstream = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
// PgBouncer and the servers behind it first; test/run.ts checks what the suites need besides.
const missing = await prepareMachine(['test/pgbouncer-run.ts'], {
  env: { ...process.env, DATABASE_URL: upstream, REDIS_URL: redisUrl },
});
if (missing !== undefined) {
  process.stderr.write(`test/pgbouncer-run.ts: no test was run. ${missing}`);
  process.exit(1);
}
const bouncer = await startPgBouncer({ upstream });
const database = decodeURIComponent(new URL(upstream).pathname.slice(1)) || 'postgres';
process.stdout.write(`PgBouncer (transaction mode) on 127.0.0.1:${bouncer.port} in front of ${upstream}\n`);

const files = process.argv.slice(2);
const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'test/run.ts'), ...files], {
  cwd: repoRoot,
  env: {
    ...process.env,
    DATABASE_URL: bouncer.url(database),
    [testDirectUrlVariable]: upstream,
    [testPoolerAdminVariable]: bouncer.adminUrl,
    REDIS_URL: redisUrl,
  },
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
let code = await new Promise<number>((resolve) =>
  child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 128))),
);

try {
  // Proof the pass went through the pooler: the transactions it carried for the test databases.
  const stats = await bouncer.admin<{ database: string; total_xact_count: string }>('SHOW STATS');
  const served = stats.filter((row) => row.database.startsWith('sfa_test'));
  const transactions = served.reduce((sum, row) => sum + Number(row.total_xact_count), 0);
  process.stdout.write(`PgBouncer carried ${transactions} transactions for ${served.length} test databases\n`);
  // Every suite ran (no files named): suites on test databases ran, so the pooler must have seen them.
  if (files.length === 0 && transactions === 0) {
    process.stderr.write('no test database was reached through PgBouncer: the pass bypassed the pooler\n');
    code ||= 1;
  }
} finally {
  await bouncer.stop();
}
process.exitCode = code;
