import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import pg from 'pg';
import { backupDatabase } from '../../src/cli/backup.js';
import { restoreDatabase } from '../../src/cli/restore.js';
import type { TableProgress } from '../../src/cli/table-progress.js';
import { applyMigrations, migrate, migrations } from '../../src/storage/migrations.js';
import { serverFolder } from '../../src/storage/embedded-postgres-folder.js';
import { runCommand, spawnCli, tempFolders, type Finished } from '../helpers/cli.js';
import { openTestDatabase, testBackends, type TestDatabase } from '../helpers/database.js';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

const slow = { timeout: 180_000 };
const auth = '/api/v1/customer/auth';
const folders = tempFolders('sfa-backup-');
const latest = Math.max(...migrations.map((migration) => migration.version));

const ada = { name: 'Ada', email: 'ada@example.com', password: 'analytical engine 1843' };
const grace = { name: 'Grace', email: 'grace@example.com', password: 'compiler cobol 1959' };
const carol = { name: 'Carol', email: 'carol@example.com', password: 'registered meanwhile 1' };

async function post(base: string, route: string, body: unknown) {
  const response = await fetch(`${base}${auth}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any>, headers: response.headers };
}

/** Registers the customer; their id. */
async function register(base: string, customer: typeof ada): Promise<string> {
  const { name, email, password } = customer;
  const reply = await post(base, '/register', { name, email, password, password_confirmation: password });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body['id'] as string;
}

async function signIn(base: string, customer: typeof ada) {
  return post(base, '/login', { identity: customer.email, password: customer.password });
}

/** The command line's environment for a backend: nothing of the test runner's own. */
const envOf = (backend: ServiceBackend) => ({ PATH: process.env['PATH'] ?? '', ...backend.env });

/** The database a backend's service uses: DATABASE_URL's, or the embedded server's socket in DATA_DIR. */
function databaseUrl(backend: ServiceBackend): string {
  const { DATABASE_URL: url, DATA_DIR: dataDir } = backend.env;
  return url ?? `postgresql://postgres@localhost/storefront?host=${encodeURIComponent(serverFolder(dataDir!))}`;
}

/** The tables of a backend's database; none when its embedded server was never even made. */
async function tablesOf(backend: ServiceBackend): Promise<string[]> {
  const dataDir = backend.env['DATA_DIR'];
  if (dataDir !== undefined && !fs.existsSync(serverFolder(dataDir))) return [];
  const client = new pg.Client({ connectionString: databaseUrl(backend) });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      'SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1',
    );
    return rows.map((row) => row.name);
  } finally {
    await client.end();
  }
}

/** The stderr of a refused command: exit 1 and this one line as its last. */
function refusal(result: Finished): string {
  assert.equal(result.code, 1, `exit code; stdout: ${result.stdout} stderr: ${result.stderr}`);
  assert.equal(result.stdout, '');
  return result.stderr.trim().split('\n').at(-1)!;
}

/** A backup's lines, decompressed; and a file made of edited lines. */
const linesOf = (file: string) => zlib.gunzipSync(fs.readFileSync(file)).toString('utf8').trimEnd().split('\n');
function writeLines(lines: string[]): string {
  const file = path.join(folders.fresh(), 'edited.gz');
  fs.writeFileSync(file, zlib.gzipSync(`${lines.join('\n')}\n`));
  return file;
}

describe(`storefront-auth backup and restore (${testBackends.database})`, () => {
  let source: ServiceBackend;
  let service: ServiceProcess | undefined;
  /** Ada's id and session cookie, made before the backup. */
  let adaId: string;
  let adaCookie: string;
  let backupFile: string;
  let backup: { code: number | null; stderr: string[]; summary: Record<string, any> };
  const made: ServiceBackend[] = [];
  const fresh = async (label: string) => {
    const backend = await serviceBackend(label);
    made.push(backend);
    return backend;
  };

  before(async () => {
    source = await fresh('backup-source');
    service = await startService(source.env, 120_000);
    adaId = await register(service.url, ada);
    await register(service.url, grace);
    const login = await signIn(service.url, ada);
    assert.equal(login.status, 200);
    adaCookie = login.headers.get('set-cookie')!.split(';')[0]!;

    // The backup reads the tables one after another. A lock on idempotency_keys (which no customer
    // call touches, read after customers and before outbox and sessions) holds it there while
    // customers register and sign in; only its snapshot keeps those writes out of every table.
    const lock = new pg.Client({ connectionString: databaseUrl(source) });
    await lock.connect();
    await lock.query(`INSERT INTO breached_hashes (sha1) VALUES (decode(repeat('ab', 20), 'hex'))`);
    await lock.query('BEGIN; LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE');
    backupFile = path.join(folders.fresh(), 'shop.backup.gz');
    const child = spawnCli(['backup', backupFile], envOf(source));
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const stderr: string[] = [];
    const customersSaved = new Promise<void>((resolve, reject) => {
      readline.createInterface({ input: child.stderr }).on('line', (line) => {
        stderr.push(line);
        if (line.startsWith('storefront-auth: customers: ')) resolve();
      });
      child.once('close', () => reject(new Error(`the backup ended early: ${stderr.join('\n')}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    try {
      await customersSaved;
      await register(service.url, carol);
      assert.equal((await signIn(service.url, grace)).status, 200);
    } finally {
      await lock.query('COMMIT');
      await lock.end();
    }
    const code = await exited;
    backup = { code, stderr, summary: code === 0 ? JSON.parse(stdout) : {} };
    assert.equal(await service.stop(), 0);
    service = undefined;
  }, slow);

  after(async () => {
    await service?.stop();
    for (const backend of made) await backend.remove();
    folders.removeAll();
  });

  test('a backup taken while customers register and sign in holds the database of one instant', () => {
    assert.equal(backup.code, 0, backup.stderr.join('\n'));
    const { rows } = backup.summary;
    const order = Object.keys(rows);
    assert.ok(
      order.indexOf('customers') < order.indexOf('idempotency_keys') &&
        order.indexOf('idempotency_keys') < Math.min(order.indexOf('outbox'), order.indexOf('sessions')),
      `the lock held the backup between customers and the tables written meanwhile: ${order.join(', ')}`,
    );
    assert.equal(rows.customers, 2, 'Carol registered after the snapshot');
    assert.equal(rows.sessions, 1, "only Ada's session: Grace signed in after the snapshot");
    assert.equal(rows.outbox, 2, "the two customers' verification messages, not Carol's");
    assert.equal(rows.breached_hashes, undefined, 'the breach corpus is loaded again from its file, not backed up');
    assert.equal(backup.summary.schema_version, latest);
    assert.ok(backup.stderr.includes('storefront-auth: customers: 2 rows'), backup.stderr.join('\n'));
    assert.equal(fs.statSync(backupFile).mode & 0o777, 0o600, 'it holds password hashes: the owner reads it alone');
    assert.deepEqual(fs.readdirSync(path.dirname(backupFile)), ['shop.backup.gz'], 'no temporary file is left');
  });

  test(
    'restored into a fresh data folder, the same customers sign in and the earlier session opens',
    slow,
    async () => {
      const target = await fresh('backup-target');
      // The runbook's step: the deployment secret goes with the backup (APP_SECRET is the same already).
      const [from, to] = [source.env['DATA_DIR'], target.env['DATA_DIR']];
      if (from !== undefined && to !== undefined) fs.copyFileSync(path.join(from, 'secret'), path.join(to, 'secret'));
      const restored = await runCommand(['restore', backupFile], envOf(target));
      assert.equal(restored.code, 0, restored.stderr);
      const summary = JSON.parse(restored.stdout);
      assert.deepEqual(summary.rows, backup.summary.rows);
      assert.deepEqual(summary.migrations_applied, []);
      assert.equal(summary.secret, 'same');

      const restoredService = await startService(target.env, 120_000);
      try {
        for (const customer of [ada, grace]) assert.equal((await signIn(restoredService.url, customer)).status, 200);
        assert.equal((await signIn(restoredService.url, { ...ada, password: 'not her password' })).status, 401);
        assert.equal((await signIn(restoredService.url, carol)).status, 401, 'Carol is not in the backup');
        const session = await fetch(`${restoredService.url}${auth}/session`, { headers: { cookie: adaCookie } });
        assert.equal(session.status, 200);
        assert.equal(((await session.json()) as { customer: { id: string } }).customer.id, adaId);
        // The identity sequences moved past the restored rows: a new registration's message fits in.
        await register(restoredService.url, carol);
      } finally {
        assert.equal(await restoredService.stop(), 0);
      }

      // Now it holds customers: restoring again is refused, and changes nothing.
      const again = refusal(await runCommand(['restore', backupFile], envOf(target)));
      assert.equal(
        again,
        'storefront-auth: the database to restore into is not empty: it holds 3 customers in 1 store. Restore into a fresh data folder (or an empty database), or add --force to replace everything it holds; nothing was restored',
      );
      const shown = await runCommand(['customer', 'show', carol.email], envOf(target));
      assert.equal(shown.code, 0, shown.stderr);
    },
  );

  test('--force replaces what the target holds with the backup', slow, async () => {
    const target = await fresh('backup-force');
    const created = await runCommand(['store', 'create', '--slug', 'other-shop', '--name', 'Other'], envOf(target));
    assert.equal(created.code, 0, created.stderr);
    const refused = refusal(await runCommand(['restore', backupFile], envOf(target)));
    assert.match(refused, /it holds 0 customers in 2 stores\. .*add --force/);
    const forced = await runCommand(['restore', '--force', backupFile], envOf(target));
    assert.equal(forced.code, 0, forced.stderr);
    const stores = await runCommand(['store', 'list'], envOf(target));
    assert.deepEqual(
      JSON.parse(stores.stdout).map((store: { slug: string }) => store.slug),
      ['default'],
    );
    assert.equal((await runCommand(['customer', 'show', ada.email], envOf(target))).code, 0);
  });

  test('a file that is not a backup, damaged or cut short is refused before anything starts', slow, async () => {
    const target = await fresh('backup-damaged');
    const lines = linesOf(backupFile);
    const bytes = fs.readFileSync(backupFile);
    const halved = path.join(folders.fresh(), 'halved.gz');
    fs.writeFileSync(halved, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const plain = path.join(folders.fresh(), 'notes.txt');
    fs.writeFileSync(plain, 'not a backup\n');
    const rowAt = lines.findIndex((line) => line.startsWith('['));
    const replacingRow = (...replacement: string[]) => [
      ...lines.slice(0, rowAt),
      ...replacement,
      ...lines.slice(rowAt + 1),
    ];
    const cases: Array<[string, RegExp]> = [
      [path.join(folders.fresh(), 'missing.gz'), /cannot read .*missing\.gz: no such file$/],
      [plain, /notes\.txt is not a storefront-auth backup \(it is not gzip-compressed\)$/],
      [writeLines(['{"hello":"world"}']), /edited\.gz is not a storefront-auth backup$/],
      [halved, /halved\.gz is damaged or incomplete \(unexpected end of file\); nothing was restored$/],
      [writeLines(lines.slice(0, -1)), /damaged or incomplete \(it ends before its last line: it was cut short\)/],
      [writeLines(replacingRow('["one value"]')), /damaged or incomplete \(a row does not fit stores\)/],
      [writeLines(replacingRow()), /damaged or incomplete \(stores does not have the rows it says\)/],
    ];
    for (const [file, expected] of cases) {
      assert.match(refusal(await runCommand(['restore', file], envOf(target))), expected, file);
    }
    assert.deepEqual(await tablesOf(target), [], 'nothing was started or written');
  });

  test('a backup of a newer version is refused, naming the version that reads it', slow, async () => {
    const target = await fresh('backup-newer');
    const [first, ...rest] = linesOf(backupFile);
    const header = JSON.parse(first!);
    const newerSchema = writeLines([
      JSON.stringify({
        ...header,
        made_by: '9.0.0',
        schema_version: latest + 1,
        migrations: [...header.migrations, latest + 1],
      }),
      ...rest,
    ]);
    assert.equal(
      refusal(await runCommand(['restore', newerSchema], envOf(target))),
      `storefront-auth: ${newerSchema} was made by storefront-auth 9.0.0 on schema version ${latest + 1}, newer than this version's (${latest}): restore it with that version or a newer one; nothing was restored`,
    );
    const newerFormat = writeLines([JSON.stringify({ ...header, made_by: '9.0.0', format_version: 2 }), ...rest]);
    assert.match(
      refusal(await runCommand(['restore', newerFormat], envOf(target))),
      /is in backup format 2, which this version cannot read \(it reads format 1\): restore it with storefront-auth 9\.0\.0 or newer$/,
    );
    assert.deepEqual(await tablesOf(target), []);
  });
});

describe('backup and restore on the command line', () => {
  test('each needs the file, and only restore takes --force: exit 2 with usage', { timeout: 60_000 }, async () => {
    const env = { PATH: process.env['PATH'] ?? '', DATA_DIR: folders.fresh() };
    const cases: Array<[string[], string]> = [
      [['backup'], 'backup needs the backup file to write'],
      [['restore', '--force'], 'restore needs the backup file to read'],
      [['backup', '--force', 'file.gz'], 'backup takes no --force'],
      [['restore', 'a.gz', 'b.gz'], 'unexpected argument "b.gz"'],
    ];
    for (const [args, message] of cases) {
      const result = await runCommand(args, env);
      assert.equal(result.code, 2, args.join(' '));
      assert.ok(result.stderr.startsWith(`storefront-auth: ${message}\n\nUsage:`), result.stderr);
    }
    const help = await runCommand(['--help'], env);
    assert.match(help.stdout, /^  backup <file> /m);
    assert.match(help.stdout, /^  restore \[--force\] <file> /m);
  });
});

describe('backupDatabase and restoreDatabase', () => {
  const silent: TableProgress = { rows() {}, done() {}, say() {} };
  const secret = 'b'.repeat(43);
  const opened: TestDatabase[] = [];
  const database = async () => {
    const made = await openTestDatabase();
    opened.push(made);
    return made.db;
  };
  const tables = async (db: TestDatabase['db']) =>
    (
      await db.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()')
    ).map((row) => row.name);
  after(async () => {
    for (const made of opened) await made.drop();
    folders.removeAll();
  });

  async function storeOnly(upTo = Infinity) {
    const db = await database();
    await db.transaction((tx) => applyMigrations(tx, upTo));
    await db.query(
      `INSERT INTO stores (id, slug, name, status, identity_mode, created_at, updated_at)
       VALUES ('default', 'default', 'Old Shop', 'active', 'email', now(), now())`,
    );
    return db;
  }

  test('a backup of an earlier schema is restored on that schema, then migrated to this one', async () => {
    const file = path.join(folders.fresh(), 'earlier.gz');
    const made = await backupDatabase(await storeOnly(latest - 1), file, { secret, progress: silent });
    assert.equal(made.schema_version, latest - 1);
    const target = await database();
    const restored = await restoreDatabase(target, file, { progress: silent });
    assert.deepEqual(restored.migrations_applied, [latest]);
    assert.deepEqual(await migrate(target), [], 'every migration is applied');
    assert.deepEqual(await target.query('SELECT slug, name FROM stores'), [{ slug: 'default', name: 'Old Shop' }]);
  });

  test('a restore that fails part-way leaves the database as it was, without a table', async () => {
    const file = path.join(folders.fresh(), 'whole.gz');
    await backupDatabase(await storeOnly(), file, { secret, progress: silent });
    // A host of a store the file does not have: its foreign key fails after the stores are written.
    const lines = linesOf(file);
    const at = lines.findIndex((line) => line.startsWith('{"table":"store_hosts"'));
    const columns = JSON.parse(lines[at]!).columns as string[];
    const row = columns.map((column) =>
      column === 'host' ? 'shop.example' : column === 'store_id' ? 'nowhere' : null,
    );
    const trailer = JSON.parse(lines.at(-1)!);
    const broken = writeLines([
      ...lines.slice(0, at + 1),
      JSON.stringify(row),
      '{"rows":1}',
      ...lines.slice(at + 2, -1),
      JSON.stringify({ ...trailer, tables: { ...trailer.tables, store_hosts: 1 } }),
    ]);
    const target = await database();
    await assert.rejects(restoreDatabase(target, broken, { progress: silent }), /store_hosts/);
    assert.deepEqual(await tables(target), []);
  });

  test('a backup that fails part-way leaves no file behind', async () => {
    const db = await storeOnly();
    await db.query('CREATE TABLE zz_keyless (value integer)');
    const folder = folders.fresh();
    await assert.rejects(
      backupDatabase(db, path.join(folder, 'never.gz'), { secret, progress: silent }),
      /the table zz_keyless has no primary key/,
    );
    assert.deepEqual(fs.readdirSync(folder), []);
  });
});
