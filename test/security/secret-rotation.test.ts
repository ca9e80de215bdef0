import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../../src/app.js';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OutgoingMessage } from '../../src/delivery/message.js';
import { unsealContent } from '../../src/delivery/seal.js';
import { deriveKeys } from '../../src/keys.js';
import { createLogger, openServices, type Services } from '../../src/services.js';
import { testArgon2 } from '../helpers/argon2.js';
import { openTestCounterStore, useMigratedDatabase } from '../helpers/database.js';
import { api, auth, RecordingTransport, registration, requester, type Reply } from '../helpers/harness.js';
import { codeIn } from '../helpers/assertions.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { cookieValue, sessionCookie } from '../helpers/customers.js';

/**
 * APP_SECRET rotation. Each phase is a fresh service on this file's database (what a restart with
 * new environment variables gives), so everything that outlives a phase lives in the database or in
 * the client's cookies, as it would across a real restart.
 */

const secretA = 'rotation-secret-A-rotation-secret-A-0123456789';
const secretB = 'rotation-secret-B-rotation-secret-B-9876543210';
interface Phase {
  services: Services;
  sent: RecordingTransport;
  post(url: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  get(url: string, headers?: Record<string, string>): Promise<Reply>;
  /** Runs the work behind the answers and sends every due message; returns what was sent. */
  deliver(): Promise<OutgoingMessage[]>;
  codeFor(to: string, purpose: 'verification' | 'password_reset'): Promise<string>;
  close(): Promise<void>;
}

/** Browser-style headers: the CSRF check applies, with the token in its cookie and its header. */
function asBrowser(token: string, session?: string): Record<string, string> {
  const cookies = [`XSRF-TOKEN=${token}`, ...(session === undefined ? [] : [`${sessionCookie}=${session}`])];
  return { 'sec-fetch-site': 'same-origin', cookie: cookies.join('; '), 'x-xsrf-token': token };
}

describe('rotating APP_SECRET with APP_SECRET_PREVIOUS', () => {
  const database = useMigratedDatabase();

  /** A service on this file's database with these secrets, as after a restart. */
  async function phase(env: { APP_SECRET: string; APP_SECRET_PREVIOUS?: string }): Promise<Phase> {
    const config = loadConfig({ DATA_DIR: '/nonexistent', ...env });
    const sent = new RecordingTransport();
    const services = await openServices(config, createLogger({ level: 'silent' }), {
      db: database.db,
      clock: systemClock,
      hasher: createArgon2Hasher(testArgon2),
      counters: await openTestCounterStore(),
      transports: { email: sent, sms: sent },
      manualDispatch: true,
      manualJanitor: true,
    });
    const app = await buildApp(services);
    await app.ready();
    return {
      services,
      sent,
      ...requester(app, services, sent),
      async close() {
        await app.close();
        await services.close();
      },
    };
  }

  async function register(p: Phase, email: string): Promise<void> {
    const reply = await p.post(`${auth}/register`, registration({ email }));
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
  }

  async function login(p: Phase, email: string): Promise<string> {
    const reply = await p.post(`${auth}/login`, { identity: email, password: registration().password });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    return cookieValue(reply, sessionCookie);
  }

  async function csrfToken(p: Phase, session?: string): Promise<string> {
    const reply = await p.get(
      `${api}/csrf-cookie`,
      session === undefined ? {} : { cookie: `${sessionCookie}=${session}` },
    );
    assert.equal(reply.status, 204);
    return cookieValue(reply, 'XSRF-TOKEN');
  }

  let nobodies = 0;
  /** A browser POST that does nothing but pass (202) or fail (419) the CSRF check. */
  async function csrfAnswer(p: Phase, token: string, session?: string): Promise<number> {
    // A new unknown identity each time, so its once-a-minute limit never answers for the check.
    const identity = `nobody-${(nobodies += 1)}@example.com`;
    return (await p.post(`${auth}/password/forgot`, { identity }, asBrowser(token, session))).status;
  }

  async function pendingMessages(to: string): Promise<Array<{ status: string; last_error: string | null }>> {
    return database.db.query('SELECT status, last_error FROM outbox WHERE recipient = $1 ORDER BY id', [to]);
  }

  test('a session, a pending verification code, a reset code, a CSRF token and a queued message made under A work after a restart with B and A as previous', async () => {
    // Under A alone, as the deployment ran before the rotation.
    const a = await phase({ APP_SECRET: secretA });
    await register(a, 'session@example.com');
    await register(a, 'reset@example.com');
    await register(a, 'pending@example.com');
    await a.post(`${auth}/verify`, {
      identity: 'reset@example.com',
      code: await a.codeFor('reset@example.com', 'verification'),
    });
    const pendingCode = await a.codeFor('pending@example.com', 'verification');
    assert.equal((await a.post(`${auth}/password/forgot`, { identity: 'reset@example.com' })).status, 202);
    const resetCode = await a.codeFor('reset@example.com', 'password_reset');
    const session = await login(a, 'session@example.com');
    const token = await csrfToken(a, session);
    // Queued under A and not sent before the restart: its body is sealed with A's key.
    await register(a, 'queued@example.com');
    assert.deepEqual(await pendingMessages('queued@example.com'), [{ status: 'pending', last_error: null }]);
    await a.close();

    const b = await phase({ APP_SECRET: secretB, APP_SECRET_PREVIOUS: secretA });
    try {
      assert.equal((await b.get(`${auth}/session`, { cookie: `${sessionCookie}=${session}` })).status, 200);
      assert.equal(await csrfAnswer(b, token, session), 202, 'the CSRF token signed with A passes');
      assert.equal(await csrfAnswer(b, `${token.slice(0, -2)}xx`, session), 419, 'a tampered token still fails');
      const sent = await b.deliver();
      assert.deepEqual(
        sent.map((message) => message.to),
        ['queued@example.com'],
        'the message sealed with A is opened and sent',
      );
      assert.deepEqual(await pendingMessages('queued@example.com'), [{ status: 'sent', last_error: null }]);
      const queuedCode = codeIn(sent[0]!.content.text);
      const verified = await b.post(`${auth}/verify`, { identity: 'queued@example.com', code: queuedCode });
      assert.equal(verified.status, 200, 'the code in the queued message verifies');
      const pending = await b.post(`${auth}/verify`, { identity: 'pending@example.com', code: pendingCode });
      assert.equal(pending.status, 200, 'the verification code made under A verifies');
      const reset = await b.post(`${auth}/password/reset`, {
        identity: 'reset@example.com',
        code: resetCode,
        password: 'rotated secret 2027',
        password_confirmation: 'rotated secret 2027',
      });
      assert.equal(reset.status, 200, `the reset code made under A resets: ${JSON.stringify(reset.body)}`);
    } finally {
      await b.close();
    }
  });

  test('what is made after the rotation is made with B: A alone accepts none of it, B alone all of it', async () => {
    const b = await phase({ APP_SECRET: secretB, APP_SECRET_PREVIOUS: secretA });
    await register(b, 'made-under-b@example.com');
    const code = await b.codeFor('made-under-b@example.com', 'verification');
    const session = await login(b, 'made-under-b@example.com');
    const token = await csrfToken(b, session);
    await register(b, 'queued-under-b@example.com');
    await b.close();

    // The sealed body and the code MAC are made with B's own keys, not A's.
    const [row] = await database.db.query<{ sealed_body: string }>(
      'SELECT sealed_body FROM outbox WHERE recipient = $1',
      ['queued-under-b@example.com'],
    );
    assert.throws(() => unsealContent(deriveKeys(secretA).outbox, row!.sealed_body));
    assert.match(unsealContent(deriveKeys(secretB).outbox, row!.sealed_body).text, /\b\d{6}\b/);

    const a = await phase({ APP_SECRET: secretA });
    try {
      assert.equal(await csrfAnswer(a, token, session), 419, 'A alone refuses the token signed with B');
      const refused = await a.post(`${auth}/verify`, { identity: 'made-under-b@example.com', code });
      assert.equal(refused.status, 422, 'A alone refuses the code made under B');
      assert.equal(refused.body.code, 'invalid_identity_challenge');
      assert.deepEqual(await a.deliver(), [], 'A alone cannot open the body sealed with B');
      const [queued] = await pendingMessages('queued-under-b@example.com');
      assert.equal(queued!.status, 'pending', 'it waits for a retry instead of being lost');
      assert.equal(queued!.last_error, 'sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS');
    } finally {
      await a.close();
    }

    const onlyB = await phase({ APP_SECRET: secretB });
    try {
      assert.equal(await csrfAnswer(onlyB, token, session), 202);
      const verified = await onlyB.post(`${auth}/verify`, { identity: 'made-under-b@example.com', code });
      assert.equal(verified.status, 200, 'B alone accepts the code made under B (one wrong try spent under A)');
      await database.db.query(`UPDATE outbox SET next_attempt_at = now() WHERE recipient = $1`, [
        'queued-under-b@example.com',
      ]);
      const sent = await onlyB.deliver();
      assert.deepEqual(
        sent.map((message) => message.to),
        ['queued-under-b@example.com'],
      );
    } finally {
      await onlyB.close();
    }
  });

  test('once A is dropped from the list, its code, CSRF token and sealed message are refused; sessions never depended on it', async () => {
    const a = await phase({ APP_SECRET: secretA });
    await register(a, 'dropped@example.com');
    const code = await a.codeFor('dropped@example.com', 'verification');
    const session = await login(a, 'dropped@example.com');
    const token = await csrfToken(a, session);
    await register(a, 'dropped-queued@example.com');
    await a.close();

    const onlyB = await phase({ APP_SECRET: secretB });
    try {
      assert.equal(await csrfAnswer(onlyB, token, session), 419, 'the token signed with A is refused');
      const refused = await onlyB.post(`${auth}/verify`, { identity: 'dropped@example.com', code });
      assert.equal(refused.status, 422, 'the code made under A is refused');
      assert.deepEqual(await onlyB.deliver(), [], 'the body sealed with A is not sent');
      const [queued] = await pendingMessages('dropped-queued@example.com');
      assert.equal(queued!.last_error, 'sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS');
      // A session id is stored as its SHA-256, which no secret keys: a rotation signs nobody out.
      const who = await onlyB.get(`${auth}/session`, { cookie: `${sessionCookie}=${session}` });
      assert.equal(who.status, 200);
      assert.equal(who.body.customer.identity.value, 'dropped@example.com');
      // A fresh token, signed with B, is what the client's refresh on a 419 gets.
      assert.equal(await csrfAnswer(onlyB, await csrfToken(onlyB, session), session), 202);
    } finally {
      await onlyB.close();
    }
  });
});

describe('rotating the generated secret of an embedded data folder', () => {
  let dataDir: string;
  const running: ServiceProcess[] = [];

  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sfa-rot-'));
  });
  after(async () => {
    for (const service of running) await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function serve(env: Record<string, string> = {}): Promise<ServiceProcess> {
    const service = await startService({ DATA_DIR: dataDir, JANITOR_INTERVAL_SECONDS: '0', ...env });
    running.push(service);
    return service;
  }

  async function stop(service: ServiceProcess): Promise<void> {
    assert.equal(await service.stop(), 0);
    running.splice(running.indexOf(service), 1);
  }

  async function call(service: ServiceProcess, route: string, body: unknown, cookie?: string) {
    const response = await fetch(`${service.url}${auth}${route}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(cookie === undefined ? {} : { cookie }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const session = response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${sessionCookie}=`));
    return { status: response.status, cookie: session?.split(';')[0] };
  }

  /** The code the log transport wrote for `to`, once the dispatcher has sent it. */
  async function loggedCode(service: ServiceProcess, to: string): Promise<string> {
    const deadline = performance.now() + 15_000;
    for (;;) {
      const line = service.logs.find((entry) => entry['to'] === to && typeof entry['text'] === 'string');
      if (line !== undefined) return codeIn(line['text'] as string);
      if (performance.now() > deadline) throw new Error(`no message to ${to} in the service log`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  test('naming DATA_DIR/secret in APP_SECRET_PREVIOUS keeps its codes and sessions working under an explicit APP_SECRET', async () => {
    const first = await serve();
    const generated = fs.readFileSync(path.join(dataDir, 'secret'), 'utf8').trim();
    assert.equal((await call(first, '/register', registration({ email: 'embedded@example.com' }))).status, 201);
    const code = await loggedCode(first, 'embedded@example.com');
    const loggedIn = await call(first, '/login', {
      identity: 'embedded@example.com',
      password: registration().password,
    });
    assert.equal(loggedIn.status, 200);
    await stop(first);

    const rotated = await serve({ APP_SECRET: secretB, APP_SECRET_PREVIOUS: generated });
    assert.equal((await call(rotated, '/session', undefined, loggedIn.cookie)).status, 200);
    assert.equal((await call(rotated, '/verify', { identity: 'embedded@example.com', code })).status, 200);
    assert.equal((await call(rotated, '/register', registration({ email: 'after@example.com' }))).status, 201);
    const newCode = await loggedCode(rotated, 'after@example.com');
    await stop(rotated);

    // Without APP_SECRET the folder's generated secret is the only one again: B's code is refused.
    const back = await serve();
    assert.equal((await call(back, '/verify', { identity: 'after@example.com', code: newCode })).status, 422);
    await stop(back);
  });
});
