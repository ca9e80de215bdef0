import http from 'node:http';
import { stepOf, totpAt } from '../../test/helpers/totp.js';
import { cpuSummary, format, median, progress, sleep, withService, type BenchContext, type Row } from '../context.js';
import { auth, ensureCustomers, hashingConnections } from '../customer-load.js';
import {
  nextClientAddress,
  nextEmail,
  request,
  returningAddress,
  summarize,
  type Answer,
  type LoadResult,
} from '../load.js';
import { p99s, ratioRow, runRounds } from '../rounds.js';
import type { Server } from '../servers.js';

/**
 * Figure 17: a sign-in with a second step (TOTP): a password login, then `POST /two-factor/verify`
 * with the app's code, against the password login alone, both as returning shoppers sign in (each
 * customer from a /24 of its own, as in 9c) from `hashingConnections` callers in a closed loop, each
 * sign-in timed from its first request to its last answer. The customers set the step up through
 * the API as a shopper does (registered, proven by staff through the admin API, signed in, setup, confirm).
 */

/**
 * Each admin token may make 1,000 calls a minute, and setting up 1,500 customers takes about a
 * minute: the calls go round several tokens. (In production mode the count lives in Redis, so one
 * token ran out there and not with the embedded default's per-process count.)
 */
const adminTokens = Array.from({ length: 4 }, (_, n) => `bench-admin-token-${n}-BBBBBBBBBBBBBBBBBBBBBBBBBBBB`);
let adminCalls = 0;
const pendingCookie = 'storefront_two_factor';
/** returningAddress's customer numbers of this figure's customers: apart from the login figures'. */
const addressOffset = 40_000;
const setupConcurrency = 16;
/** The plain login's customers, each signed in once before the rounds so its device is known. */
const plainCustomers = 256;

async function post(agent: http.Agent, base: string, path: string, body: unknown, address: string, cookie?: string) {
  const headers = { 'x-forwarded-for': address, ...(cookie !== undefined && { cookie }) };
  const answer = await request(agent, base, { method: 'POST', path: `${auth}${path}`, body, headers });
  if (answer.status === 0) throw new Error(`POST ${path}: no answer`);
  return answer;
}

function cookieNamed(answer: Answer, name: string): string {
  const cookie = answer.cookies.find((line) => line.startsWith(`${name}=`));
  if (cookie === undefined)
    throw new Error(`no ${name} cookie in an answer ${answer.status}: ${answer.body.slice(0, 200)}`);
  return cookie;
}

async function admin(service: Server, path: string, body: unknown): Promise<void> {
  const token = adminTokens[(adminCalls += 1) % adminTokens.length];
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const answer = await fetch(`${service.adminUrl}/admin/v1${path}`, {
    method: 'PATCH',
    headers,
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (answer.status !== 200) throw new Error(`admin PATCH ${path} answered ${answer.status}: ${text.slice(0, 200)}`);
}

/** A customer with the second step on: its secret and the last 30-second step it signed in with. */
interface SecondStepCustomer {
  identity: string;
  secret: string;
  lastStep: number;
  visits: number;
  busy: boolean;
}

/** Registers, proves (admin API), signs in and sets up the second step of one customer. */
async function setUpCustomer(context: BenchContext, service: Server, agent: http.Agent, index: number) {
  const { password } = context;
  const email = nextEmail('second-step');
  const customer: SecondStepCustomer = { identity: email, secret: '', lastStep: 0, visits: 0, busy: false };
  const step = async (path: string, body: unknown, status: number, address: string, cookie?: string) => {
    const answer = await post(agent, service.url, path, body, address, cookie);
    if (answer.status !== status) throw new Error(`${path} answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    return answer;
  };
  const visit = () => returningAddress(addressOffset + index, (customer.visits += 1));
  const registration = { name: 'Bench Second Step', email, password, password_confirmation: password };
  const { id } = JSON.parse((await step('/register', registration, 201, nextClientAddress())).body) as { id: string };
  // Staff mark the email proven, as a shopper's verification code would.
  await admin(service, `/stores/default/customers/${id}`, { verified: true });
  const session = cookieNamed(await step('/login', { identity: email, password }, 200, visit()), 'storefront_session');
  const setup = await step('/account/two-factor/setup', { current_password: password }, 200, visit(), session);
  customer.secret = (JSON.parse(setup.body) as { secret: string }).secret;
  const now = stepOf();
  await step('/account/two-factor/confirm', { code: totpAt(customer.secret, now) }, 200, visit(), session);
  customer.lastStep = now;
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
 * Each 30-second step of an app is accepted once, one step either side of now: a customer signs in
 * with the step now or the next, never one at or before its last, never twice at once. None free
 * (too few customers for the rate): the caller waits for the next step, and the wait is counted.
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

/** `connections` callers signing in one after another; a sign-in is done when each of its requests was 2xx. */
async function drive(
  seconds: number,
  signIn: (agent: http.Agent) => Promise<number[] | 'starved'>,
): Promise<DriverResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: hashingConnections });
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  const counts = { ok: 0, non2xx: 0, errors: 0, starved: 0 };
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: hashingConnections }, async () => {
      while (performance.now() < deadline) {
        const begun = performance.now();
        try {
          const statuses = await signIn(agent);
          if (statuses === 'starved') {
            counts.starved += 1;
            await sleep(Math.min(30_000 - (Date.now() % 30_000) + 10, deadline - performance.now()));
            continue;
          }
          latencies.push(performance.now() - begun);
          for (const status of statuses) statusCounts[status] = (statusCounts[status] ?? 0) + 1;
          if (statuses.every((status) => status >= 200 && status < 300)) counts.ok += 1;
          else counts.non2xx += 1;
        } catch {
          counts.errors += 1;
        }
      }
    }),
  );
  agent.destroy();
  const elapsed = (performance.now() - started) / 1000;
  return { ...summarize(latencies, statusCounts, { seconds: elapsed, ...counts }), starved: counts.starved };
}

export async function figureSecondStepSignIn(context: BenchContext): Promise<Row> {
  return withService(
    context,
    '17',
    async (service) => {
      await admin(service, '/stores/default', { settings: { 'auth.two_factor': 'optional' } });
      try {
        await ensureCustomers(context, service, plainCustomers);
        // A customer signs in at most once a 30-second step (twice at first), so the load needs about
        // a step's worth of sign-ins in customers.
        const wanted = Math.ceil(context.seconds * 150 * 2.5);
        const setupStarted = performance.now();
        let customers: SecondStepCustomer[] | undefined;
        // The store's setting reaches the running service within its store refresh.
        for (const started = performance.now(); customers === undefined;) {
          try {
            customers = await secondStepCustomers(context, service, wanted);
          } catch (error) {
            if (!/setup answered 404/.test(String(error)) || performance.now() - started > 10_000) throw error;
            await sleep(500);
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
          return [
            (await post(agent, service.url, '/login', { identity: plain[index]!, password: context.password }, address))
              .status,
          ];
        };
        const cursor = { at: 0 };
        const secondStepSignIn = async (agent: http.Agent): Promise<number[] | 'starved'> => {
          const taken = takeCustomer(customers, cursor);
          if (taken === undefined) return 'starved';
          const { customer, index, step } = taken;
          try {
            const address = returningAddress(addressOffset + index, (customer.visits += 1));
            const credentials = { identity: customer.identity, password: context.password };
            const login = await post(agent, service.url, '/login', credentials, address);
            if (login.status !== 200 || !login.body.includes('two_factor_required')) return [login.status, 0];
            const code = totpAt(customer.secret, step);
            const verified = await post(
              agent,
              service.url,
              '/two-factor/verify',
              { code },
              address,
              cookieNamed(login, pendingCookie),
            );
            return [login.status, verified.status];
          } finally {
            customer.busy = false;
          }
        };
        // Every plain customer's device known, then a second of each load to warm the service up.
        await drive(Math.ceil(plain.length / 60), plainLogin);
        await drive(1, secondStepSignIn);
        const [secondStep, alone] = await runRounds(
          context,
          '17',
          [
            { name: 'second-step sign-ins', run: (s) => drive(s, secondStepSignIn), service },
            { name: 'password logins', run: (s) => drive(s, plainLogin), service },
          ],
          { ownPids: [service.pid] },
        );
        const starved = secondStep!.results.reduce((total, result) => total + result.starved, 0);
        const p = (results: LoadResult[], pick: (result: LoadResult) => number, digits = 0) =>
          format(median(results.map(pick)), digits);
        const [ours, theirs] = [secondStep!.results, alone!.results];
        return ratioRow({
          id: '17',
          label: `sign-ins/s with a second step (a password login, then POST /two-factor/verify with the app's code: one sign-in), ${hashingConnections} connections, each customer from a /24 of its own (a known device), against the password login alone driven alike`,
          ours: secondStep!,
          theirs,
          names: ['second step', 'password alone'],
          baselineLabel: 'password login alone, no second step',
          also: { text: '', met: starved === 0 },
          notes: [
            `p99 ${format(median(p99s(ours)))} ms a sign-in against ${format(median(p99s(theirs)))} ms a login; p50 ${p(ours, (r) => r.latency.p50, 1)} against ${p(theirs, (r) => r.latency.p50, 1)} ms`,
            `second step: ${cpuSummary(secondStep!.cpus)} (an answer here is a whole sign-in, two requests)`,
            `password alone: ${cpuSummary(alone!.cpus)}`,
            `${customers.length} customers with a second step (each step of their app accepted once)${starved > 0 ? `; CALLERS WAITED ${starved} times for a step: too few customers for the rate` : ''}`,
          ],
        });
      } finally {
        await admin(service, '/stores/default', { settings: { 'auth.two_factor': 'off' } });
      }
    },
    { ADMIN_TOKENS: adminTokens.join(',') },
  );
}
