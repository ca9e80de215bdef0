import { randomInt } from 'node:crypto';
import http from 'node:http';
import { Algorithm, hash } from '@node-rs/argon2';
import pg from 'pg';
import { productionArgon2 } from '../src/auth/rules/password.js';
import { systemClock } from '../src/clock.js';
import { openPostgres } from '../src/storage/postgres.js';
import { storeCacheLimit, storeFeedIntervalMs } from '../src/store/directory.js';
import { updateStore, type StoreStatus } from '../src/store/store.js';
import { embeddedBackend, productionBackend, type Backend } from './backends.js';
import {
  beforeRound,
  cpuSummary,
  cpuText,
  format,
  idleSeconds,
  median,
  progress,
  recordRss,
  rssText,
  timed,
  type BenchContext,
  type Row,
} from './context.js';
import { hashingConnections, sessionConnections } from './customer-load.js';
import { nextClientAddress, runLoad, statusText, sum, type LoadResult } from './load.js';
import {
  cpuSeconds,
  descendantPids,
  listeningPorts,
  measureServiceCpu,
  waitUntilIdle,
  type ServiceCpu,
} from './proc.js';
import { freePort, startService, type Server } from './servers.js';

/**
 * Figure 13: many stores. One deployment holds `storeCount` stores of `customersPerStore`
 * customers each, another holds one store, both on this machine in the run's mode, each on a
 * database of its own made for the figure (so what earlier figures left in the run's database
 * counts in neither). Both services run side by side and their rounds alternate; requests pick
 * their store by the Host header, a random store of the deployment's for each request.
 */

export const storeCount = 10_000;
const customersPerStore = 100;
/** The goals: throughput at least this share of one store's, memory at most this much more. */
const throughputShare = 0.95;
const memoryGrowthLimitMb = 25;
const changeVisibleLimitMs = 2_000;
const floodP99Limit = 2;
/**
 * Store B's own logins while A floods: a normal store's trickle, a tenth of the logins a second
 * the many-store service reached in 13a, at most 10 a second (about a twelfth of a quiet 2-core
 * host's). A fixed rate would not stay a trickle on a host whose other work leaves the service a
 * fraction of its cores: B would then want more than half of what is left, and queue behind
 * itself whatever the hashing line does.
 */
const quietShare = 0.1;
const quietRateLimit = 10;
/** Spans of the flood rows, in --seconds, and the fewest logins of B's a span gives its p99. */
const floodSpanFactor = 5;
const quietLoginsPerSpan = 100;
/** Stores the platform creates through the admin API in 13f (one at a time) and again in 13g (`adminConnections` at once). */
const adminCreateCount = 300;
const adminConnections = 4;
const adminCreateP99LimitMs = 50;
const adminToken = 'bench-admin-token-0123456789abcdef0123456789abcdef';
/** Pause and resume samples per store, of `changeStores` stores, idle and again under load. */
const changeStores = 3;
const figure = '13';
const auth = '/api/v1/customer/auth';

function hostOf(store: number): string {
  return `s${String(store).padStart(5, '0')}.shops.test`;
}
/** Store 1 is the one the service makes on its first start ('default'); the others are seeded. */
function slugOf(store: number): string {
  return store === 1 ? 'default' : `s${String(store).padStart(5, '0')}`;
}
/** The same identities in every store: a login finds its customer only in the store of its host. */
function identityOf(customer: number): string {
  return `shopper-${customer}@bench.example`;
}
/** Seeded session of customer k of store n; `seedStores` stores its SHA-256, as the service does. */
function sessionIdOf(store: number, customer: number): string {
  return `bench13-${store}-${customer}`;
}

interface Deployment {
  label: string;
  stores: number;
  backend: Backend;
  env: Record<string, string>;
  service: Server;
  metricsUrl: string;
  /** Seconds from spawning the measured process (on the seeded database) to its first answer. */
  restartSeconds: number;
}

/**
 * A place of the figure's own for one deployment: the mode's backend made afresh (a temporary
 * DATA_DIR; in production a database created and dropped), and in production a Redis key prefix of
 * its own, since both may get the same empty Redis database.
 */
async function newBackend(
  context: BenchContext,
  prefix: string,
): Promise<{ backend: Backend; env: Record<string, string> }> {
  if (context.mode === 'embedded') {
    const backend = embeddedBackend();
    return { backend, env: backend.env };
  }
  const { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl } = context.backend.env;
  if (databaseUrl === undefined || redisUrl === undefined) throw new Error(`figure 13 has no ${context.mode} servers`);
  const backend = await productionBackend(databaseUrl, redisUrl);
  return { backend, env: { ...backend.env, REDIS_KEY_PREFIX: prefix } };
}

/**
 * The service with a metrics listener (for its heap), on a port of its own. `startService` takes
 * the first port it sees listening for the customer listener, and the metrics listener opens
 * first, so the customer listener is the other one.
 */
async function startWithMetrics(context: BenchContext, env: Record<string, string>) {
  const metricsPort = await freePort();
  const adminPort = await freePort();
  const cpuProfileDir = context.profile?.figure === figure ? context.profile.dir : undefined;
  const started = performance.now();
  const service = await startService(
    { ...env, METRICS_PORT: String(metricsPort), ADMIN_TOKENS: adminToken },
    { adminPort, ...(cpuProfileDir !== undefined && { cpuProfileDir }) },
  );
  for (;;) {
    const port = listeningPorts(service.pid).find((candidate) => candidate !== metricsPort && candidate !== adminPort);
    if (port !== undefined) {
      return {
        service: { ...service, url: `http://127.0.0.1:${port}` },
        metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
        seconds: (performance.now() - started) / 1000,
      };
    }
    if (performance.now() - started > 90_000) {
      await service.stop();
      throw new Error(`the service listened only on its metrics port: ${service.lastLogLines.join(' | ')}`);
    }
    await sleep(50);
  }
}

/** Adds a service's warn-and-above log lines to the figure's, which decide whether it met its goals. */
function keepLogs(context: BenchContext, service: Server): void {
  const kinds = (context.serviceLogs[figure] ??= {});
  for (const [kind, count] of Object.entries(service.logKinds)) kinds[kind] = (kinds[kind] ?? 0) + count;
}

async function stopService(context: BenchContext, label: string, service: Server): Promise<void> {
  const code = await service.stop();
  keepLogs(context, service);
  if (code !== 0)
    progress(
      context,
      `fig 13 ${label}: service exited with ${code}; last log lines: ${service.lastLogLines.join(' | ')}`,
    );
}

/**
 * Stores 2…`stores` (store 1 is the service's own first store, given the host of number 1), each
 * with its host and `customersPerStore` customers with one live session each, in plain SQL on the
 * service's database: one real PHC string (the production parameters) serves every customer. New
 * sign-in notices are off in every store of both deployments: the benchmark's never-reused client
 * addresses make nearly every login of the many-store deployment a new device (each customer logs
 * in rarely) and far fewer of the one-store one (each of its 100 customers logs in often), so
 * with notices on the two would queue and send different numbers of messages for the benchmark's
 * sake, not the store count's. Devices are still recorded either way.
 *
 * The sessions were last seen an hour ahead: the session check writes last_seen_at at most once
 * in 5 minutes per session, so the one-store deployment's 100 sessions would each be written once
 * while a million drawn at random would nearly all be written on their first check; that measures
 * how recently sessions were used, not how many stores there are. This way neither writes.
 */
async function seedStores(databaseUrl: string, passwordHash: string, stores: number, log: (line: string) => void) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // A bulk load: a crash would only lose the figure's own rows.
    await client.query('SET synchronous_commit = off');
    const noNotices = JSON.stringify({ 'auth.sign_in_notices': false });
    await client.query(
      `UPDATE stores SET settings = settings || $1::jsonb, version = nextval('store_versions') WHERE id = 'default'`,
      [noNotices],
    );
    await client.query(`INSERT INTO store_hosts (host, store_id) VALUES ($1, 'default')`, [hostOf(1)]);
    await client.query(
      `INSERT INTO stores (id, slug, name, status, identity_mode, settings, created_at, updated_at)
         SELECT gen_random_uuid()::text, 's' || lpad(n::text, 5, '0'), 'Shop ' || n, 'active', 'email', $1::jsonb, now(), now()
           FROM generate_series(2, $2::int) AS n`,
      [noNotices, stores],
    );
    await client.query(
      `INSERT INTO store_hosts (host, store_id) SELECT slug || '.shops.test', id FROM stores WHERE slug ~ '^s[0-9]{5}$'`,
    );
    const batch = 1_000;
    for (let first = 1; first <= stores; first += batch) {
      const last = Math.min(stores, first + batch - 1);
      await client.query(
        `WITH numbered AS (
           SELECT store_id, substr(host, 2, 5)::int AS n FROM store_hosts
            WHERE host ~ '^s[0-9]{5}\\.shops\\.test$' AND substr(host, 2, 5)::int BETWEEN $2 AND $3),
         added AS (
           INSERT INTO customers (store_id, id, name, identity_type, identity_value, password_hash, verified_at, created_at, updated_at)
             SELECT store_id, gen_random_uuid(), 'Shopper ' || k, 'email', 'shopper-' || k || '@bench.example', $1, now(), now(), now()
               FROM numbered CROSS JOIN generate_series(1, $4::int) AS k
           RETURNING store_id, id, identity_value)
         INSERT INTO sessions (store_id, id_hash, customer_id, created_at, last_seen_at, expires_at)
           SELECT a.store_id,
                  rtrim(translate(encode(sha256(convert_to('bench13-' || n.n || '-' || substring(a.identity_value FROM 'shopper-([0-9]+)@'), 'UTF8')), 'base64'), '+/', '-_'), '='),
                  a.id, now(), now() + interval '1 hour', now() + interval '7 days'
             FROM added a JOIN numbered n USING (store_id)`,
        [passwordHash, first, last, customersPerStore],
      );
      if (last % 5_000 === 0 || last === stores) log(`seeded ${format(last)} of ${format(stores)} stores`);
    }
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

/**
 * A deployment of `stores` stores: a first start makes its schema and first store, the stores are
 * seeded, and the measured process is a restart on the seeded database, as an operator's would be.
 */
async function openDeployment(
  context: BenchContext,
  label: string,
  stores: number,
  passwordHash: string,
  prefix: string,
): Promise<Deployment> {
  const { backend, env } = await newBackend(context, prefix);
  try {
    const first = await startWithMetrics(context, env);
    try {
      await waitUntilIdle(first.service.pid);
      const started = performance.now();
      await seedStores(backend.serverUrl(backend.serviceDatabase), passwordHash, stores, (line) =>
        progress(context, `fig 13 ${label}: ${line}`),
      );
      progress(
        context,
        `fig 13 ${label}: ${format(stores)} stores, ${format(stores * customersPerStore)} customers and sessions seeded in ${format((performance.now() - started) / 1000, 1)} s`,
      );
    } finally {
      await stopService(context, label, first.service);
    }
    const { service, metricsUrl, seconds } = await startWithMetrics(context, env);
    progress(
      context,
      `fig 13 ${label}: service pid ${service.pid} listening at ${service.url} after ${format(seconds, 1)} s, RSS ${format(service.memory().mb)} MB`,
    );
    return { label, stores, backend, env, service, metricsUrl, restartSeconds: seconds };
  } catch (error) {
    await backend.cleanup().catch(() => undefined);
    throw error;
  }
}

async function closeDeployment(context: BenchContext, deployment: Deployment): Promise<void> {
  await stopService(context, deployment.label, deployment.service);
  await deployment.backend.cleanup();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface Call {
  method: 'GET' | 'POST';
  path: string;
  store: number;
  cookie?: string;
  body?: unknown;
}

/** Status 0: a connection error or a timeout. */
interface Answer {
  status: number;
  setCookie: string[];
}

/**
 * One request with a store's Host header, which neither fetch nor runOpenLoad lets the caller set,
 * from an address of its own (X-Forwarded-For) like every request of the benchmark.
 */
function call(agent: http.Agent, url: string, request: Call): Promise<Answer> {
  const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
  return new Promise((resolve) => {
    const sent = http.request(
      new URL(request.path, url),
      {
        method: request.method,
        agent,
        timeout: 10_000,
        headers: {
          host: hostOf(request.store),
          'x-forwarded-for': nextClientAddress(),
          ...(request.cookie === undefined ? {} : { cookie: request.cookie }),
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      },
      (response) => {
        response.resume();
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, setCookie: response.headers['set-cookie'] ?? [] }),
        );
        // An answer cut off midway ends without 'end'.
        response.on('close', () => {
          if (!response.complete) resolve({ status: 0, setCookie: [] });
        });
      },
    );
    sent.on('error', () => resolve({ status: 0, setCookie: [] }));
    sent.on('timeout', () => sent.destroy(new Error('timeout')));
    sent.end(payload);
  });
}

function randomStore(deployment: Deployment, except?: ReadonlySet<number>): number {
  for (;;) {
    const store = randomInt(1, deployment.stores + 1);
    if (except?.has(store) !== true) return store;
  }
}

/** Logins at random stores of the deployment, as fast as answers come (figure 2's 32 connections). */
function loginMix(context: BenchContext, deployment: Deployment, seconds: number): Promise<LoadResult> {
  return runLoad({
    url: deployment.service.url,
    method: 'POST',
    path: `${auth}/login`,
    connections: hashingConnections,
    seconds,
    // The identities are the same in every store, so the body need not know the host's store.
    headers: () => ({ host: hostOf(randomStore(deployment)) }),
    body: () => ({ identity: identityOf(randomInt(1, customersPerStore + 1)), password: context.password }),
  });
}

/** Which seeded session a session check sends: its store and customer. */
type SessionPick = () => [store: number, customer: number];

/** A random seeded session of a random store (not one of `except`): the figure's own mix. */
function anySession(deployment: Deployment, except?: ReadonlySet<number>): SessionPick {
  return () => [randomStore(deployment, except), randomInt(1, customersPerStore + 1)];
}

/** Session checks of seeded sessions, by default random ones at random stores (figure 8's 64 connections). */
function sessionMix(
  deployment: Deployment,
  cookieName: string,
  seconds: number,
  pick: SessionPick = anySession(deployment),
): Promise<LoadResult> {
  return runLoad({
    url: deployment.service.url,
    method: 'GET',
    path: `${auth}/session`,
    connections: sessionConnections,
    seconds,
    headers: () => {
      const [store, customer] = pick();
      return { host: hostOf(store), cookie: `${cookieName}=${sessionIdOf(store, customer)}` };
    },
  });
}

/**
 * Checks the seeded deployment answers as it should before measuring it, and returns the session
 * cookie's name: a login at a store; a seeded session at its own store, refused at another
 * store's host (sessions are per store); an unknown host refused with 404.
 */
async function checkDeployment(context: BenchContext, deployment: Deployment): Promise<string> {
  const agent = new http.Agent({ keepAlive: true });
  try {
    const url = deployment.service.url;
    const store = randomStore(deployment);
    const login = await call(agent, url, {
      method: 'POST',
      path: `${auth}/login`,
      store,
      body: { identity: identityOf(1), password: context.password },
    });
    const cookie = login.setCookie.map((line) => line.split(';')[0]!).find((pair) => /session=/.test(pair));
    if (login.status !== 200 || cookie === undefined)
      throw new Error(`${deployment.label}: a seeded customer's login answered ${login.status}`);
    const cookieName = cookie.slice(0, cookie.indexOf('='));
    const seeded = `${cookieName}=${sessionIdOf(store, 2)}`;
    const own = await call(agent, url, { method: 'GET', path: `${auth}/session`, store, cookie: seeded });
    if (own.status !== 200) throw new Error(`${deployment.label}: a seeded session's check answered ${own.status}`);
    if (deployment.stores > 1) {
      const other = store === 1 ? 2 : store - 1;
      const elsewhere = await call(agent, url, {
        method: 'GET',
        path: `${auth}/session`,
        store: other,
        cookie: seeded,
      });
      if (elsewhere.status !== 401)
        throw new Error(`${deployment.label}: a session checked at another store's host answered ${elsewhere.status}`);
    }
    const unknown = await call(agent, url, { method: 'GET', path: `${auth}/session`, store: deployment.stores + 1 });
    if (unknown.status !== 404) throw new Error(`${deployment.label}: an unknown host answered ${unknown.status}`);
    return cookieName;
  } finally {
    agent.destroy();
  }
}

/**
 * A session check at every store, round-robin, `storeCount` checks in all in either deployment (the
 * one-store deployment's all at its store), so both have served as many requests and the
 * many-store service holds every store in its cache. Returns the seconds it took.
 */
async function serveEveryStore(deployment: Deployment, cookieName: string): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: hashingConnections });
  const started = performance.now();
  let next = 0;
  const odd: Record<string, number> = {};
  const worker = async () => {
    while (next < storeCount) {
      const store = (next++ % deployment.stores) + 1;
      const customer = randomInt(1, customersPerStore + 1);
      const answer = await call(agent, deployment.service.url, {
        method: 'GET',
        path: `${auth}/session`,
        store,
        cookie: `${cookieName}=${sessionIdOf(store, customer)}`,
      });
      if (answer.status !== 200) odd[answer.status] = (odd[answer.status] ?? 0) + 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: hashingConnections }, worker));
  } finally {
    agent.destroy();
  }
  if (Object.keys(odd).length > 0)
    throw new Error(`${deployment.label}: serving every store answered ${JSON.stringify(odd)}`);
  return (performance.now() - started) / 1000;
}

/**
 * The database server processes serving a deployment: in embedded mode the service's own
 * descendants; otherwise the backends connected to its database (the server is shared, and other
 * users' backends are not its cost).
 */
async function databasePids(deployment: Deployment): Promise<number[]> {
  if (deployment.backend.mode === 'embedded') return descendantPids(deployment.service.pid);
  const client = new pg.Client({
    connectionString: deployment.backend.serverUrl(deployment.backend.serviceDatabase),
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

/** CPU milliseconds per answer of the service process (every thread) and of its database's processes. */
interface Cost {
  serviceMs: number;
  databaseMs: number;
}

/**
 * Starts reading what a load costs in CPU; the returned function takes the number of answers.
 * On a shared host the CPU a request takes moves far less than the throughput others leave, so
 * this tells a real difference from a noisy one. A backend that ends meanwhile takes its time
 * with it; the pool keeps its connections for minutes, so none should.
 */
async function measureCost(deployment: Deployment): Promise<(answers: number) => Promise<Cost>> {
  const total = (pids: number[]) => pids.reduce((sum, pid) => sum + (cpuSeconds(pid) || 0), 0);
  const serviceBefore = cpuSeconds(deployment.service.pid);
  const before = new Map((await databasePids(deployment)).map((pid) => [pid, cpuSeconds(pid) || 0]));
  return async (answers) => {
    const serviceSeconds = cpuSeconds(deployment.service.pid) - serviceBefore;
    const after = await databasePids(deployment);
    const databaseSeconds = total(after) - after.reduce((sum, pid) => sum + (before.get(pid) ?? 0), 0);
    return { serviceMs: (serviceSeconds * 1000) / answers, databaseMs: (databaseSeconds * 1000) / answers };
  };
}

function costText(costs: Cost[]): string {
  const service = median(costs.map((cost) => cost.serviceMs));
  const database = median(costs.map((cost) => cost.databaseMs));
  const digits = service + database < 1 ? 3 : 2;
  return `CPU per answer ${format(service + database, digits)} ms (service ${format(service, digits)} + database ${format(database, digits)})`;
}

/** A measured round of one deployment, the host quiet for both services, its CPU read over it. */
async function measuredLoad(
  context: BenchContext,
  deployments: Deployment[],
  deployment: Deployment,
  load: () => Promise<LoadResult>,
): Promise<{ result: LoadResult; cpu: ServiceCpu; cost: Cost }> {
  await beforeRound(
    context,
    deployments.map((each) => each.service.pid),
  );
  const stopCost = await measureCost(deployment);
  const stopCpu = measureServiceCpu(deployment.service.pid);
  const result = await timed(context, figure, load);
  const cpu = stopCpu(result.responses);
  return { result, cpu, cost: await stopCost(result.responses) };
}

interface Side {
  login: LoadResult[];
  session: LoadResult[];
  loginCpu: ServiceCpu[];
  sessionCpu: ServiceCpu[];
  loginCost: Cost[];
  sessionCost: Cost[];
  /** The many-store service only, as information: its first store's 100 sessions, and one session of every store. */
  firstStore: LoadResult[];
  perStore: LoadResult[];
  firstStoreCost: Cost[];
  perStoreCost: Cost[];
}

const emptySide = (): Side => ({
  login: [],
  session: [],
  loginCpu: [],
  sessionCpu: [],
  loginCost: [],
  sessionCost: [],
  firstStore: [],
  perStore: [],
  firstStoreCost: [],
  perStoreCost: [],
});

/** Goals 1 and 2: logins and session checks of both deployments, rounds alternating which goes first. */
async function throughputRounds(
  context: BenchContext,
  one: Deployment,
  many: Deployment,
  cookieName: string,
): Promise<Map<Deployment, Side>> {
  const sides = new Map<Deployment, Side>([
    [one, emptySide()],
    [many, emptySide()],
  ]);
  for (const deployment of [one, many]) {
    await loginMix(context, deployment, 1);
    await sessionMix(deployment, cookieName, 1);
  }
  for (let round = 1; round <= context.rounds; round += 1) {
    // Alternate which goes first, so a drift of the host favours neither.
    for (const deployment of round % 2 === 1 ? [one, many] : [many, one]) {
      const side = sides.get(deployment)!;
      const login = await measuredLoad(context, [one, many], deployment, () =>
        loginMix(context, deployment, context.seconds),
      );
      side.login.push(login.result);
      side.loginCpu.push(login.cpu);
      side.loginCost.push(login.cost);
      const session = await measuredLoad(context, [one, many], deployment, () =>
        sessionMix(deployment, cookieName, context.seconds),
      );
      side.session.push(session.result);
      side.sessionCpu.push(session.cpu);
      side.sessionCost.push(session.cost);
      // Information: the many-store service checking the one-store deployment's 100 sessions (all
      // at its first store), then 10,000 sessions, one at each store: what a spread of stores
      // costs apart from a spread of a million sessions.
      let information = '';
      if (deployment === many) {
        const first = await measuredLoad(context, [one, many], many, () =>
          sessionMix(many, cookieName, context.seconds, () => [1, randomInt(1, customersPerStore + 1)]),
        );
        const perStore = await measuredLoad(context, [one, many], many, () =>
          sessionMix(many, cookieName, context.seconds, () => [randomStore(many), 1]),
        );
        side.firstStore.push(first.result);
        side.perStore.push(perStore.result);
        side.firstStoreCost.push(first.cost);
        side.perStoreCost.push(perStore.cost);
        information = `; first store only ${format(first.result.okPerSecond)}/s (${statusText(first.result)}, ${costText([first.cost])}), one session per store ${format(perStore.result.okPerSecond)}/s (${statusText(perStore.result)}, ${costText([perStore.cost])})`;
      }
      const memory = await recordRss(context, deployment.service, figure, `13 ${deployment.label} round ${round}`);
      progress(
        context,
        `fig 13 ${deployment.label} round ${round}/${context.rounds}: login ${format(login.result.okPerSecond, 1)}/s, p99 ${format(login.result.latency.p99)} ms (${statusText(login.result)}), ${cpuText(login.cpu)}, ${costText([login.cost])}; session check ${format(session.result.okPerSecond)}/s, p99 ${format(session.result.latency.p99, 1)} ms (${statusText(session.result)}), ${cpuText(session.cpu)}, ${costText([session.cost])}${information}; ${rssText(memory)}`,
      );
    }
  }
  return sides;
}

function throughputRow(
  id: string,
  label: string,
  one: LoadResult[],
  many: LoadResult[],
  cpus: { one: ServiceCpu[]; many: ServiceCpu[] },
  costs: { one: Cost[]; many: Cost[] },
  information: string[] = [],
  extra: LoadResult[] = [],
): Row {
  const value = median(many.map((result) => result.okPerSecond));
  const baseline = median(one.map((result) => result.okPerSecond));
  const ratio = value / baseline;
  const non2xx = sum([...one, ...many, ...extra], (result) => result.non2xx);
  const errors = sum([...one, ...many, ...extra], (result) => result.errors);
  const p99 = (results: LoadResult[]) => median(results.map((result) => result.latency.p99));
  const digits = value < 1000 ? 1 : 0;
  return {
    id,
    label,
    unit: 'req/s',
    value,
    baseline,
    baselineLabel: 'one store',
    ratio,
    goal: {
      text: `ratio ≥ ${throughputShare.toFixed(2)}`,
      met: ratio >= throughputShare && non2xx === 0 && errors === 0,
    },
    non2xx,
    errors,
    rounds: `${format(storeCount)} stores ${many.map((result) => format(result.okPerSecond, digits)).join(' / ')}; one store ${one.map((result) => format(result.okPerSecond, digits)).join(' / ')}`,
    notes: [
      `p99 ${format(p99(many), 1)} ms against one store's ${format(p99(one), 1)} ms`,
      `${format(storeCount)} stores: ${cpuSummary(cpus.many)}`,
      `one store: ${cpuSummary(cpus.one)}`,
      `${costText(costs.many)} with ${format(storeCount)} stores against ${costText(costs.one)} with one`,
      ...information,
      ...[...one, ...many, ...extra].filter((result) => result.non2xx + result.errors > 0).map(statusText),
    ],
  };
}

/** The V8 heap in use, from the service's own metrics (prom-client's default gauges). */
async function heapUsedMb(deployment: Deployment): Promise<number> {
  const answer = await fetch(deployment.metricsUrl).catch(() => undefined);
  const text = answer === undefined ? '' : await answer.text();
  const match = /^storefront_nodejs_heap_size_used_bytes (\S+)$/m.exec(text);
  return match === null ? Number.NaN : Number(match[1]) / 2 ** 20;
}

/**
 * Goal 3: both services' RSS, read at the same moment once both have been idle for `idleSeconds`
 * (past the service's own collection after a burst, src/idle-collection.ts), after each has served
 * every store and the same rounds. The heap in use, from their metrics just after, is information:
 * the idle collection runs only when the heap grew or the young generation is large, so it is the
 * heap after the service's own last collection plus what came since, not after a forced one.
 */
async function memoryRow(context: BenchContext, one: Deployment, many: Deployment): Promise<Row> {
  const [manyReading, oneReading] = await Promise.all([
    recordRss(context, many.service, figure, 'end', { idle: true }),
    // Figure 6 takes the most at idle of each figure's 'end'; the larger deployment's is the one.
    recordRss({ ...context, rss: [] }, one.service, figure, 'end', { idle: true }),
  ]);
  const [manyHeap, oneHeap] = await Promise.all([heapUsedMb(many), heapUsedMb(one)]);
  const manyMb = manyReading.idleAt!.serviceMb;
  const oneMb = oneReading.idleAt!.serviceMb;
  const growth = manyMb - oneMb;
  progress(
    context,
    `fig 13 memory at idle: ${format(storeCount)} stores ${rssText(manyReading)}, heap used ${format(manyHeap, 1)} MB; one store ${rssText(oneReading)}, heap used ${format(oneHeap, 1)} MB`,
  );
  const settled = (reading: typeof manyReading) => format(reading.settledAt.serviceMb, 1);
  return {
    id: '13c',
    label: `service process RSS growth (MB) with ${format(storeCount)} stores, every one served (its store cache full), over one store: both idle ${idleSeconds} s after the same loads`,
    unit: 'MB',
    value: growth,
    baseline: oneMb,
    baselineLabel: `one store's RSS; ${format(storeCount)} stores' ${format(manyMb, 1)} MB`,
    goal: { text: `≤ ${memoryGrowthLimitMb} MB`, met: growth <= memoryGrowthLimitMb },
    non2xx: 0,
    errors: 0,
    rounds: `RSS at idle ${format(manyMb, 1)} MB against ${format(oneMb, 1)} MB; settled 10 s after the rounds ${settled(manyReading)} against ${settled(oneReading)} MB`,
    notes: [
      `V8 heap used after the service's own idle collection (its /metrics): ${format(manyHeap, 1)} MB against ${format(oneHeap, 1)} MB (${format(manyHeap - oneHeap, 1)} MB more)`,
      `restart on the seeded database ${format(many.restartSeconds, 1)} s with ${format(storeCount)} stores, ${format(one.restartSeconds, 1)} s with one`,
    ],
  };
}

/**
 * Waits for the first answer to a session check at `store` that says `status` (paused: 503; active:
 * 200), asking again 5 ms after each answer; resolves with the answer's time, or NaN after 10 s.
 * Answers that are neither the old state's nor the new one's are counted in `odd`.
 */
async function firstAnswerShowing(
  agent: http.Agent,
  deployment: Deployment,
  request: Call,
  status: StoreStatus,
  odd: Record<string, number>,
): Promise<number> {
  const wanted = status === 'paused' ? 503 : 200;
  const before = status === 'paused' ? 200 : 503;
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    const answer = await call(agent, deployment.service.url, request);
    if (answer.status === wanted) return performance.now();
    if (answer.status !== before) odd[answer.status] = (odd[answer.status] ?? 0) + 1;
    await sleep(5);
  }
  return Number.NaN;
}

/**
 * Pauses and resumes each of `stores` through updateStore (what `storefront-auth store set --store
 * S --status …` runs) on the deployment's database, and times from each commit to the first answer
 * of the running service that shows it. The store is in the service's cache before each change,
 * so the change reaches it only through the change feed. Each commit comes at a random moment of
 * the feed's one-second cycle, so the samples do not fall into step with it.
 */
async function changeDelays(
  deployment: Deployment,
  cookieName: string,
  stores: number[],
  odd: Record<string, number>,
): Promise<number[]> {
  const db = openPostgres(deployment.backend.serverUrl(deployment.backend.serviceDatabase), { max: 1 });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const delays: number[] = [];
  try {
    for (const store of stores) {
      const request: Call = {
        method: 'GET',
        path: `${auth}/session`,
        store,
        cookie: `${cookieName}=${sessionIdOf(store, 1)}`,
      };
      const open = await call(agent, deployment.service.url, request);
      if (open.status !== 200) throw new Error(`store ${store} answered ${open.status} before its change`);
      for (const status of ['paused', 'active'] as const) {
        await sleep(randomInt(0, storeFeedIntervalMs));
        const result = await updateStore(db, systemClock, { status }, { store: slugOf(store) });
        if (!result.ok) throw new Error(`updateStore of store ${store}: ${result.reason}`);
        const committed = performance.now();
        delays.push((await firstAnswerShowing(agent, deployment, request, status, odd)) - committed);
      }
    }
  } finally {
    agent.destroy();
    await db.close();
  }
  return delays;
}

/** Goal 4: change delays with the service otherwise idle, then under session checks at other stores. */
async function changeRow(context: BenchContext, many: Deployment, cookieName: string): Promise<Row> {
  const odd: Record<string, number> = {};
  const picked = new Set<number>();
  while (picked.size < 2 * changeStores) picked.add(randomInt(2, many.stores + 1));
  const [idleStores, loadedStores] = [[...picked].slice(0, changeStores), [...picked].slice(changeStores)];
  await waitUntilIdle(many.service.pid);
  const idle = await changeDelays(many, cookieName, idleStores, odd);
  progress(context, `fig 13 store changes, service idle: ${idle.map((ms) => format(ms)).join(', ')} ms`);
  let loading = true;
  const background = (async () => {
    const results: LoadResult[] = [];
    // The load's stores never include the changing ones: a paused store's 503s are expected only there.
    while (loading) results.push(await sessionMix(many, cookieName, 1, anySession(many, picked)));
    return results;
  })();
  let loaded: number[];
  try {
    loaded = await changeDelays(many, cookieName, loadedStores, odd);
  } finally {
    loading = false;
  }
  const load = await background;
  const rate = median(load.map((result) => result.okPerSecond));
  progress(
    context,
    `fig 13 store changes under ${format(rate)} session checks/s at other stores: ${loaded.map((ms) => format(ms)).join(', ')} ms`,
  );
  const all = [...idle, ...loaded];
  const value = all.some(Number.isNaN) ? Number.NaN : Math.max(...all);
  const oddCount = Object.values(odd).reduce((total, count) => total + count, 0);
  const non2xx = sum(load, (result) => result.non2xx) + oddCount - (odd['0'] ?? 0);
  const errors = sum(load, (result) => result.errors) + (odd['0'] ?? 0);
  const summary = (delays: number[]) => `median ${format(median(delays))} ms, max ${format(Math.max(...delays))} ms`;
  return {
    id: '13d',
    label: `a store change (status paused, then active again, by updateStore) seen through the HTTP API of the running ${format(storeCount)}-store service: the most ms from the commit to the first answer showing it, ${all.length} samples`,
    unit: 'ms',
    value,
    goal: {
      text: `≤ ${format(changeVisibleLimitMs)} ms`,
      met: value <= changeVisibleLimitMs && non2xx === 0 && errors === 0,
    },
    non2xx,
    errors,
    rounds: `idle ${idle.map((ms) => format(ms)).join(', ')} ms; under load ${loaded.map((ms) => format(ms)).join(', ')} ms`,
    notes: [
      `all ${summary(all)}; idle ${summary(idle)}; under ${format(rate)} session checks/s at other stores ${summary(loaded)}`,
      `the service reads the change feed every ${format(storeFeedIntervalMs)} ms`,
      ...(oddCount === 0 ? [] : [`answers of neither state while polling: ${JSON.stringify(odd)}`]),
      ...load.filter((result) => result.non2xx + result.errors > 0).map(statusText),
    ],
  };
}

/**
 * Open-loop logins at one store, as figure 5 sends its probes (runOpenLoad, which cannot set a
 * Host header): random arrivals at a mean `rate`, over at most 10 keep-alive connections, each
 * timed from its arrival. From the benchmark's own process: at a few dozen logins a second its
 * event loop is nearly idle, and a login takes tens of milliseconds.
 */
async function openLogins(
  context: BenchContext,
  deployment: Deployment,
  store: number,
  rate: number,
  seconds: number,
): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  const inFlight = new Set<Promise<void>>();
  const send = () => {
    const arrived = performance.now();
    const done = call(agent, deployment.service.url, {
      method: 'POST',
      path: `${auth}/login`,
      store,
      body: { identity: identityOf(randomInt(1, customersPerStore + 1)), password: context.password },
    }).then(({ status }) => {
      latencies.push(performance.now() - arrived);
      statusCounts[status] = (statusCounts[status] ?? 0) + 1;
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let next = started;
  while (next < deadline) {
    const now = performance.now();
    if (now < next) await sleep(Math.max(0, Math.floor(next - now)));
    // Send every arrival that is due (timers are coarse), then draw the next gap.
    while (next <= performance.now() && next < deadline) {
      send();
      next += (-Math.log(1 - Math.random()) / rate) * 1000;
    }
  }
  await Promise.all([...inFlight]);
  agent.destroy();
  const elapsed = (performance.now() - started) / 1000;
  const errors = statusCounts['0'] ?? 0;
  delete statusCounts['0'];
  const ok = Object.entries(statusCounts)
    .filter(([code]) => code.startsWith('2'))
    .reduce((total, [, count]) => total + count, 0);
  const sorted = Float64Array.from(latencies).sort();
  const at = (share: number) => sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] ?? Number.NaN;
  return {
    responses: latencies.length,
    seconds: elapsed,
    okPerSecond: ok / elapsed,
    non2xx: latencies.length - ok - errors,
    errors,
    statusCounts,
    latency: { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? Number.NaN },
  };
}

/**
 * Goal 5: store B's logins (open-loop, see `quietShare`) alone, and while store A floods
 * logins over 32 connections as fast as answers come; both on the many-store deployment. The flood
 * starts a second before B's span and ends a second after. As information, the same trickle sent
 * to A's own store during A's flood: what B's logins would meet if they waited in A's line, so the
 * row tells the per-store hashing line's part from what a saturated host costs anyway. The three
 * spans of a round take turns going first.
 */
async function floodRow(
  context: BenchContext,
  deployments: Deployment[],
  many: Deployment,
  loginRate: number,
): Promise<Row> {
  const [floodStore, quietStore] = [2, 3];
  const rate = Math.min(quietRateLimit, Math.round(quietShare * loginRate * 10) / 10);
  const span = Math.max(floodSpanFactor * context.seconds, Math.ceil(quietLoginsPerSpan / rate));
  const spans = { alone: [] as LoadResult[], flooded: [] as LoadResult[], shared: [] as LoadResult[] };
  const floods: LoadResult[] = [];
  const cpus: ServiceCpu[] = [];
  const flood = (seconds: number) =>
    runLoad({
      url: many.service.url,
      method: 'POST',
      path: `${auth}/login`,
      connections: hashingConnections,
      seconds,
      headers: { host: hostOf(floodStore) },
      body: () => ({ identity: identityOf(randomInt(1, customersPerStore + 1)), password: context.password }),
    });
  await openLogins(context, many, quietStore, rate, 1);
  const phases = ['alone', 'flooded', 'shared'] as const;
  for (let round = 1; round <= context.rounds; round += 1) {
    for (let turn = 0; turn < phases.length; turn += 1) {
      const phase = phases[(round - 1 + turn) % phases.length]!;
      await waitUntilIdle(many.service.pid);
      await beforeRound(
        context,
        deployments.map((each) => each.service.pid),
      );
      if (phase === 'alone') {
        spans.alone.push(await timed(context, figure, () => openLogins(context, many, quietStore, rate, span)));
        continue;
      }
      const target = phase === 'flooded' ? quietStore : floodStore;
      const stopCpu = measureServiceCpu(many.service.pid);
      const [a, b] = await timed(context, figure, () =>
        Promise.all([flood(span + 2), sleep(1_000).then(() => openLogins(context, many, target, rate, span))]),
      );
      spans[phase].push(b);
      if (phase === 'flooded') {
        cpus.push(stopCpu(a.responses + b.responses));
        floods.push(a);
      }
    }
    const last = <T>(results: T[]) => results[results.length - 1]!;
    const [b, quiet, shared, a] = [last(spans.flooded), last(spans.alone), last(spans.shared), last(floods)];
    progress(
      context,
      `fig 13 flood round ${round}/${context.rounds}: store B p99 ${format(b.latency.p99, 1)} ms (p50 ${format(b.latency.p50, 1)}, ${format(b.okPerSecond, 1)}/s, ${statusText(b)}) while store A logs in ${format(a.okPerSecond, 1)}/s (${statusText(a)}); alone p99 ${format(quiet.latency.p99, 1)} ms (p50 ${format(quiet.latency.p50, 1)}, ${statusText(quiet)}); in A's own store p99 ${format(shared.latency.p99, 1)} ms (p50 ${format(shared.latency.p50, 1)}, ${statusText(shared)}); ${cpuText(last(cpus))}`,
    );
  }
  const p99 = (results: LoadResult[]) => median(results.map((result) => result.latency.p99));
  const p50 = (results: LoadResult[]) => median(results.map((result) => result.latency.p50));
  const answered = (results: LoadResult[]) => median(results.map((result) => result.okPerSecond));
  const value = p99(spans.flooded);
  const baseline = p99(spans.alone);
  const ratio = value / baseline;
  const all = [...spans.alone, ...spans.flooded, ...spans.shared, ...floods];
  const non2xx = sum(all, (result) => result.non2xx);
  const errors = sum(all, (result) => result.errors);
  const listed = (results: LoadResult[]) => results.map((result) => format(result.latency.p99, 1)).join(' / ');
  return {
    id: '13e',
    label: `store B's login p99 (open-loop, ${format(rate, 1)}/s: a tenth of 13a's rate, at most ${quietRateLimit}; ${span} s spans) while store A floods logins over ${hashingConnections} connections, of ${format(storeCount)} stores`,
    unit: 'ms',
    value,
    baseline,
    baselineLabel: 'store B alone',
    ratio,
    goal: { text: `p99 ≤ ${floodP99Limit}× B's alone`, met: ratio <= floodP99Limit && non2xx === 0 && errors === 0 },
    non2xx,
    errors,
    rounds: `flooded ${listed(spans.flooded)} ms; alone ${listed(spans.alone)} ms; p50 flooded ${format(p50(spans.flooded), 1)} ms, alone ${format(p50(spans.alone), 1)} ms; store A ${floods.map((result) => format(result.okPerSecond, 1)).join(' / ')} logins/s`,
    notes: [
      `information: the same trickle sent to A's own store during its flood, p99 ${listed(spans.shared)} ms, p50 ${format(p50(spans.shared), 1)} ms (what B's logins would meet in A's hashing line)`,
      `store B answered ${format(answered(spans.flooded), 1)} logins/s flooded, ${format(answered(spans.alone), 1)}/s alone`,
      cpuSummary(cpus),
      ...all.filter((result) => result.non2xx + result.errors > 0).map(statusText),
    ],
  };
}

/**
 * Figure 13: what 10,000 stores cost against one: login and session-check
 * throughput, the service's memory with every store cached, how soon a store change is seen, and
 * whether one store's flood of logins holds up another's.
 */
interface CreatesResult {
  latencies: number[];
  statuses: Record<string, number>;
  seconds: number;
}

/** `count` stores made through the admin API over `connections` connections, closed-loop; every answer timed. */
async function adminCreates(
  context: BenchContext,
  many: Deployment,
  first: number,
  count: number,
  connections: number,
): Promise<CreatesResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let next = first;
  const create = (index: number) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ slug: `made-${index}`, name: `Made ${index}`, hosts: [`made-${index}.new.test`] });
      const started = performance.now();
      const request = http.request(
        `${many.service.adminUrl}/admin/v1/stores`,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${adminToken}`,
            'content-type': 'application/json',
            'idempotency-key': `bench-${index}`,
          },
        },
        (response) => {
          response.resume();
          response.on('end', () => {
            latencies.push(performance.now() - started);
            statuses[String(response.statusCode)] = (statuses[String(response.statusCode)] ?? 0) + 1;
            resolve();
          });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  await waitUntilIdle(many.service.pid);
  const started = performance.now();
  await timed(context, figure, () =>
    Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < first + count) await create((next += 1));
      }),
    ),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { latencies, statuses, seconds: (performance.now() - started) / 1000 };
}

function latencyAt(sorted: number[], share: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]!;
}

function createsRow(id: string, label: string, result: CreatesResult, goal: (p99: number) => Row['goal']): Row {
  const { latencies, statuses, seconds } = result;
  const p99 = latencyAt(latencies, 0.99);
  const non2xx = latencies.length - (statuses['201'] ?? 0);
  return {
    id,
    label,
    unit: 'ms',
    value: p99,
    goal: goal(p99),
    non2xx,
    errors: 0,
    rounds: `${latencies.length} creates in ${format(seconds, 1)} s (${format(latencies.length / seconds, 1)}/s); p50 ${format(latencyAt(latencies, 0.5), 1)} ms, max ${format(latencies.at(-1)!, 1)} ms`,
    notes: [`answers by status: ${JSON.stringify(statuses)}`],
  };
}

/**
 * 13f and 13g: the platform making stores through the admin API (`POST /admin/v1/stores`, each with
 * its own slug, host and Idempotency-Key) on the deployment that holds 10,000 stores: one at a time
 * as signups come (the goal), then a burst over several connections, where creates take turns for
 * the change feed's lock at their commit (information).
 */
async function adminCreateRows(context: BenchContext, many: Deployment): Promise<Row[]> {
  const one = await adminCreates(context, many, 0, adminCreateCount, 1);
  const burst = await adminCreates(context, many, adminCreateCount, adminCreateCount, adminConnections);
  for (const [name, result] of [
    ['one at a time', one],
    [`over ${adminConnections} connections`, burst],
  ] as const)
    progress(
      context,
      `fig 13 admin creates ${name}: ${result.latencies.length} in ${format(result.seconds, 1)} s, p50 ${format(latencyAt(result.latencies, 0.5), 1)} ms, p99 ${format(latencyAt(result.latencies, 0.99), 1)} ms (${JSON.stringify(result.statuses)})`,
    );
  const clean = (result: CreatesResult) => result.latencies.length === (result.statuses['201'] ?? 0);
  return [
    createsRow(
      '13f',
      `POST /admin/v1/stores p99, one at a time (a new store with a host and an Idempotency-Key each) with ${format(storeCount)} stores present`,
      one,
      (p99) => ({ text: `≤ ${adminCreateP99LimitMs} ms`, met: p99 <= adminCreateP99LimitMs && clean(one) }),
    ),
    createsRow(
      '13g',
      `POST /admin/v1/stores p99 in a burst over ${adminConnections} connections, with ${format(storeCount + adminCreateCount)} stores present`,
      burst,
      () => ({ text: 'information', met: clean(burst) }),
    ),
  ];
}

export async function figureManyStores(context: BenchContext): Promise<Row[]> {
  if (storeCacheLimit < storeCount)
    progress(context, `fig 13: the store cache holds ${format(storeCacheLimit)} stores, fewer than the figure's`);
  const passwordHash = await hash(context.password, { algorithm: Algorithm.Argon2id, ...productionArgon2 });
  const deployments: Deployment[] = [];
  try {
    const one = await openDeployment(context, 'one store', 1, passwordHash, 'bench13-one:');
    deployments.push(one);
    const many = await openDeployment(
      context,
      `${format(storeCount)} stores`,
      storeCount,
      passwordHash,
      'bench13-many:',
    );
    deployments.push(many);
    const cookieName = await checkDeployment(context, many);
    await checkDeployment(context, one);
    for (const deployment of [one, many]) {
      await waitUntilIdle(deployment.service.pid);
      const seconds = await serveEveryStore(deployment, cookieName);
      progress(
        context,
        `fig 13 ${deployment.label}: ${format(storeCount)} session checks over its ${format(deployment.stores)} store${deployment.stores === 1 ? '' : 's'} in ${format(seconds, 1)} s`,
      );
    }
    const sides = await throughputRounds(context, one, many, cookieName);
    const [oneSide, manySide] = [sides.get(one)!, sides.get(many)!];
    const rates = (results: LoadResult[]) => results.map((result) => format(result.okPerSecond)).join(' / ');
    const rows = [
      throughputRow(
        '13a',
        `login req/s (correct password) at random stores of ${format(storeCount)} (random customers of 100 each), ${hashingConnections} connections`,
        oneSide.login,
        manySide.login,
        { one: oneSide.loginCpu, many: manySide.loginCpu },
        { one: oneSide.loginCost, many: manySide.loginCost },
      ),
      throughputRow(
        '13b',
        `GET /customer/auth/session req/s (session check) at random stores of ${format(storeCount)} (a random seeded session each), ${sessionConnections} connections`,
        oneSide.session,
        manySide.session,
        { one: oneSide.sessionCpu, many: manySide.sessionCpu },
        { one: oneSide.sessionCost, many: manySide.sessionCost },
        [
          `information, the ${format(storeCount)}-store service: its first store's 100 sessions only (the one-store pattern) ${rates(manySide.firstStore)}/s, ${costText(manySide.firstStoreCost)}; one session at each of its stores ${rates(manySide.perStore)}/s, ${costText(manySide.perStoreCost)}`,
        ],
        [...manySide.firstStore, ...manySide.perStore],
      ),
    ];
    rows.push(await memoryRow(context, one, many));
    rows.push(await changeRow(context, many, cookieName));
    rows.push(await floodRow(context, [one, many], many, rows[0]!.value));
    rows.push(...(await adminCreateRows(context, many)));
    return rows;
  } finally {
    for (const deployment of deployments) await closeDeployment(context, deployment);
    for (const [kind, count] of Object.entries(context.serviceLogs[figure] ?? {}))
      progress(context, `fig 13: services logged ${count}× ${kind}`);
  }
}
