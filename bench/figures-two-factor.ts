import http from 'node:http';
import { stepOf, totpAt } from '../test/helpers/totp.js';
import {
  cpuSummary,
  format,
  measuredRound,
  median,
  medianMainMs,
  progress,
  withService,
  type BenchContext,
  type Row,
} from './context.js';
import { ensureCustomers, hashingConnections } from './customer-load.js';
import { nextClientAddress, nextEmail, returningAddress, statusText, sum, type LoadResult } from './load.js';
import type { ServiceCpu } from './proc.js';
import { freePort, type Server } from './servers.js';

/**
 * Figure 17: a sign-in with a second step (TOTP), a password login and then
 * `POST /two-factor/verify` with the app's code, against the password login alone, both as
 * returning shoppers sign in (each customer from a /24 of its own, a known device, as in 9c) and
 * driven alike (`hashingConnections` callers in a closed loop, each sign-in timed from its first
 * request to its last answer). The customers with the second step set it up through the API as a
 * shopper does (registered, proven by staff through the admin API, signed in, setup, confirm).
 */

const auth = '/api/v1/customer/auth';
const adminToken = 'bench-admin-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
const pendingCookie = 'storefront_two_factor';
/** returningAddress's customer numbers of this figure's customers: apart from the login figures'. */
const addressOffset = 40_000;
/** Customers set up in parallel: enough to keep the hashing threads busy. */
const setupConcurrency = 16;
/** The plain login's customers, each signed in once before the rounds so its device is known. */
const plainCustomers = 256;

interface Answer {
  status: number;
  body: string;
  cookies: string[];
}

/** One JSON POST over `agent`, as the load sends them (X-Forwarded-For from `address`). */
function post(
  agent: http.Agent,
  base: string,
  path: string,
  body: unknown,
  address: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      new URL(path, base),
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'x-forwarded-for': address,
          ...headers,
        },
        timeout: 10_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const cookies = (response.headers['set-cookie'] ?? []).map((line) => line.split(';')[0]!);
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString(), cookies });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.end(payload);
  });
}

function cookieNamed(answer: Answer, name: string): string {
  const cookie = answer.cookies.find((line) => line.startsWith(`${name}=`));
  if (cookie === undefined)
    throw new Error(`no ${name} cookie in an answer ${answer.status}: ${answer.body.slice(0, 200)}`);
  return cookie;
}

/** A customer with the second step on: its secret and the last 30-second step it signed in with. */
interface SecondStepCustomer {
  identity: string;
  secret: string;
  lastStep: number;
  visits: number;
  busy: boolean;
}

async function admin(service: Server, method: string, path: string, body: unknown): Promise<void> {
  const answer = await fetch(`${service.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (answer.status !== 200)
    throw new Error(`admin ${method} ${path} answered ${answer.status}: ${text.slice(0, 200)}`);
}

/** Registers, proves (admin API), signs in and sets up the second step of one customer. */
async function setUpCustomer(
  context: BenchContext,
  service: Server,
  agent: http.Agent,
  index: number,
): Promise<SecondStepCustomer> {
  const email = nextEmail('second-step');
  const registered = await post(
    agent,
    service.url,
    `${auth}/register`,
    { name: 'Bench Second Step', email, password: context.password, password_confirmation: context.password },
    nextClientAddress(),
  );
  if (registered.status !== 201) throw new Error(`register answered ${registered.status}: ${registered.body}`);
  const { id } = JSON.parse(registered.body) as { id: string };
  // Staff mark the email proven, as a shopper's verification code would.
  await admin(service, 'PATCH', `/stores/default/customers/${id}`, { verified: true });
  const customer: SecondStepCustomer = { identity: email, secret: '', lastStep: 0, visits: 0, busy: false };
  const address = () => returningAddress(addressOffset + index, (customer.visits += 1));
  const login = await post(
    agent,
    service.url,
    `${auth}/login`,
    { identity: email, password: context.password },
    address(),
  );
  if (login.status !== 200) throw new Error(`login answered ${login.status}: ${login.body}`);
  const session = { cookie: cookieNamed(login, 'storefront_session') };
  const setup = await post(
    agent,
    service.url,
    `${auth}/account/two-factor/setup`,
    { current_password: context.password },
    address(),
    session,
  );
  if (setup.status !== 200) throw new Error(`two-factor setup answered ${setup.status}: ${setup.body}`);
  customer.secret = (JSON.parse(setup.body) as { secret: string }).secret;
  const step = stepOf();
  const confirmed = await post(
    agent,
    service.url,
    `${auth}/account/two-factor/confirm`,
    { code: totpAt(customer.secret, step) },
    address(),
    session,
  );
  if (confirmed.status !== 200) throw new Error(`two-factor confirm answered ${confirmed.status}: ${confirmed.body}`);
  customer.lastStep = step;
  return customer;
}

/** `count` customers with the second step on, set up `setupConcurrency` at a time. */
async function secondStepCustomers(context: BenchContext, service: Server, count: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: setupConcurrency });
  const customers: SecondStepCustomer[] = new Array(count);
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: setupConcurrency }, async () => {
        for (let index = next++; index < count; index = next++)
          customers[index] = await setUpCustomer(context, service, agent, index);
      }),
    );
  } finally {
    agent.destroy();
  }
  return customers;
}

/**
 * Each 30-second step of a customer's app is accepted once, and one step either side of now: a
 * customer signs in with the step now or the next, never one at or before the last it used, and
 * never twice at once. The first free customer from the cursor on; when none is (too few
 * customers for the rate), the caller waits for the next step, and the wait is counted.
 */
function takeCustomer(customers: SecondStepCustomer[], cursor: { at: number }) {
  const now = stepOf();
  for (let tried = 0; tried < customers.length; tried += 1) {
    const customer = customers[cursor.at++ % customers.length]!;
    if (customer.busy) continue;
    const step = Math.max(customer.lastStep + 1, now);
    if (step > now + 1) continue;
    customer.busy = true;
    customer.lastStep = step;
    return { customer, index: (cursor.at - 1) % customers.length, step };
  }
  return undefined;
}

interface DriverResult extends LoadResult {
  /** Times a caller found no customer with a step left and waited for the next one. */
  starved: number;
}

/**
 * `connections` callers, each signing in one after another for `seconds`: `signIn` resolves with
 * the statuses of its requests, and a sign-in counts as done when every one was 2xx.
 */
async function drive(
  seconds: number,
  connections: number,
  signIn: (agent: http.Agent) => Promise<number[] | 'starved'>,
): Promise<DriverResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let starved = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        const begun = performance.now();
        try {
          const statuses = await signIn(agent);
          if (statuses === 'starved') {
            starved += 1;
            const untilStep = 30_000 - (Date.now() % 30_000) + 10;
            await new Promise((resolve) =>
              setTimeout(resolve, Math.max(0, Math.min(untilStep, deadline - performance.now()))),
            );
            continue;
          }
          latencies.push(performance.now() - begun);
          for (const status of statuses) statusCounts[String(status)] = (statusCounts[String(status)] ?? 0) + 1;
          if (statuses.every((status) => status >= 200 && status < 300)) ok += 1;
          else non2xx += 1;
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  const at = (share: number) =>
    sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]!;
  return {
    responses: latencies.length,
    seconds: elapsed,
    okPerSecond: ok / elapsed,
    non2xx,
    errors,
    statusCounts,
    latency: { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? Number.NaN },
    starved,
  };
}

export async function figureSecondStepSignIn(context: BenchContext): Promise<Row> {
  const port = await freePort();
  return withService(
    context,
    '17',
    async (service) => {
      await admin(service, 'PATCH', '/stores/default', { settings: { 'auth.two_factor': 'optional' } });
      try {
        await ensureCustomers(context, service, plainCustomers);
        // A customer signs in at most once a 30-second step (twice at first: now and the next
        // step), so the load needs about a step's worth of sign-ins in customers; a caller that
        // finds none left waits for the next step, which the row reports and counts as not met.
        const wanted = Math.ceil(context.seconds * 150 * 2.5);
        const setupStarted = performance.now();
        let customers: SecondStepCustomer[] | undefined;
        // The store's setting reaches the running service within its store refresh.
        for (const started = performance.now(); customers === undefined;) {
          try {
            customers = await secondStepCustomers(context, service, wanted);
          } catch (error) {
            if (!/setup answered 404/.test(String(error)) || performance.now() - started > 10_000) throw error;
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        }
        progress(
          context,
          `fig 17: ${customers.length} customers with a second step set up through the API in ${format((performance.now() - setupStarted) / 1000, 1)} s`,
        );
        const plain = context.customers.slice(0, plainCustomers);
        const plainVisits = plain.map(() => 0);
        let plainCursor = 0;
        const plainLogin = async (agent: http.Agent) => {
          const index = plainCursor++ % plain.length;
          const address = returningAddress(index, (plainVisits[index]! += 1));
          const login = await post(
            agent,
            service.url,
            `${auth}/login`,
            { identity: plain[index]!, password: context.password },
            address,
          );
          return [login.status];
        };
        const cursor = { at: 0 };
        const secondStepSignIn = async (agent: http.Agent): Promise<number[] | 'starved'> => {
          const taken = takeCustomer(customers, cursor);
          if (taken === undefined) return 'starved';
          const { customer, index, step } = taken;
          try {
            const address = returningAddress(addressOffset + index, (customer.visits += 1));
            const login = await post(
              agent,
              service.url,
              `${auth}/login`,
              { identity: customer.identity, password: context.password },
              address,
            );
            if (login.status !== 200 || !login.body.includes('two_factor_required')) return [login.status, 0];
            const verified = await post(
              agent,
              service.url,
              `${auth}/two-factor/verify`,
              { code: totpAt(customer.secret, step) },
              address,
              { cookie: cookieNamed(login, pendingCookie) },
            );
            return [login.status, verified.status];
          } finally {
            customer.busy = false;
          }
        };
        // Every plain customer's device known, then a second of each load to warm the service up.
        await drive(Math.ceil(plain.length / 60), hashingConnections, plainLogin);
        await drive(1, hashingConnections, secondStepSignIn);

        const results = { plain: [] as DriverResult[], secondStep: [] as DriverResult[] };
        const cpus = { plain: [] as ServiceCpu[], secondStep: [] as ServiceCpu[] };
        for (let round = 1; round <= context.rounds; round += 1) {
          for (const [name, signIn] of [
            ['secondStep', secondStepSignIn],
            ['plain', plainLogin],
          ] as const) {
            const { result, cpu } = await measuredRound(
              context,
              '17',
              service,
              () => drive(context.seconds, hashingConnections, signIn),
              (done) => done.responses,
            );
            results[name].push(result);
            cpus[name].push(cpu);
          }
          const last = (list: DriverResult[]) => list[list.length - 1]!;
          progress(
            context,
            `fig 17 round ${round}/${context.rounds}: second-step sign-ins ${format(last(results.secondStep).okPerSecond, 1)}/s (${statusText(last(results.secondStep))}, p99 ${format(last(results.secondStep).latency.p99)} ms${last(results.secondStep).starved > 0 ? `, ${last(results.secondStep).starved} waits for a step` : ''}); password logins ${format(last(results.plain).okPerSecond, 1)}/s (${statusText(last(results.plain))}, p99 ${format(last(results.plain).latency.p99)} ms)`,
          );
        }
        const value = median(results.secondStep.map((result) => result.okPerSecond));
        const baseline = median(results.plain.map((result) => result.okPerSecond));
        const all = [...results.secondStep, ...results.plain];
        const non2xx = sum(all, (result) => result.non2xx);
        const errors = sum(all, (result) => result.errors);
        const starved = results.secondStep.reduce((total, result) => total + result.starved, 0);
        return {
          id: '17',
          label: `sign-ins/s with a second step (a password login, then POST /two-factor/verify with the app's code: one sign-in), ${hashingConnections} connections, each customer from a /24 of its own (a known device), against the password login alone driven alike`,
          unit: 'req/s',
          value,
          baseline,
          baselineLabel: 'password login alone, no second step',
          ratio: value / baseline,
          goal: { text: 'information', met: non2xx === 0 && errors === 0 && starved === 0 },
          non2xx,
          errors,
          rounds: `second step ${results.secondStep.map((result) => format(result.okPerSecond, 1)).join(' / ')}; password alone ${results.plain.map((result) => format(result.okPerSecond, 1)).join(' / ')}`,
          notes: [
            `p99 ${format(median(results.secondStep.map((result) => result.latency.p99)))} ms a sign-in against ${format(median(results.plain.map((result) => result.latency.p99)))} ms a login; p50 ${format(median(results.secondStep.map((result) => result.latency.p50)), 1)} against ${format(median(results.plain.map((result) => result.latency.p50)), 1)} ms`,
            `second step: ${cpuSummary(cpus.secondStep)} (an answer here is a whole sign-in, two requests)`,
            `password alone: ${cpuSummary(cpus.plain)}`,
            `${customers.length} customers with a second step (each step of their app accepted once)${starved > 0 ? `; CALLERS WAITED ${starved} times for a step: too few customers for the rate` : ''}`,
            ...all.filter((result) => result.non2xx + result.errors > 0).map(statusText),
          ],
          mainMs: medianMainMs(cpus.secondStep),
        };
      } finally {
        await admin(service, 'PATCH', '/stores/default', { settings: { 'auth.two_factor': 'off' } });
      }
    },
    { port, env: { ADMIN_TOKENS: adminToken } },
  );
}
