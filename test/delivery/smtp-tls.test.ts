import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import nodemailer from 'nodemailer';
import { loadConfig } from '../../src/config.js';
import { configuredTransports, createLogger } from '../../src/services.js';
import { auth, createHarness, registration, testSecret, type TestApp } from '../helpers/harness.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls.js';
import { leafParts, onlyOutboxRow, parseMail, startSmtpServer, type TestSmtpServer } from './servers.js';

const from = 'Shop <shop@example.com>';

describe('SMTP over TLS: smtps://, STARTTLS, verified certificates, credentials never in clear', () => {
  let harness: Awaited<ReturnType<typeof createHarness>>;
  let certificates: TestCertificates;
  const servers: TestSmtpServer[] = [];

  before(async () => {
    [harness, certificates] = await Promise.all([createHarness(), makeTestCertificates()]);
  });
  after(async () => {
    await harness.close();
    await Promise.all(servers.map((server) => server.close()));
    certificates.remove();
  });

  async function smtpServer(mode: 'implicit' | 'starttls' | 'plain', host = '127.0.0.1'): Promise<TestSmtpServer> {
    const server = await startSmtpServer(
      0,
      mode === 'plain'
        ? { host }
        : {
            host,
            tls: {
              key: fs.readFileSync(certificates.keyFile, 'utf8'),
              cert: fs.readFileSync(certificates.certFile, 'utf8'),
              implicit: mode === 'implicit',
            },
          },
    );
    servers.push(server);
    return server;
  }

  /** The service with the email transport the configuration builds from these variables. */
  function start(env: Record<string, string>): Promise<TestApp> {
    const config = loadConfig({ APP_SECRET: testSecret, MAIL_FROM: from, ...env });
    const { email } = configuredTransports(config, createLogger({ level: 'silent' }));
    return harness.start({ env, overrides: { transports: { email } } });
  }

  function codeIn(raw: string): string {
    const text = leafParts(parseMail(raw)).find((part) => part.headers.get('content-type')?.startsWith('text/plain'));
    const code = /(?<!\d)(\d{6})(?!\d)/.exec(text?.body ?? '')?.[1];
    assert.ok(code !== undefined, 'the message carries a code');
    return code;
  }

  /** A registration whose message the transport could not send: it waits, and the log says why. */
  async function assertRefused(t: TestApp, server: TestSmtpServer, reason: RegExp): Promise<void> {
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    await t.deliver();
    assert.equal(server.received.length, 0, 'nothing reached the server');
    assert.deepEqual(server.logins, [], 'no credentials reached the server');
    const row = await onlyOutboxRow(t.db);
    assert.equal(row.status, 'pending', 'the message waits for a retry');
    assert.equal(row.attempts, 1);
    assert.ok(row.sealed_body !== null, 'its body is kept for the retry');
    assert.match(row.last_error ?? '', reason);
    const line = t.logs.find((entry) => entry['msg'] === 'message not delivered; will retry');
    assert.ok(line !== undefined, 'the failed attempt is logged');
    assert.match(String(line['reason']), reason);
  }

  test('smtps:// with SMTP_CA_FILE: the code arrives over TLS from the first byte and verifies the customer', async () => {
    const server = await smtpServer('implicit');
    const t = await start({ SMTP_URL: server.url, SMTP_CA_FILE: certificates.caFile });
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    await t.deliver();
    assert.equal(server.received.length, 1);
    assert.equal(server.received[0]!.secure, true, 'the session was TLS');
    assert.equal((await onlyOutboxRow(t.db)).status, 'sent');
    const code = codeIn(server.received[0]!.raw);
    assert.equal((await t.post(`${auth}/verify`, { identity: 'ada@example.com', code })).status, 200);
  });

  test('smtp:// with credentials upgrades with STARTTLS before AUTH: login and message both go over TLS', async () => {
    const server = await smtpServer('starttls');
    const url = server.url.replace('smtp://', 'smtp://mailer:s3cret%2Fpass@');
    const t = await start({ SMTP_URL: url, SMTP_CA_FILE: certificates.caFile });
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    await t.deliver();
    assert.deepEqual(server.logins, [{ username: 'mailer', password: 's3cret/pass', secure: true }]);
    assert.equal(server.received.length, 1);
    assert.equal(server.received[0]!.secure, true);
    assert.equal((await onlyOutboxRow(t.db)).status, 'sent');
  });

  const unknownIssuer =
    /^SMTP server's TLS certificate verification failed: unable to verify the first certificate \(check SMTP_CA_FILE/;

  test('a certificate from another CA is refused over smtps:// and over STARTTLS: nothing is sent, the message waits, the log names the certificate', async () => {
    for (const mode of ['implicit', 'starttls'] as const) {
      const server = await smtpServer(mode);
      const t = await start({ SMTP_URL: server.url, SMTP_CA_FILE: certificates.otherCaFile });
      await assertRefused(t, server, unknownIssuer);
    }
  });

  test('a certificate that does not name the host (127.0.0.2) is refused over smtps:// and over STARTTLS', async () => {
    for (const mode of ['implicit', 'starttls'] as const) {
      const server = await smtpServer(mode, '127.0.0.2');
      const t = await start({ SMTP_URL: server.url, SMTP_CA_FILE: certificates.caFile });
      await assertRefused(
        t,
        server,
        /^SMTP server's TLS certificate verification failed: Hostname\/IP does not match certificate's altnames/,
      );
    }
  });

  test('without SMTP_CA_FILE the public roots decide: a private certificate offered through STARTTLS is refused, never used in clear instead', async () => {
    const server = await smtpServer('starttls');
    const t = await start({ SMTP_URL: server.url });
    await assertRefused(t, server, unknownIssuer);
  });

  test('with credentials, a server that offers no STARTTLS never sees them: the send stops before AUTH and the message waits', async () => {
    const server = await smtpServer('plain');
    const url = server.url.replace('smtp://', 'smtp://mailer:s3cret@');

    // The server takes credentials in clear from a client that sends them (nodemailer on the URL
    // alone, as this transport was set up before): the refusal below is the client's.
    const careless = nodemailer.createTransport(url);
    await careless.sendMail({ from, to: 'x@example.com', subject: 'x', text: 'x' });
    careless.close();
    assert.deepEqual(server.logins, [{ username: 'mailer', password: 's3cret', secure: false }]);
    server.logins.length = 0;
    server.received.length = 0;

    const t = await start({ SMTP_URL: url });
    await assertRefused(
      t,
      server,
      /did not start TLS \(STARTTLS\), which is required when SMTP_URL carries credentials/,
    );
  });

  test('SMTP_CA_FILE also requires STARTTLS: a server that offers none gets nothing', async () => {
    const server = await smtpServer('plain');
    const t = await start({ SMTP_URL: server.url, SMTP_CA_FILE: certificates.caFile });
    await assertRefused(t, server, /did not start TLS \(STARTTLS\)/);
  });

  test('without credentials or SMTP_CA_FILE, a server that offers no STARTTLS (a local relay) gets the message in clear', async () => {
    const server = await smtpServer('plain');
    const t = await start({ SMTP_URL: server.url });
    assert.equal((await t.post(`${auth}/register`, registration())).status, 201);
    await t.deliver();
    assert.equal(server.received.length, 1);
    assert.equal(server.received[0]!.secure, false);
  });
});
