import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/services.js';
import { LegacyDataFolderError, startEmbeddedPostgres } from '../../src/storage/embedded-postgres.js';
import { repoRoot } from '../helpers/service-process.js';

const slow = { timeout: 180_000 };
const folders: string[] = [];
after(() => {
  for (const folder of folders) fs.rmSync(folder, { recursive: true, force: true });
});

/** What `mktemp -d` makes: a folder its creator owns with mode 0700. */
function freshFolder(): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-emb-'));
  folders.push(folder);
  return folder;
}

async function query(url: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Array<Record<string, unknown>>;
  } finally {
    await client.end();
  }
}

function runCli(args: string[], env: Record<string, string>, asUser?: string) {
  const node = [process.execPath, '--import', 'tsx', path.join(repoRoot, 'src/cli/main.ts'), ...args];
  const command = asUser === undefined ? node : ['runuser', '-u', asUser, '--', ...node];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
}

const root = process.getuid?.() === 0;

describe('the embedded PostgreSQL server', () => {
  test(
    'the first start creates the server folder; a restart keeps the rows; it listens on its socket only, with fsync on',
    slow,
    async () => {
      const dataDir = freshFolder();
      const first = await startEmbeddedPostgres(dataDir);
      try {
        await query(first.url, 'CREATE TABLE kept (word text); INSERT INTO kept VALUES ($$still here$$)');
      } finally {
        await first.stop();
      }
      assert.equal(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), false, 'stopped cleanly');

      const logged: Array<{ level: string; message: string }> = [];
      const log = {
        info: () => {},
        warn: (_fields: object, message: string) => logged.push({ level: 'warn', message }),
        error: (_fields: object, message: string) => logged.push({ level: 'error', message }),
      };
      const again = await startEmbeddedPostgres(dataDir, { log });
      try {
        await query(again.url, `DO $$ BEGIN RAISE WARNING 'a warning from the server'; END $$`);
        await query(again.url, 'CREATE TABLE unique_words (word text UNIQUE)');
        await query(again.url, `INSERT INTO unique_words VALUES ('private@example.com')`);
        await assert.rejects(query(again.url, `INSERT INTO unique_words VALUES ('private@example.com')`));
        // The server writes its log as it goes; the closing stop below flushes it.
        assert.deepEqual(await query(again.url, 'SELECT word FROM kept'), [{ word: 'still here' }]);
        const settings = Object.fromEntries(
          (
            await query(
              again.url,
              `SELECT name, setting FROM pg_settings WHERE name IN
                 ('listen_addresses', 'fsync', 'synchronous_commit', 'shared_buffers', 'max_connections', 'unix_socket_permissions',
                  'io_method', 'max_logical_replication_workers')`,
            )
          ).map((row) => [row['name'], row['setting']]),
        );
        assert.deepEqual(settings, {
          listen_addresses: '',
          fsync: 'on',
          synchronous_commit: 'on',
          shared_buffers: '4096', // 8 kB pages: 32 MB
          max_connections: '30',
          unix_socket_permissions: '0700',
          io_method: 'sync',
          max_logical_replication_workers: '0',
        });
        // A small shop's server: no I/O workers and no replication launcher beside the backends.
        const kinds = await query(again.url, 'SELECT DISTINCT backend_type FROM pg_stat_activity ORDER BY 1');
        assert.ok(
          kinds.every((row) => !['io worker', 'logical replication launcher'].includes(String(row['backend_type']))),
          JSON.stringify(kinds),
        );
        const hba = await query(again.url, 'SELECT type, auth_method FROM pg_hba_file_rules ORDER BY rule_number');
        assert.ok(hba.every((rule) => rule['type'] === 'local' || rule['auth_method'] === 'reject'));
      } finally {
        await again.stop();
      }
      assert.ok(
        logged.some((line) => line.level === 'warn' && line.message.includes('a warning from the server')),
        'server warnings reach the service log',
      );
      assert.ok(logged.some((line) => line.level === 'warn' && /duplicate key/.test(line.message)));
      assert.ok(
        logged.every((line) => !line.message.includes('private@example.com')),
        'no row value reaches the service log',
      );
    },
  );

  test(
    'run as root, the server runs as the postgres account, and the secret and server folder stay private',
    { ...slow, skip: root ? false : 'needs root' },
    async () => {
      const dataDir = freshFolder();
      assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700);
      const result = await runCli(['store', 'show'], { DATA_DIR: dataDir });
      assert.equal(result.code, 0, result.stderr);
      const postgresUid = fs.statSync(path.join(dataDir, 'postgres')).uid;
      assert.notEqual(postgresUid, 0, 'the server folder belongs to an unprivileged account');
      assert.equal(fs.statSync(path.join(dataDir, 'postgres')).mode & 0o777, 0o700);
      assert.equal(fs.statSync(dataDir).mode & 0o777, 0o701, 'others may only pass through DATA_DIR');
      const secret = fs.statSync(path.join(dataDir, 'secret'));
      assert.equal(secret.uid, 0);
      assert.equal(secret.mode & 0o777, 0o600);
    },
  );

  test(
    'run as a normal user, the server runs as that user in its own folder',
    { ...slow, skip: root ? false : 'runs the command as the postgres account, which needs root' },
    async () => {
      const dataDir = freshFolder();
      const account = 'postgres'; // an unprivileged account these machines have
      const uid = Number(await idOf(account, '-u'));
      const gid = Number(await idOf(account, '-g'));
      fs.chownSync(dataDir, uid, gid);
      const result = await runCli(['store', 'show'], { DATA_DIR: dataDir, HOME: dataDir }, account);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(JSON.parse(result.stdout).status, 'active');
      assert.equal(fs.statSync(path.join(dataDir, 'postgres')).uid, uid);
      assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700, 'DATA_DIR is left as it was');
    },
  );

  test(
    'a data folder of the earlier PGlite format is refused with what was found and how to move it',
    slow,
    async () => {
      const dataDir = freshFolder();
      fs.mkdirSync(path.join(dataDir, 'pgdata'));
      fs.writeFileSync(path.join(dataDir, 'pgdata', 'PG_VERSION'), '17\n');
      await assert.rejects(startEmbeddedPostgres(dataDir), LegacyDataFolderError);
      const result = await runCli(['serve'], { DATA_DIR: dataDir, PORT: '0' });
      assert.equal(result.code, 1);
      const lines = result.stderr.trim().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0]!, /PGlite database from an earlier version/);
      assert.match(lines[0]!, /run storefront-auth import .*pgdata, then move .*pgdata out of DATA_DIR$/);
      assert.equal(fs.existsSync(path.join(dataDir, 'postgres')), false, 'nothing new was made');
    },
  );

  test(
    'a DATABASE_POOL_SIZE above the default gives the server 20 slots more than the pool, and the whole pool connects at once',
    slow,
    async () => {
      const dataDir = freshFolder();
      const opened = await openDatabase(loadConfig({ DATA_DIR: dataDir, DATABASE_POOL_SIZE: '40' }));
      try {
        const [row] = await opened.db.query<{ max_connections: string }>('SHOW max_connections');
        assert.equal(row!.max_connections, '60');
        // With the default 30 slots, 40 connections at once would be refused ("too many clients").
        const pids = await Promise.all(
          Array.from({ length: 40 }, () =>
            opened.db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.2)'),
          ),
        );
        assert.equal(new Set(pids.map(([answer]) => answer!.pid)).size, 40);
      } finally {
        await opened.release();
      }
    },
  );

  test('a DATA_DIR too long for the server socket is a configuration error naming DATA_DIR', () => {
    const dataDir = `/tmp/${'d'.repeat(90)}`;
    assert.throws(
      () => loadConfig({ DATA_DIR: dataDir }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'DATA_DIR',
    );
    assert.doesNotThrow(() =>
      loadConfig({ DATA_DIR: dataDir, DATABASE_URL: 'postgres://db/x', APP_SECRET: 'x'.repeat(32) }),
    );
  });
});

function idOf(account: string, flag: '-u' | '-g'): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('id', [flag, account], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.once('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`id ${flag} ${account}`))));
  });
}
