import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sparePort } from './ports.js';

/**
 * An nginx of its own for a test: Debian's binary with a configuration in a temporary folder, on a
 * spare loopback port, in the foreground (one process, no daemon), so the test owns its whole life.
 * Everything it writes (pid, logs, temporary files) stays in the folder, removed by stop().
 */

export const nginxBinary = '/usr/sbin/nginx';
const readyTimeoutMs = 15_000;
const stopTimeoutMs = 10_000;
const pollIntervalMs = 25;

export interface Nginx {
  port: number;
  url: string;
  /** What nginx wrote to its error log so far. */
  errorLog(): string;
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The main configuration around `http`, the contents of the http block the test is about. */
function configuration(folder: string, http: string): string {
  const temp = (name: string) => path.join(folder, name);
  return `daemon off;
master_process off;
worker_processes 1;
pid ${temp('nginx.pid')};
error_log ${temp('error.log')} notice;
events { worker_connections 64; }
http {
  access_log ${temp('access.log')};
  client_body_temp_path ${temp('client_body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
${http}
}
`;
}

/**
 * Starts nginx with `http(port)` as the contents of its http block (which must listen on
 * 127.0.0.1:port) and resolves once it accepts connections.
 */
export async function startNginx(http: (port: number) => string): Promise<Nginx> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-nginx-'));
  const port = await sparePort();
  const file = path.join(folder, 'nginx.conf');
  fs.writeFileSync(file, configuration(folder, http(port)));
  const errorLog = () => fs.readFileSync(path.join(folder, 'error.log'), 'utf8');
  // -e: the error log before the configuration is read, else Debian's /var/log/nginx/error.log.
  const child = spawn(nginxBinary, ['-p', folder, '-c', file, '-e', path.join(folder, 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const remove = () => fs.rmSync(folder, { recursive: true, force: true });

  const deadline = Date.now() + readyTimeoutMs;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      const log = fs.existsSync(path.join(folder, 'error.log')) ? errorLog() : '';
      remove();
      throw new Error(`nginx did not start on port ${port}: ${stderr}${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
  }

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    errorLog,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        // SIGTERM: the fast shutdown; nothing here waits on a graceful one.
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
        await exited;
        clearTimeout(timer);
      }
      remove();
    },
  };
}
