import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { loadConfig } from '../../src/config.js';
import { createLogger, openServices, type Services } from '../../src/services.js';
import { DatabaseUnavailableError } from '../../src/storage/database.js';
import { MemoryCounterStore } from '../../src/storage/counters.js';
import { migrate, migrationLockKey, migrations } from '../../src/storage/migrations.js';
import { isRefusedStatementTimeout, openPostgres } from '../../src/storage/postgres.js';
import { testArgon2 } from '../helpers/argon2.js';
import { createScratchDatabase, serverTarget, type ScratchDatabase } from '../helpers/database.js';
import { RecordingTransport, registration, toReply } from '../helpers/harness.js';
import { backendsBypassing, failFastSettings, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * The service behind PgBouncer in transaction mode, where consecutive transactions of one client
 * connection may run on different server connections, and one server connection serves many
 * clients. Every pass runs this file on a PgBouncer of its own in front of the test server (the
 * embedded one through its socket, or PostgreSQL); without PgBouncer installed it fails, saying how
 * to install it.
 */

const secret = 'pgbouncer-secret-pgbouncer-secret-0123456789';
const auth = '/api/v1/customer/auth';

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One statement on the server itself, never through the pooler. */
async function direct<Row>(scratch: ScratchDatabase, sql: string, params: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: scratch.directUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as Row[];
  } finally {
    await client.end();
  }
}

describe('behind PgBouncer in transaction mode', () => {
  let scratch: ScratchDatabase;
  let bouncer: PgBouncer;
  before(async () => {
    scratch = await createScratchDatabase('sfa_test_pgbouncer');
    bouncer = await startPgBouncer({ upstream: scratch.directUrl });
  });
  after(async () => {
    await bouncer?.stop();
    await scratch?.drop();
  });

  test('PgBouncer refuses statement_timeout as a connection parameter; the pool connects without it and still limits statements in transactions, for that transaction only', async () => {
    // One server connection: every transaction and statement below runs on the same one.
    const single = await startPgBouncer({ upstream: scratch.directUrl, poolSize: 1 });
    const warnings: string[] = [];
    const db = openPostgres(single.url(scratch.name), {
      max: 2,
      statementTimeoutMs: 300,
      notice: (message) => warnings.push(message),
    });
    try {
      const raw = new pg.Client({ connectionString: single.url(scratch.name), statement_timeout: 300 });
      raw.on('error', () => {});
      const refusal = await raw.connect().then(
        () => undefined,
        (error: unknown) => error,
      );
      await raw.end().catch(() => {});
      assert.ok(isRefusedStatementTimeout(refusal), `PgBouncer accepted statement_timeout: ${String(refusal)}`);

      assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
      assert.equal(warnings.length, 1, 'the fallback is logged once');
      assert.match(warnings[0]!, /statement_timeout/);

      const started = performance.now();
      const cancelled = await db
        .transaction((tx) => tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(5)'))
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      assert.ok(cancelled instanceof DatabaseUnavailableError, String(cancelled));
      assert.equal((cancelled.cause as { code?: string }).code, '57014', 'cancelled by statement_timeout');
      assert.ok(performance.now() - started < 3_000, 'cancelled after the limit, not the 5 s sleep');

      const inside = await db.transaction((tx) =>
        tx.query<{ pid: number; limit: string }>(
          "SELECT pg_backend_pid() AS pid, current_setting('statement_timeout') AS limit",
        ),
      );
      const outside = await db.query<{ pid: number; limit: string }>(
        "SELECT pg_backend_pid() AS pid, current_setting('statement_timeout') AS limit",
      );
      const [serverDefault] = await direct<{ limit: string }>(
        scratch,
        "SELECT current_setting('statement_timeout') AS limit",
      );
      assert.equal(inside[0]!.limit, '300ms');
      assert.equal(outside[0]!.pid, inside[0]!.pid, 'the same server connection');
      assert.equal(outside[0]!.limit, serverDefault!.limit, 'the limit ended with its transaction');
    } finally {
      await db.close();
      await single.stop();
    }
  });

  test('two instances migrating at once take turns on the transaction-scoped lock: one applies every migration, the other finds none left, and no lock outlives them', async () => {
    const holder = new pg.Client({ connectionString: bouncer.url(scratch.name) });
    await holder.connect();
    const first = openPostgres(bouncer.url(scratch.name), { max: 2 });
    const second = openPostgres(bouncer.url(scratch.name), { max: 2 });
    const waitingOnTheLock = async () => {
      const [row] = await direct<{ n: number }>(
        scratch,
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
        [scratch.name],
      );
      return row?.n ?? 0;
    };
    try {
      // Holding the lock first makes both instances wait on it at the same time.
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey]);
      const running = Promise.all([migrate(first), migrate(second)]);
      await until(async () => (await waitingOnTheLock()) === 2, 'both instances wait on the migration lock');
      await holder.query('COMMIT');
      const ran = await running;
      const [applying, waited] = ran[0]!.length > 0 ? ran : [ran[1]!, ran[0]!];
      assert.deepEqual(waited, [], `the instance that waited finds nothing left: ${JSON.stringify(ran)}`);
      const applied = await direct<{ version: number }>(scratch, 'SELECT version FROM schema_migrations ORDER BY 1');
      assert.ok(applied.length > 0);
      assert.deepEqual(
        applied.map((row) => row.version),
        applying,
        'the other applied every migration',
      );
      const locks = await direct<{ n: number }>(
        scratch,
        `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
          WHERE l.locktype = 'advisory' AND d.datname = $1`,
        [scratch.name],
      );
      assert.equal(locks[0]!.n, 0, 'no advisory lock is left on a pooled server connection');
    } finally {
      await holder.end();
      await first.close();
      await second.close();
    }
  });

  test(
    'with PostgreSQL gone behind a PgBouncer set as the PgBouncer guide says, customer calls answer 503 within 2 s, and all recovers alone',
    { timeout: 60_000 },
    async () => {
      // Between PgBouncer and the server: what the test cuts is PostgreSQL, PgBouncer stays up.
      const proxy = await new TcpProxy(serverTarget(scratch.directUrl)).start();
      const user = decodeURIComponent(new URL(scratch.directUrl).username) || 'postgres';
      const fronted = await startPgBouncer({
        upstream: `postgres://${user}@127.0.0.1:${proxy.port}/${scratch.name}`,
        settings: failFastSettings,
      });
      const opened = await openServices(
        loadConfig({ DATABASE_URL: fronted.url(scratch.name), APP_SECRET: secret }),
        createLogger({ level: 'silent' }),
        {
          hasher: createArgon2Hasher(testArgon2),
          counters: new MemoryCounterStore(),
          manualDispatch: true,
          manualJanitor: true,
        },
      );
      const app = await buildApp(opened);
      const login = () =>
        app.inject({
          method: 'POST',
          url: `${auth}/login`,
          payload: { identity: 'nobody@example.com', password: 'whatever words 1' },
        });
      // Polling for the recovery from an address and for an identity of its own each time: the
      // login limits (10 failures an identity, 20 logins an address) would otherwise answer 429 to
      // the polls before PgBouncer's server_login_retry has passed, and never show the recovery.
      let probes = 0;
      const probe = () => {
        probes += 1;
        return app.inject({
          method: 'POST',
          url: `${auth}/login`,
          remoteAddress: `10.0.${probes >> 8}.${probes & 255}`,
          payload: { identity: `nobody-${probes}@example.com`, password: 'whatever words 1' },
        });
      };
      try {
        assert.equal((await login()).statusCode, 401);
        for (const mode of ['refuse', 'hang'] as const) {
          proxy.set(mode);
          for (let call = 0; call < 2; call += 1) {
            const started = performance.now();
            const down = await login();
            const elapsed = performance.now() - started;
            assert.equal(down.statusCode, 503, `${mode}: ${down.body}`);
            assert.equal(down.json().code, 'service_unavailable');
            assert.ok(elapsed < 2_000, `${mode}: answered in ${elapsed.toFixed(0)} ms`);
          }
          proxy.set('pass');
          await until(async () => (await probe()).statusCode === 401, `the service recovers after ${mode}`);
        }
      } finally {
        await app.close();
        await opened.close();
        await fronted.stop();
        await proxy.close();
      }
    },
  );

  describe('two services starting at once on a fresh database through the pooler', () => {
    let flowScratch: ScratchDatabase;
    let services: Services[] = [];
    let apps: FastifyInstance[] = [];
    const outbox = new RecordingTransport();

    before(async () => {
      flowScratch = await createScratchDatabase('sfa_test_pgbouncer_flow');
      const config = loadConfig({
        DATABASE_URL: bouncer.url(flowScratch.name),
        APP_SECRET: secret,
        DATABASE_POOL_SIZE: '3',
      });
      const open = () =>
        openServices(config, createLogger({ level: 'silent' }), {
          hasher: createArgon2Hasher(testArgon2),
          counters: new MemoryCounterStore(),
          transports: { email: outbox, sms: outbox },
          manualDispatch: true,
          manualJanitor: true,
        });
      // Both migrate and make the store row at the same moment; neither may fail.
      services = await Promise.all([open(), open()]);
      apps = await Promise.all(services.map((opened) => buildApp(opened)));
      await Promise.all(apps.map((app) => app.ready()));
    });

    after(async () => {
      for (const app of apps) await app.close();
      for (const opened of services) await opened.close();
      await flowScratch?.drop();
    });

    const call = async (app: FastifyInstance, method: 'GET' | 'POST', path: string, body?: unknown, cookie?: string) =>
      toReply(
        await app.inject({
          method,
          url: `${auth}${path}`,
          headers: {
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...(cookie === undefined ? {} : { cookie }),
          },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        }),
      );
    /** The newest code sent to `to`, after every instance has sent what it has queued. */
    const codeFor = async (to: string, purpose: 'verification' | 'password_reset') => {
      for (const opened of services) {
        await opened.background.drain();
        await opened.dispatcher.drain();
      }
      const message = outbox.sent.filter((sent) => sent.to === to && sent.purpose === purpose).at(-1);
      const code = message?.content.text.match(/\b\d{6}\b/)?.[0];
      assert.ok(code !== undefined, `a ${purpose} code was sent to ${to}`);
      return code;
    };

    test('the schema is applied once and there is one store row', async () => {
      const applied = await direct<{ version: number }>(
        flowScratch,
        'SELECT version FROM schema_migrations ORDER BY 1',
      );
      assert.deepEqual(
        applied.map((row) => row.version),
        migrations.map((migration) => migration.version),
      );
      const [stores] = await direct<{ n: number }>(flowScratch, 'SELECT count(*)::int AS n FROM stores');
      assert.equal(stores!.n, 1);
    });

    test('register, verify, log in, read the session, reset the password and log in again, alternating instances', async () => {
      const [one, two] = apps as [FastifyInstance, FastifyInstance];
      const body = registration({ email: 'pooled@example.com' });
      assert.equal((await call(one, 'POST', '/register', body)).status, 201);
      const verified = await call(two, 'POST', '/verify', {
        identity: 'pooled@example.com',
        code: await codeFor('pooled@example.com', 'verification'),
      });
      assert.equal(verified.status, 200);

      const loggedIn = await call(one, 'POST', '/login', { identity: 'pooled@example.com', password: body.password });
      assert.equal(loggedIn.status, 200);
      const session = loggedIn.cookies.find((cookie) => cookie.name === 'storefront_session');
      assert.ok(session !== undefined, 'login sets the session cookie');
      const cookie = `storefront_session=${session.value}`;
      const who = await call(two, 'GET', '/session', undefined, cookie);
      assert.equal(who.status, 200);
      assert.equal(who.body.customer.identity.value, 'pooled@example.com');

      assert.equal((await call(two, 'POST', '/password/forgot', { identity: 'pooled@example.com' })).status, 202);
      const reset = await call(one, 'POST', '/password/reset', {
        identity: 'pooled@example.com',
        code: await codeFor('pooled@example.com', 'password_reset'),
        password: 'pooled new words 77',
        password_confirmation: 'pooled new words 77',
      });
      assert.equal(reset.status, 200);
      assert.equal((await call(two, 'GET', '/session', undefined, cookie)).status, 401, 'the reset ended the session');
      const again = await call(two, 'POST', '/login', {
        identity: 'pooled@example.com',
        password: 'pooled new words 77',
      });
      assert.equal(again.status, 200);
    });

    test('each instance opens at most DATABASE_POOL_SIZE connections, all to the pooler, and nothing reaches the database around it', async () => {
      await Promise.all(
        services.flatMap((opened) => Array.from({ length: 8 }, () => opened.db.query('SELECT pg_sleep(0.05)'))),
      );
      const clients = await bouncer.admin<{ database: string; application_name: string }>('SHOW CLIENTS');
      const ours = clients.filter(
        (client) => client.database === flowScratch.name && client.application_name === 'storefront-auth',
      );
      assert.equal(ours.length, 2 * 3, 'three pooled connections per instance');
      const { seen, bypassing } = await backendsBypassing(bouncer.adminUrl, flowScratch.directUrl, flowScratch.name);
      assert.ok(seen.length > 0, 'the pooler keeps server connections to the database');
      assert.deepEqual(bypassing, [], 'backends on the database that PgBouncer did not open');
    });
  });
});
