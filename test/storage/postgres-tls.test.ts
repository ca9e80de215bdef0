import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createStorefrontAuthClient } from '../../packages/client/src/index.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/services.js';
import { DatabaseUnavailableError } from '../../src/storage/database.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { certificateFailure } from '../../src/tls.js';
import { leafParts, parseMail, startSmtpServer, type TestSmtpServer } from '../delivery/servers.js';
import { runCommand } from '../helpers/cli.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls.js';
import { startTlsPostgres, startTlsRedis, type TlsPostgres, type TlsServer } from '../helpers/tls-servers.js';

const appSecret = 'tls-test-secret-0123456789abcdefghijklmnop';

let certificates: TestCertificates;
let postgres: TlsPostgres;
const ready = (async () => {
  certificates = await makeTestCertificates();
  postgres = await startTlsPostgres(certificates);
})();
ready.catch(() => {}); // reported by the hooks that await it
after(async () => {
  await ready.catch(() => {});
  await postgres?.stop();
  certificates?.remove();
});

/** What the service's own database module makes of these variables: the connection's TLS state. */
async function connect(env: Record<string, string>): Promise<{ ssl: boolean; version: string }> {
  const opened = await openDatabase(loadConfig({ APP_SECRET: appSecret, ...env }), { max: 1 });
  try {
    const [row] = await opened.db.query<{ ssl: boolean; version: string }>(
      'SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
    );
    return row!;
  } finally {
    await opened.release();
  }
}

/** The reason the connection was refused, which must be a refused certificate. */
async function refusal(env: Record<string, string>): Promise<string> {
  const error = await connect(env).then(
    () => assert.fail(`connected with ${JSON.stringify(env)}`),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof DatabaseUnavailableError, `a 503 outage, not a bug: ${String(error)}`);
  const reason = certificateFailure(error.cause);
  assert.ok(reason !== undefined, `a certificate failure: ${String(error.cause)}`);
  return reason;
}

describe('PostgreSQL over TLS: sslmode and DATABASE_CA_FILE against a server that admits TLS only', () => {
  before(() => ready);

  test('a connection without sslmode is refused by the server: it admits TLS only', async () => {
    const db = openPostgres(postgres.url('127.0.0.1'), { max: 1 });
    try {
      await assert.rejects(
        db.query('SELECT 1'),
        /pg_hba\.conf rejects connection for host "127\.0\.0\.1".*no encryption/,
      );
    } finally {
      await db.close();
    }
  });

  test('sslmode=verify-full with DATABASE_CA_FILE connects, encrypted', async () => {
    const row = await connect({
      DATABASE_URL: postgres.url('127.0.0.1', '?sslmode=verify-full'),
      DATABASE_CA_FILE: certificates.caFile,
    });
    assert.equal(row.ssl, true);
    assert.match(row.version, /^TLSv1\.[23]$/);
  });

  test('sslmode=require also verifies chain and host name; verify-ca checks the chain only', async () => {
    const ca = { DATABASE_CA_FILE: certificates.caFile };
    // 127.0.0.2 reaches the same server, under an address its certificate does not name.
    assert.equal((await connect({ DATABASE_URL: postgres.url('127.0.0.1', '?sslmode=require'), ...ca })).ssl, true);
    for (const mode of ['verify-full', 'require']) {
      const reason = await refusal({ DATABASE_URL: postgres.url('127.0.0.2', `?sslmode=${mode}`), ...ca });
      assert.match(
        reason,
        /^certificate verification failed: Hostname\/IP does not match certificate's altnames/,
        mode,
      );
    }
    assert.equal((await connect({ DATABASE_URL: postgres.url('127.0.0.2', '?sslmode=verify-ca'), ...ca })).ssl, true);
  });

  test('a CA bundle that did not sign the certificate is refused in every mode that uses it', async () => {
    for (const mode of ['verify-full', 'require', 'verify-ca']) {
      const reason = await refusal({
        DATABASE_URL: postgres.url('127.0.0.1', `?sslmode=${mode}`),
        DATABASE_CA_FILE: certificates.otherCaFile,
      });
      assert.match(
        reason,
        /^certificate verification failed: unable to (verify the first certificate|get local issuer certificate)/,
        mode,
      );
    }
  });

  test('sslmode=verify-full without DATABASE_CA_FILE is refused: the public roots do not know the private CA', async () => {
    const reason = await refusal({ DATABASE_URL: postgres.url('127.0.0.1', '?sslmode=verify-full') });
    assert.match(reason, /^certificate verification failed: /);
  });

  test('the command line refuses in one line that names the certificate, and exits 1', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-pg-tls-cli-'));
    try {
      const result = await runCommand(['migrate'], {
        PATH: process.env['PATH'] ?? '',
        DATA_DIR: dataDir,
        APP_SECRET: appSecret,
        DATABASE_URL: postgres.url('127.0.0.1', '?sslmode=verify-full'),
        DATABASE_CA_FILE: certificates.otherCaFile,
      });
      assert.equal(result.code, 1, result.stderr);
      const lines = result.stderr.trim().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(
        lines[0]!,
        /^storefront-auth: the database server's TLS certificate was refused \(certificate verification failed: .+\); check DATABASE_CA_FILE/,
      );
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('every hop over TLS: the service on PostgreSQL, Redis and SMTP, each with a verified certificate', () => {
  let redis: TlsServer;
  let smtp: TestSmtpServer;
  let service: ServiceProcess | undefined;
  let dataDir: string;

  before(async () => {
    await ready;
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-tls-hops-'));
    [redis, smtp] = await Promise.all([
      startTlsRedis(certificates),
      startSmtpServer(0, {
        tls: {
          key: fs.readFileSync(certificates.keyFile, 'utf8'),
          cert: fs.readFileSync(certificates.certFile, 'utf8'),
          implicit: false,
        },
      }),
    ]);
  });
  after(async () => {
    if (service !== undefined) assert.equal(await service.stop(), 0, 'the service stops cleanly');
    await Promise.all([redis?.stop(), smtp?.close()]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('a customer registers, gets the code by mail, verifies and logs in; every connection is encrypted', async () => {
    service = await startService({
      DATA_DIR: dataDir,
      APP_SECRET: appSecret,
      LOG_LEVEL: 'info',
      DATABASE_URL: postgres.url('127.0.0.1', '?sslmode=verify-full'),
      DATABASE_CA_FILE: certificates.caFile,
      REDIS_URL: `rediss://127.0.0.1:${redis.port}`,
      REDIS_CA_FILE: certificates.caFile,
      SMTP_URL: smtp.url.replace('smtp://', 'smtp://mailer:mail-secret@'),
      SMTP_CA_FILE: certificates.caFile,
      MAIL_FROM: 'Shop <shop@example.com>',
    });
    const client = createStorefrontAuthClient({
      baseUrl: service.url,
      headers: { origin: new URL(service.url).origin },
    });
    // Redis answers only on its TLS port, so cache: true means the counters go over TLS.
    assert.deepEqual((await client.ready()).checks, { database: true, cache: true, search: true, store: true });

    const password = 'analytical engine 1843';
    await client.register({ name: 'Ada', email: 'ada@example.com', password, password_confirmation: password });
    const deadline = performance.now() + 15_000;
    while (smtp.received.length === 0) {
      assert.ok(performance.now() < deadline, 'the verification mail arrives within 15 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual(smtp.logins, [{ username: 'mailer', password: 'mail-secret', secure: true }]);
    assert.equal(smtp.received[0]!.secure, true);
    const text = leafParts(parseMail(smtp.received[0]!.raw)).find((part) =>
      part.headers.get('content-type')?.startsWith('text/plain'),
    );
    const code = /code is (\d{6})\b/.exec(text?.body ?? '')?.[1];
    assert.ok(code !== undefined, 'the mail carries the code');
    await client.verify({ identity: 'ada@example.com', code });
    const loggedIn = await client.login({ identity: 'ada@example.com', password });
    assert.ok(loggedIn.auth_type === 'session');
    assert.equal(loggedIn.customer.name, 'Ada');
    assert.equal((await client.session()).customer.name, 'Ada');

    const db = openPostgres(postgres.url('127.0.0.1', '?sslmode=verify-full'), {
      max: 1,
      ca: fs.readFileSync(certificates.caFile, 'utf8'),
    });
    try {
      const [row] = await db.query<{ connections: number; encrypted: number }>(
        `SELECT count(*)::int AS connections, count(*) FILTER (WHERE s.ssl)::int AS encrypted
           FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'storefront-auth'`,
      );
      assert.ok(row!.connections >= 2, `the service's pool and this check are connected (${row!.connections})`);
      assert.equal(row!.encrypted, row!.connections, 'every connection is TLS');
    } finally {
      await db.close();
    }
  });
});
