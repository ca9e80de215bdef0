import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ImportRefusedError, importLegacyFolder } from '../../src/cli/import.js';
import { LegacyFolderError } from '../../src/storage/pglite-folder.js';
import { firstStoreId, loadStore } from '../../src/store/store.js';
import { cliEnv, runCommand, tempFolders, type Finished } from '../helpers/cli.js';
import { testBackends } from '../helpers/database.js';
import { auth, registeredCustomer, useHarness, type TestApp } from '../helpers/harness.js';
import {
  legacyChallengeId,
  legacyCustomers,
  legacySessionId,
  legacyStoreName,
  makeLegacyFolders,
  type LegacyFolders,
} from '../helpers/legacy-folder.js';
import { repoRoot, startService } from '../helpers/service-process.js';

const slow = { timeout: 120_000 };
const folders = tempFolders('sfa-import-');
const appSecret = 'i'.repeat(40);

/** Rows per table of the seeded folder, in the order the import copies them (parents first). */
// The store first: every other table's rows name it (migration 13).
const seededRows = { store: 1, audit_events: 3, customers: 2, challenges: 1, outbox: 2, sessions: 1 };
/** The line the import writes for a copied table: `customers: 2 rows`, `store: 1 row`. */
const copiedLine = (table: string, rows: number) => `${table}: ${rows} ${rows === 1 ? 'row' : 'rows'}`;

async function rowCounts(t: Pick<TestApp, 'db'>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of [...Object.keys(seededRows), 'known_devices', 'passkeys', 'passkey_challenges']) {
    // The earlier version's `store` is `stores` now.
    const [row] = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table === 'store' ? 'stores' : table}`,
    );
    counts[table] = row!.n;
  }
  return counts;
}

/**
 * Every entry under `folder` by its path inside it: a file as the SHA-256 of its content, a folder
 * as "folder". Equal before and after means nothing was written, added or removed.
 */
function contentsOf(folder: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const name of (fs.readdirSync(folder, { recursive: true }) as string[]).sort()) {
    const file = path.join(folder, name);
    entries[name] = fs.statSync(file).isDirectory()
      ? 'folder'
      : createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  }
  return entries;
}

/** The stderr of a command that failed: exactly one line, returned. */
function oneLineError(result: Finished): string {
  assert.equal(result.code, 1, `exit code; stderr: ${result.stderr}`);
  const lines = result.stderr.trim().split('\n');
  assert.equal(lines.length, 1, result.stderr);
  return lines[0]!;
}

describe('storefront-auth import', () => {
  const harness = useHarness();
  let legacy: LegacyFolders;
  /** A copy of the seeded folder of its own for one test. */
  const seededCopy = (parent = folders.fresh()) => {
    const folder = path.join(parent, 'pgdata');
    fs.cpSync(legacy.seeded, folder, { recursive: true });
    return folder;
  };

  before(async () => {
    // The folders' timestamps are those of the harness's clock, which starts at the same instant.
    legacy = await makeLegacyFolders(folders.fresh(), (await harness.start()).clock.now());
  }, slow);
  after(() => folders.removeAll());

  test('copies every table into a store without customers: old passwords and sessions work', slow, async () => {
    const t = await harness.start();
    const lines: string[] = [];
    const summary = await importLegacyFolder(t.db, seededCopy(), (line) => lines.push(line));
    assert.deepEqual(summary.rows, seededRows);
    assert.deepEqual(
      Object.keys(summary.rows),
      Object.keys(seededRows),
      'parents before the tables that reference them',
    );
    assert.deepEqual(summary.source_migrations, [1, 2]);
    assert.equal(summary.messages_attributed, 2, 'both messages name their customer');
    assert.match(lines[0]!, /\(migrations 1, 2\)$/);
    for (const [table, rows] of Object.entries(seededRows)) assert.ok(lines.includes(copiedLine(table, rows)), table);

    // The store row is the earlier version's, its settings included; the import announced the
    // change, and the service reads it from the change feed (as it does every second).
    await t.services.store.refresh();
    const store = await loadStore(t.db, { id: firstStoreId });
    assert.equal(store?.name, legacyStoreName);
    assert.equal(store?.verificationRequired, true);

    // Ada logs in with the password she chose in the earlier version; her old session still opens.
    const { ada, grace } = legacyCustomers;
    const login = await t.post(`${auth}/login`, { identity: ada.email, password: ada.password });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const wrong = await t.post(`${auth}/login`, { identity: ada.email, password: 'not her password' });
    assert.equal(wrong.status, 401);
    const session = await t.get(`${auth}/session`, { cookie: `storefront_session=${legacySessionId}` });
    assert.equal(session.status, 200);
    assert.equal(session.body.customer.id, ada.id);
    // Grace never verified, and the store requires it, as the earlier one did (this configuration's
    // own store would not): her right password fails like a wrong one.
    const unverified = await t.post(`${auth}/login`, { identity: grace.email, password: grace.password });
    assert.equal(unverified.status, 401, JSON.stringify(unverified.body));

    // The columns the earlier version lacked got their defaults or their owners.
    const [customer] = await t.db.query<{ credential_version: number }>(
      'SELECT credential_version FROM customers WHERE id = $1',
      [ada.id],
    );
    assert.equal(customer?.credential_version, 1);
    const owners = await t.db.query<{ id: string; customer_id: string }>(
      'SELECT id::text, customer_id::text FROM outbox WHERE id <= 3 ORDER BY id',
    );
    assert.deepEqual(owners, [
      { id: '1', customer_id: grace.id },
      { id: '3', customer_id: ada.id },
    ]);
    const [code] = await t.db.query<{ customer_id: string }>('SELECT customer_id FROM challenges WHERE id = $1', [
      legacyChallengeId,
    ]);
    assert.equal(code?.customer_id, grace.id);

    // The identity sequences moved past the copied ids: a new customer's message and events fit in.
    await registeredCustomer(t, { email: 'new@example.com' });
    await t.deliver();
    const [ids] = await t.db.query<{ outbox: string; audit: string }>(
      'SELECT (SELECT max(id) FROM outbox)::text AS outbox, (SELECT max(id) FROM audit_events)::text AS audit',
    );
    assert.ok(Number(ids!.outbox) > 3 && Number(ids!.audit) > 3, JSON.stringify(ids));
    const counts = await rowCounts(t);
    assert.equal(counts['customers'], 3);
    assert.ok(counts['audit_events']! > 3);
  });

  test('reads the folder through a copy: not a byte of it changes, and the copy is removed', slow, async () => {
    const t = await harness.start();
    const folder = seededCopy();
    const before = contentsOf(folder);
    assert.ok(Object.keys(before).length > 100, 'a whole PGlite folder');
    const scratch = folders.fresh();
    // The copy exists while the rows are read, so the check that it is gone below means something.
    const copiesWhileReading: number[] = [];
    const report = () => void copiesWhileReading.push(fs.readdirSync(scratch).length);
    const summary = await importLegacyFolder(t.db, folder, report, { scratch });
    assert.deepEqual(summary.rows, seededRows);
    assert.deepEqual(contentsOf(folder), before, 'the folder is as it was');
    assert.ok(copiesWhileReading.length > 0 && copiesWhileReading.every((n) => n === 1), String(copiesWhileReading));
    assert.deepEqual(fs.readdirSync(scratch), [], 'the copy is removed');
  });

  test('a failed import also leaves the folder as it was and removes its copy', slow, async () => {
    const t = await harness.start();
    const scratch = folders.fresh();
    // Refused once the copy is open: a PGlite folder without the tables, then a store with a customer.
    const empty = path.join(folders.fresh(), 'pgdata');
    fs.cpSync(legacy.empty, empty, { recursive: true });
    const emptyBefore = contentsOf(empty);
    await assert.rejects(
      importLegacyFolder(t.db, empty, () => {}, { scratch }),
      /holds no storefront-auth tables/,
    );
    assert.deepEqual(contentsOf(empty), emptyBefore);
    assert.deepEqual(fs.readdirSync(scratch), []);

    // A copy that fails part-way (at a named pipe, which cannot be copied) leaves none of itself.
    const piped = seededCopy();
    execFileSync('mkfifo', [path.join(piped, 'pipe')]);
    await assert.rejects(
      importLegacyFolder(t.db, piped, () => {}, { scratch }),
      (error: unknown) => error instanceof LegacyFolderError && /^could not copy .* to read it/.test(error.message),
    );
    assert.deepEqual(fs.readdirSync(scratch), []);

    await registeredCustomer(t);
    const seeded = seededCopy();
    const seededBefore = contentsOf(seeded);
    await assert.rejects(
      importLegacyFolder(t.db, seeded, () => {}, { scratch }),
      ImportRefusedError,
    );
    assert.deepEqual(contentsOf(seeded), seededBefore);
    assert.deepEqual(fs.readdirSync(scratch), []);
  });

  test('refuses a store that already has a customer, and writes nothing', slow, async () => {
    const t = await harness.start();
    await registeredCustomer(t);
    await t.deliver();
    const before = await rowCounts(t);
    const [storeBefore] = await t.db.query('SELECT * FROM stores');
    await assert.rejects(
      importLegacyFolder(t.db, seededCopy()),
      (error: unknown) =>
        error instanceof ImportRefusedError &&
        /the store already holds 1 customer: import only into a store without customers; nothing was imported/.test(
          error.message,
        ),
    );
    assert.deepEqual(await rowCounts(t), before);
    assert.deepEqual(await t.db.query('SELECT * FROM stores'), [storeBefore]);
  });

  test(
    "a folder that is missing, not PGlite's, still in use or without its tables: one line, nothing started",
    slow,
    async () => {
      const dataDir = folders.fresh();
      const plain = path.join(folders.fresh(), 'plain');
      fs.mkdirSync(plain);
      fs.writeFileSync(path.join(plain, 'notes.txt'), 'not a database');
      const server = path.join(folders.fresh(), 'server');
      fs.cpSync(legacy.empty, server, { recursive: true });
      fs.writeFileSync(path.join(server, 'postmaster.opts'), '/usr/lib/postgresql/18/bin/postgres\n');
      // The earlier version, still running, holds its folder with a lock file naming its live pid.
      const running = seededCopy();
      fs.writeFileSync(path.join(path.dirname(running), 'lock'), String(process.pid));
      const cases: [string, RegExp][] = [
        [
          running,
          new RegExp(`the earlier version still runs on .*pgdata \\(process ${process.pid}\\): stop it first$`),
        ],
        [path.join(dataDir, 'nowhere'), /nowhere does not exist$/],
        [plain, /plain is not a PGlite data folder \(it has no PG_VERSION\)$/],
        [server, /server is the folder of a PostgreSQL server, not of PGlite$/],
      ];
      for (const [folder, message] of cases) {
        const line = oneLineError(await runCommand(['import', folder], cliEnv(dataDir)));
        assert.match(line, /^storefront-auth: /);
        assert.match(line, message);
      }
      assert.deepEqual(fs.readdirSync(plain), ['notes.txt'], 'PGlite made no database in it');
      assert.equal(fs.existsSync(path.join(dataDir, 'postgres')), false, 'no server was started for nothing');

      // A PGlite folder without the earlier version's tables is found once it is open.
      const t = await harness.start();
      const empty = path.join(folders.fresh(), 'pgdata');
      fs.cpSync(legacy.empty, empty, { recursive: true });
      await assert.rejects(
        importLegacyFolder(t.db, empty),
        /pgdata holds no storefront-auth tables \(it has no schema_migrations\)/,
      );
      const [row] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM customers');
      assert.equal(row?.n, 0);
    },
  );

  test('without PGlite installed the command names the npm install to run', slow, async () => {
    const folder = seededCopy();
    // The hook answers the package's resolution as Node does for a package that is not installed.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', './test/helpers/without-pglite.ts', 'src/cli/main.ts', 'import', folder],
      { cwd: repoRoot, env: cliEnv(folders.fresh()), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const finished = await new Promise<Finished>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
    const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
      dependencies: Record<string, string>;
    };
    const version = manifest.devDependencies['@electric-sql/pglite']!.replace(/^\^/, '');
    assert.equal(manifest.dependencies['@electric-sql/pglite'], undefined, 'not a runtime dependency');
    const line = oneLineError(finished);
    assert.ok(line.includes(`run npm install --no-save @electric-sql/pglite@${version} in the service's folder`), line);
  });

  test(
    `from the command line (${testBackends.database}): imports DATA_DIR/pgdata; the service starts once the folder is moved`,
    { timeout: 240_000 },
    async () => {
      const dataDir = folders.fresh();
      const folder = seededCopy(dataDir);
      // Embedded: the store is the server of DATA_DIR itself. Otherwise this file's database.
      const extra: Record<string, string> =
        testBackends.database === 'embedded' ? {} : { DATABASE_URL: harness.databaseUrl, APP_SECRET: appSecret };
      // Against the server, this file's database is emptied first (the earlier tests left customers).
      if (testBackends.database !== 'embedded') await (await harness.start()).close();
      // The working copy goes to TMPDIR, as os.tmpdir() says.
      const scratch = folders.fresh();
      const env = cliEnv(dataDir, extra);
      const importEnv = { ...env, TMPDIR: scratch };

      // Before the import, the service names the command.
      if (testBackends.database === 'embedded') {
        const refused = oneLineError(await runCommand(['store', 'show'], env));
        assert.equal(
          refused,
          `storefront-auth: ${folder} holds a PGlite database from an earlier version, which this version no longer opens: run storefront-auth import ${folder}, then move ${folder} out of DATA_DIR`,
        );
      }

      const before = contentsOf(folder);
      const imported = await runCommand(['import', folder], importEnv);
      assert.equal(imported.code, 0, imported.stderr);
      const summary = JSON.parse(imported.stdout) as { status: string; rows: Record<string, number> };
      assert.equal(summary.status, 'imported');
      assert.deepEqual(summary.rows, seededRows);
      for (const [table, rows] of Object.entries(seededRows))
        assert.ok(imported.stderr.includes(`storefront-auth: ${copiedLine(table, rows)}\n`), imported.stderr);
      assert.ok(fs.existsSync(path.join(folder, 'PG_VERSION')), 'the folder is left where it was');

      // A second run finds the customers already there.
      const again = oneLineError(await runCommand(['import', folder], importEnv));
      assert.match(again, /the store already holds 2 customers/);
      assert.deepEqual(contentsOf(folder), before, 'and as it was');
      // tsx keeps its cache in TMPDIR too: only the import's own copies count.
      const copies = fs.readdirSync(scratch).filter((name) => name.startsWith('storefront-auth-import-'));
      assert.deepEqual(copies, [], 'no copy is left behind');

      fs.renameSync(folder, path.join(folders.fresh(), 'pgdata-imported'));
      const shown = await runCommand(['customer', 'show', legacyCustomers.ada.email], env);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(JSON.parse(shown.stdout).id, legacyCustomers.ada.id);

      const store = await runCommand(['store', 'show'], env);
      assert.equal(JSON.parse(store.stdout).name, legacyStoreName);
      const service = await startService(env as Record<string, string>, 120_000);
      try {
        const reply = await fetch(`${service.url}/api/v1/health/ready`);
        assert.equal(reply.status, 200);
      } finally {
        assert.equal(await service.stop(), 0);
      }
    },
  );
});
