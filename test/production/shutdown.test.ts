import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { serviceBackend, type ServiceBackend } from '../helpers/service-backend.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

const slow = { timeout: 120_000 };

interface Outcome {
  status?: number;
  connection?: string | undefined;
  error?: string;
}

/** One HTTP call; a reset or refused connection is an outcome too, never a thrown error. */
function call(url: string, options: http.RequestOptions, body?: unknown): Promise<Outcome> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const request = http.request(
      url,
      {
        ...options,
        headers: { ...options.headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode!, connection: response.headers.connection }));
        response.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    request.end(payload);
  });
}

describe('shutting down on SIGTERM', { timeout: 240_000 }, () => {
  let backend: ServiceBackend;
  before(async () => {
    backend = await serviceBackend('shutdown');
  });
  after(async () => backend.remove());

  test(
    'under load, every request sent during the drain delay gets a real answer, readiness turns 503 at once, keep-alive connections are told to close, and the process exits 0',
    slow,
    async (t) => {
      const delaySeconds = 3;
      const service: ServiceProcess = await startService({
        ...backend.env,
        SHUTDOWN_DELAY_SECONDS: String(delaySeconds),
        SHUTDOWN_TIMEOUT_SECONDS: '30',
        // Each call its own address and identity: the limits must not answer for the service.
        TRUST_PROXY: 'true',
      });
      const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)));
      let sent = 0;
      const login = () => {
        const i = (sent += 1);
        return call(
          `${service.url}/api/v1/customer/auth/login`,
          {
            method: 'POST',
            agent: false,
            headers: { 'x-forwarded-for': `10.${process.pid % 250}.${i >> 8}.${i & 255}` },
          },
          { identity: `drain-${i}@example.com`, password: 'not the password 1' },
        );
      };
      const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const ready = () => call(`${service.url}/api/v1/health/ready`, { agent: keepAlive });
      assert.equal((await ready()).status, 200);

      // A burst the service has not read yet when the signal comes: the case that used to be reset.
      const burst = Array.from({ length: 12 }, login);
      const signalledAt = performance.now();
      service.child.kill('SIGTERM');
      // A load balancer keeps sending until it notices readiness: here for half the delay.
      const loops = Array.from({ length: 4 }, async () => {
        const outcomes: Outcome[] = [];
        while (performance.now() - signalledAt < (delaySeconds * 1000) / 2) outcomes.push(await login());
        return outcomes;
      });
      let readiness = await ready();
      while (readiness.status === 200) readiness = await ready();

      const outcomes = [...(await Promise.all(burst)), ...(await Promise.all(loops)).flat()];
      const failed = outcomes.filter((outcome) => outcome.status !== 401);
      t.diagnostic(`${outcomes.length} logins sent around SIGTERM; ${failed.length} without a real answer`);
      assert.deepEqual(failed, [], 'every login got its 401, none was reset, refused or answered 503');
      assert.equal(readiness.status, 503, 'readiness answers 503 during the drain');
      assert.equal(readiness.connection, 'close', 'a keep-alive connection is told to close during the drain');
      keepAlive.destroy();

      assert.equal(await exited, 0);
      const messages = service.logs.map((line) => String(line['msg']));
      const order = [
        messages.findIndex((msg) => msg.startsWith('shutting down')),
        messages.findIndex((msg) => msg.startsWith('no longer accepting connections')),
        messages.findIndex((msg) => msg === 'stopped'),
      ];
      assert.ok(
        order.every((index) => index >= 0) && order[0]! < order[1]! && order[1]! < order[2]!,
        messages.join('\n'),
      );
      const servedAfterSignal = service.logs
        .slice(order[0]!)
        .some((line) => line['msg'] === 'request' && line['route'] === '/api/v1/customer/auth/login');
      assert.ok(servedAfterSignal, 'logins were still served after the signal');
    },
  );

  test(
    'a request that never completes is cut at SHUTDOWN_TIMEOUT_SECONDS: the cut is logged and the process exits 1',
    slow,
    async () => {
      const service = await startService({
        ...backend.env,
        SHUTDOWN_DELAY_SECONDS: '0',
        SHUTDOWN_TIMEOUT_SECONDS: '2',
      });
      const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)));
      // Headers promise a body that never comes: the request is received and can never be answered.
      const { port } = new URL(service.url);
      const socket = net.connect(Number(port), '127.0.0.1');
      socket.on('error', () => {});
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(
        'POST /api/v1/customer/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      );
      // The service has the request once its body is being read; a live check on a second
      // connection proves the first one was accepted and read before the signal.
      assert.equal((await call(`${service.url}/api/v1/health/live`, { agent: false })).status, 200);
      const signalledAt = performance.now();
      service.child.kill('SIGTERM');
      assert.equal(await exited, 1);
      const elapsed = performance.now() - signalledAt;
      assert.ok(elapsed < 6_000, `exited ${elapsed.toFixed(0)} ms after the signal`);
      const cut = service.logs.find((line) => String(line['msg']).startsWith('shutdown timed out'));
      assert.ok(cut !== undefined, 'the cut is logged');
      assert.equal(cut['stage'], 'requests');
      assert.equal(cut['open_connections'], 1);
      socket.destroy();
    },
  );
});
