import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { runAdminCommand, type AdminCommand, type AdminDeps, type AdminResult } from './commands.js';

const maxCommandBytes = 64 * 1024;

function tokenMatches(expected: string, header: string | undefined): boolean {
  const given = Buffer.from(header ?? '');
  const wanted = Buffer.from(`Bearer ${expected}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

/**
 * The running embedded service holds the data folder, so the command line reaches it here: a
 * Unix socket inside the folder, readable by its owner only, that also wants the admin token.
 */
export async function startAdminSocket(socketPath: string, token: string, deps: AdminDeps): Promise<http.Server> {
  fs.rmSync(socketPath, { force: true });
  const server = http.createServer((request, response) => {
    const answer = (status: number, result: AdminResult) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(result));
    };
    if (request.method !== 'POST' || request.url !== '/commands') return answer(404, { ok: false, error: 'not found' });
    if (!tokenMatches(token, request.headers.authorization))
      return answer(401, { ok: false, error: 'bad admin token' });
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxCommandBytes) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => {
      let command: AdminCommand;
      try {
        command = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AdminCommand;
      } catch {
        return answer(400, { ok: false, error: 'the command is not JSON' });
      }
      runAdminCommand(deps, command).then(
        (result) => answer(200, result),
        (error: unknown) => answer(500, { ok: false, error: error instanceof Error ? error.message : String(error) }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  fs.chmodSync(socketPath, 0o600);
  return server;
}

export async function sendAdminCommand(socketPath: string, token: string, command: AdminCommand): Promise<AdminResult> {
  const body = JSON.stringify(command);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        socketPath,
        path: '/commands',
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as AdminResult);
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
