import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { createArgon2Hasher } from '../../src/auth/rules/password.js';
import { testArgon2 } from './argon2.js';
import { loadConfig, type LogLevel } from '../../src/config.js';
import type { OutgoingMessage, Transport, Transports } from '../../src/delivery/message.js';
import { openServices, type ServiceOverrides, type Services } from '../../src/services.js';
import type { Database } from '../../src/storage/database.js';
import type { CounterStore } from '../../src/storage/counters.js';
import { migrate } from '../../src/storage/migrations.js';
import { FakeClock } from './clock.js';
import { capturingLogger } from './logs.js';
import { perDescribe } from './per-describe.js';
import { openTestDatabase, openTestCounterStore, truncateAll } from './database.js';

export const testSecret = 'test-secret-test-secret-test-secret-0123456789';

/** A transport that keeps what it was given: the test reads codes from it like a mailbox. */
export class RecordingTransport implements Transport {
  readonly name = 'recording';
  readonly sent: OutgoingMessage[] = [];
  failNext = 0;

  async send(message: OutgoingMessage): Promise<void> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('recording transport told to fail');
    }
    this.sent.push(message);
  }
}

export interface Reply {
  status: number;
  headers: LightMyRequestResponse['headers'];
  body: any;
  cookies: LightMyRequestResponse['cookies'];
  raw: LightMyRequestResponse;
}

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  db: Database;
  clock: FakeClock;
  outbox: RecordingTransport;
  /** Every log line the service wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  post(url: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  get(url: string, headers?: Record<string, string>): Promise<Reply>;
  /** Waits for work behind the answers (resend, forgot) and sends every due message. */
  deliver(): Promise<OutgoingMessage[]>;
  /** The code in the newest message to `to` of that purpose (delivering first). */
  codeFor(to: string, purpose: CodePurpose): Promise<string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Environment variables for loadConfig, e.g. { STORE_IDENTITY_MODE: 'phone' }. */
  env?: Record<string, string>;
  overrides?: ServiceOverrides;
  /** Where the service's clock starts (ms since the epoch); a fixed day in January 2026 by default. */
  clockAt?: number;
  /** The level of the captured log (`logs`); `info`, as in production, by default. */
  logLevel?: LogLevel;
}

export const api = '/api/v1';
export const auth = '/api/v1/customer/auth';

export function toReply(response: LightMyRequestResponse): Reply {
  const type = String(response.headers['content-type'] ?? '');
  return {
    status: response.statusCode,
    headers: response.headers,
    // JSON and problem+json are parsed; NDJSON (an export) stays text.
    body: /(^|[/+])json\b/.test(type) && response.body !== '' ? response.json() : response.body,
    cookies: response.cookies,
    raw: response,
  };
}

/** Requests through Fastify's inject: a JSON body (or a raw string) and headers, answered as a Reply. */
export function injector(app: FastifyInstance) {
  return async (method: 'GET' | 'POST', url: string, body: unknown, headers: Record<string, string> = {}) =>
    toReply(
      await app.inject({
        method,
        url,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
    );
}

/** Runs the work behind the answers and the outbox now; resolves with the messages it sent. */
export function deliverer(services: Services, outbox: RecordingTransport) {
  return async () => {
    await services.background.drain();
    const before = outbox.sent.length;
    await services.dispatcher.drain();
    return outbox.sent.slice(before);
  };
}

export type CodePurpose = 'verification' | 'password_reset' | 'invitation' | 'sign_in' | 'identity_change';

/** How a test talks to a built app: requests, delivery, and the codes its messages carried. */
export function requester(app: FastifyInstance, services: Services, outbox: RecordingTransport) {
  const inject = injector(app);
  const deliver = deliverer(services, outbox);
  return {
    post: (url: string, body?: unknown, headers?: Record<string, string>) => inject('POST', url, body, headers),
    get: (url: string, headers?: Record<string, string>) => inject('GET', url, undefined, headers),
    deliver,
    async codeFor(to: string, purpose: CodePurpose): Promise<string> {
      await deliver();
      const message = outbox.sent.filter((m) => m.to === to && m.purpose === purpose).at(-1);
      const code = message?.content.text.match(/\b\d{6}\b/)?.[0];
      if (code === undefined) throw new Error(`no ${purpose} code was sent to ${to}`);
      return code;
    },
  };
}

export interface HarnessOptions {
  /** Where each test's counters live; by default memory, or Redis with REDIS_URL. */
  counterStore?: () => Promise<CounterStore>;
}

/**
 * One database per test file, a fresh service per test: `const harness = await createHarness()`,
 * then `const t = await harness.start({...})` in each test and `await t.close()` after it.
 */
export async function createHarness({ counterStore = () => openTestCounterStore() }: HarnessOptions = {}) {
  const database = await openTestDatabase();
  const db = database.db;
  await migrate(db);
  let current: TestApp | undefined;

  async function start(options: TestAppOptions = {}): Promise<TestApp> {
    await current?.close();
    await truncateAll(db);
    const clock = new FakeClock(options.clockAt);
    const outbox = new RecordingTransport();
    const { logger, lines: logs } = capturingLogger(options.logLevel);
    const config = loadConfig({ APP_SECRET: testSecret, DATA_DIR: '/nonexistent', ...options.env });
    const transports: Transports = { email: outbox, sms: outbox };
    const services = await openServices(config, logger, {
      db,
      secret: testSecret,
      clock,
      hasher: createArgon2Hasher(testArgon2),
      counters: options.overrides?.counters ?? (await counterStore()),
      transports,
      manualDispatch: true,
      manualWebhooks: true,
      manualJanitor: true,
      ...options.overrides,
    });
    const app = await buildApp(services);
    await app.ready();

    const testApp: TestApp = {
      app,
      services,
      db,
      clock,
      outbox,
      logs,
      ...requester(app, services, outbox),
      async close() {
        if (current === testApp) current = undefined;
        await app.close();
        await services.close();
      },
    };
    current = testApp;
    return testApp;
  }

  return {
    db,
    /** The URL of this file's database (for child processes). */
    databaseUrl: database.url,
    start,
    async close() {
      await current?.close();
      await database.drop();
    },
  };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;

/**
 * A harness for the enclosing `describe`: made before its first test and closed after its last,
 * so a suite writes `const harness = useHarness();` and `await harness.start({...})` in each test.
 */
export function useHarness(options: HarnessOptions = {}): Harness {
  const current = perDescribe(
    () => createHarness(options),
    (harness) => harness.close(),
    'the harness',
  );
  return {
    get db() {
      return current().db;
    },
    get databaseUrl() {
      return current().databaseUrl;
    },
    start: (options) => current().start(options),
    close: () => current().close(),
  };
}

/** A valid registration body for an email store. */
export function registration(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    password: 'analytical engine 1843',
    password_confirmation: 'analytical engine 1843',
    ...overrides,
  };
}

/** Registers, verifies and returns the identity; for tests that start from a verified customer. */
export async function registeredCustomer(t: TestApp, overrides: Record<string, unknown> = {}) {
  const body = registration(overrides);
  const reply = await t.post(`${auth}/register`, body);
  if (reply.status !== 201) throw new Error(`register answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  return { ...body, identity: reply.body.identity.value as string, id: reply.body.id as string };
}

/** A problem document without its request id, which differs on every answer by design. */
export function withoutRequestId(body: Record<string, unknown>) {
  const { request_id: _ignored, ...rest } = body;
  return rest;
}

/** Header names and values, without those that differ on every answer by design. */
export function stableHeaders(reply: Reply) {
  const { 'x-request-id': _id, date: _date, 'content-length': _length, ...rest } = reply.headers;
  return rest;
}
