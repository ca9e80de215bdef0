import { randomInt } from 'node:crypto';
import http from 'node:http';
import { Algorithm, hash } from '@node-rs/argon2';
import pg from 'pg';
import { productionArgon2 } from '../../src/auth/rules/password.js';
import { systemClock } from '../../src/clock.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { storeCacheLimit, storeFeedIntervalMs } from '../../src/store/directory.js';
import { updateStore } from '../../src/store/store.js';
import { embeddedBackend, productionBackend, type Backend } from '../backends.js';
import {
  beforeRound,
  cpuSummary,
  format,
  idleSeconds,
  keepLogs,
  median,
  progress,
  recordRss,
  row,
  rssText,
  sleep,
  timed,
  type BenchContext,
  type Row,
} from '../context.js';
import { auth, hashingConnections, sessionConnections } from '../customer-load.js';
import {
  failures,
  percentile,
  request,
  runLoad,
  runOpenLoad,
  troubles,
  type Answer,
  type Call,
  type LoadResult,
} from '../load.js';
import { cpuSeconds, descendantPids, measureServiceCpu, waitUntilIdle } from '../proc.js';
import { loadText, p99Row, p99s, ratioRow, type Series } from '../rounds.js';
import { freePort, startService, type Server } from '../servers.js';

const figure = '13';
const storeCount = 10_000;

/**
 * Figure 13: what 10,000 stores of 100 customers cost against one store, two deployments side by
 * side on databases of their own made for the figure: login and session-check throughput, memory
 * with every store cached, how soon a store change is seen, whether one store's flood of logins
 * holds up another's, and stores made through the admin API.
 */

const throughputShare = 0.95;
const memoryGrowthLimitMb = 25;
const changeVisibleLimitMs = 2_000;
const floodP99Limit = 2;
/**
 * Store B's trickle while A floods: a tenth of the logins a second 13a reached, at most 10 a second.
 * A fixed rate would not stay a trickle on a host whose other work leaves the service little.
 */
const quietShare = 0.1;
const quietRateLimit = 10;
/** Flood spans, in --seconds, and the fewest logins of B's a span gives its p99. */
const floodSpanFactor = 5;
const quietLoginsPerSpan = 100;
/** Stores created through the admin API in 13f (one at a time) and again in 13g (over 4 connections). */
const adminCreateCount = 300;
const adminConnections = 4;
const adminCreateP99LimitMs = 50;
/** Stores paused and resumed, idle and again under load. */
const changeStores = 3;

const customersPerStore = 100;
const adminToken = 'bench-admin-token-0123456789abcdef0123456789abcdef';

const hostOf = (store: number) => `s${String(store).padStart(5, '0')}.shops.test`;
/** Store 1 is the one the service makes on its first start ('default'); the others are seeded. */
const slugOf = (store: number) => (store === 1 ? 'default' : `s${String(store).padStart(5, '0')}`);
/** The same identities in every store: a login finds its customer only in the store of its host. */
const identityOf = (customer: number) => `shopper-${customer}@bench.example`;
/** Seeded session of customer k of store n; `seedStores` stores its SHA-256, as the service does. */
const sessionIdOf = (store: number, customer: number) => `bench13-${store}-${customer}`;
const randomCustomer = () => randomInt(1, customersPerStore + 1);

interface Deployment {
  label: string;
  stores: number;
  backend: Backend;
  service: Server;
  metricsUrl: string;
  /** Seconds from spawning the measured process (on the seeded database) to its first answer. */
  restartSeconds: number;
}

/**
 * The mode's backend made afresh for one deployment (a temporary DATA_DIR; in production a database
 * created and dropped, and a Redis key prefix of its own, since both may get the same Redis db).
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

/** The service with its metrics listener (for its heap) and admin listener, and how long it took to start. */
async function startWithMetrics(context: BenchContext, env: Record<string, string>) {
  const [metricsPort, adminPort] = [await freePort(), await freePort()];
  const cpuProfileDir = context.profile?.figure === figure ? context.profile.dir : undefined;
  const started = performance.now();
  const service = await startService(
    { ...env, ADMIN_TOKENS: adminToken },
    { adminPort, metricsPort, ...(cpuProfileDir !== undefined && { cpuProfileDir }) },
  );
  return {
    service,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    seconds: (performance.now() - started) / 1000,
  };
}

async function stopService(context: BenchContext, label: string, service: Server): Promise<void> {
  const code = await service.stop();
  keepLogs(context, figure, service);
  if (code !== 0)
    progress(
      context,
      `fig 13 ${label}: service exited with ${code}; last log lines: ${service.lastLogLines.join(' | ')}`,
    );
}

/**
 * Stores 2…`stores` (store 1 is the service's own, given host number 1), each with its host and
 * `customersPerStore` customers with one live session each, in plain SQL: one real PHC string serves
 * every customer. New sign-in notices are off in every store of both deployments: the never-reused
 * client addresses would make nearly every login of the many-store one a new device (each of its
 * customers logs in rarely) and few of the one-store one's. The sessions were last seen an hour
 * ahead, so no session check writes (a million drawn at random would nearly all be written once).
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

/** A first start makes the schema and first store, the stores are seeded, and the measured process is a restart. */
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
      const seconds = (performance.now() - started) / 1000;
      progress(
        context,
        `fig 13 ${label}: ${format(stores)} stores, ${format(stores * customersPerStore)} customers and sessions seeded in ${format(seconds, 1)} s`,
      );
    } finally {
      await stopService(context, label, first.service);
    }
    const { service, metricsUrl, seconds } = await startWithMetrics(context, env);
    progress(
      context,
      `fig 13 ${label}: service pid ${service.pid} listening at ${service.url} after ${format(seconds, 1)} s, RSS ${format(service.memory().mb)} MB`,
    );
    return { label, stores, backend, service, metricsUrl, restartSeconds: seconds };
  } catch (error) {
    await backend.cleanup().catch(() => undefined);
    throw error;
  }
}

async function closeDeployment(context: BenchContext, deployment: Deployment): Promise<void> {
  await stopService(context, deployment.label, deployment.service);
  await deployment.backend.cleanup();
}

/** One request at a store (its Host header), with a cookie when given. */
function atStore(
  agent: http.Agent,
  deployment: Deployment,
  store: number,
  call: Call & { cookie?: string },
): Promise<Answer> {
  const headers = { host: hostOf(store), ...(call.cookie !== undefined && { cookie: call.cookie }) };
  return request(agent, deployment.service.url, { ...call, headers });
}

function randomStore(deployment: Deployment, except?: ReadonlySet<number>): number {
  for (;;) {
    const store = randomInt(1, deployment.stores + 1);
    if (except?.has(store) !== true) return store;
  }
}

/** Logins over figure 2's 32 connections at `store`, or at random stores of the deployment. */
function loginMix(context: BenchContext, deployment: Deployment, seconds: number, store?: number): Promise<LoadResult> {
  return runLoad({
    url: deployment.service.url,
    method: 'POST',
    path: `${auth}/login`,
    connections: hashingConnections,
    seconds,
    // The identities are the same in every store, so the body need not know the host's store.
    headers: () => ({ host: hostOf(store ?? randomStore(deployment)) }),
    body: () => ({ identity: identityOf(randomCustomer()), password: context.password }),
  });
}

/** Which seeded session a session check sends: its store and customer. */
type SessionPick = () => [store: number, customer: number];

/** A random seeded session of a random store (not one of `except`): the figure's own mix. */
const anySession =
  (deployment: Deployment, except?: ReadonlySet<number>): SessionPick =>
  () => [randomStore(deployment, except), randomCustomer()];

/** Session checks of seeded sessions over figure 8's 64 connections. */
function sessionMix(deployment: Deployment, cookieName: string, seconds: number, pick = anySession(deployment)) {
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
 * Checks the seeded deployment answers as it should, and returns the session cookie's name: a login
 * at a store; a seeded session at its own store, refused at another's host; an unknown host, 404.
 */
async function checkDeployment(context: BenchContext, deployment: Deployment): Promise<string> {
  const agent = new http.Agent({ keepAlive: true });
  const fail = (what: string, answer: Answer) => new Error(`${deployment.label}: ${what} answered ${answer.status}`);
  try {
    const store = randomStore(deployment);
    const body = { identity: identityOf(1), password: context.password };
    const login = await atStore(agent, deployment, store, { method: 'POST', path: `${auth}/login`, body });
    const cookie = login.cookies.find((pair) => /session=/.test(pair));
    if (login.status !== 200 || cookie === undefined) throw fail("a seeded customer's login", login);
    const cookieName = cookie.slice(0, cookie.indexOf('='));
    const check = (at: number) =>
      atStore(agent, deployment, at, {
        method: 'GET',
        path: `${auth}/session`,
        cookie: `${cookieName}=${sessionIdOf(store, 2)}`,
      });
    const own = await check(store);
    if (own.status !== 200) throw fail("a seeded session's check", own);
    if (deployment.stores > 1) {
      const elsewhere = await check(store === 1 ? 2 : store - 1);
      if (elsewhere.status !== 401) throw fail("a session checked at another store's host", elsewhere);
    }
    const unknown = await atStore(agent, deployment, deployment.stores + 1, { method: 'GET', path: `${auth}/session` });
    if (unknown.status !== 404) throw fail('an unknown host', unknown);
    return cookieName;
  } finally {
    agent.destroy();
  }
}

/**
 * A session check at every store, round-robin, `storeCount` in all in either deployment, so both
 * have served as many requests and the many-store service holds every store in its cache.
 */
async function serveEveryStore(deployment: Deployment, cookieName: string): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: hashingConnections });
  const started = performance.now();
  let next = 0;
  const odd: Record<string, number> = {};
  const worker = async () => {
    while (next < storeCount) {
      const store = (next++ % deployment.stores) + 1;
      const cookie = `${cookieName}=${sessionIdOf(store, randomCustomer())}`;
      const answer = await atStore(agent, deployment, store, { method: 'GET', path: `${auth}/session`, cookie });
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

/** The database processes serving a deployment: embedded, the service's descendants; otherwise its database's backends. */
async function databasePids(deployment: Deployment): Promise<number[]> {
  if (deployment.backend.mode === 'embedded') return descendantPids(deployment.service.pid);
  const client = new pg.Client({ connectionString: deployment.backend.serverUrl(deployment.backend.serviceDatabase) });
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
 * Starts reading what a load costs in CPU; the returned function takes the number of answers. On a
 * shared host the CPU a request takes moves far less than the throughput others leave.
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
  both: Deployment[],
  deployment: Deployment,
  load: () => Promise<LoadResult>,
) {
  await beforeRound(
    context,
    both.map((each) => each.service.pid),
  );
  const stopCost = await measureCost(deployment);
  const stopCpu = measureServiceCpu(deployment.service.pid);
  const result = await timed(context, figure, load);
  const cpu = stopCpu(result.responses);
  return { result, cpu, cost: await stopCost(result.responses) };
}

type Kind = 'login' | 'session' | 'firstStore' | 'perStore';
type Side = Record<Kind, Series & { costs: Cost[] }>;

/**
 * 13a, 13b: logins and session checks of both deployments, rounds alternating which goes first. As
 * information the many-store service also checks only its first store's 100 sessions, then one
 * session at each store: what a spread of stores costs apart from a spread of a million sessions.
 */
async function throughputRounds(context: BenchContext, one: Deployment, many: Deployment, cookieName: string) {
  const empty = (): Side => ({
    login: { results: [], cpus: [], costs: [] },
    session: { results: [], cpus: [], costs: [] },
    firstStore: { results: [], cpus: [], costs: [] },
    perStore: { results: [], cpus: [], costs: [] },
  });
  const sides = new Map<Deployment, Side>([
    [one, empty()],
    [many, empty()],
  ]);
  for (const deployment of [one, many]) {
    await loginMix(context, deployment, 1);
    await sessionMix(deployment, cookieName, 1);
  }
  for (let round = 1; round <= context.rounds; round += 1) {
    for (const deployment of round % 2 === 1 ? [one, many] : [many, one]) {
      const side = sides.get(deployment)!;
      const loads: [Kind, () => Promise<LoadResult>][] = [
        ['login', () => loginMix(context, deployment, context.seconds)],
        ['session', () => sessionMix(deployment, cookieName, context.seconds)],
      ];
      if (deployment === many)
        loads.push(
          ['firstStore', () => sessionMix(many, cookieName, context.seconds, () => [1, randomCustomer()])],
          ['perStore', () => sessionMix(many, cookieName, context.seconds, () => [randomStore(many), 1])],
        );
      const texts: string[] = [];
      for (const [kind, load] of loads) {
        const { result, cpu, cost } = await measuredLoad(context, [one, many], deployment, load);
        side[kind].results.push(result);
        side[kind].cpus.push(cpu);
        side[kind].costs.push(cost);
        texts.push(`${kind} ${loadText(result, cpu)}, ${costText([cost])}`);
      }
      const memory = await recordRss(context, deployment.service, figure, `13 ${deployment.label} round ${round}`);
      progress(
        context,
        `fig 13 ${deployment.label} round ${round}/${context.rounds}: ${texts.join('; ')}; ${rssText(memory)}`,
      );
    }
  }
  return [sides.get(one)!, sides.get(many)!] as const;
}

function throughputRow(
  id: string,
  label: string,
  one: Side['login'],
  many: Side['login'],
  information: string[] = [],
  extra: LoadResult[] = [],
) {
  const p99 = (results: LoadResult[]) => format(median(p99s(results)), 1);
  return ratioRow({
    id,
    label,
    ours: many,
    theirs: one.results,
    names: [`${format(storeCount)} stores`, 'one store'],
    baselineLabel: 'one store',
    goal: throughputShare,
    counted: extra,
    notes: [
      `p99 ${p99(many.results)} ms against one store's ${p99(one.results)} ms`,
      `${format(storeCount)} stores: ${cpuSummary(many.cpus)}`,
      `one store: ${cpuSummary(one.cpus)}`,
      `${costText(many.costs)} with ${format(storeCount)} stores against ${costText(one.costs)} with one`,
      ...information,
    ],
  });
}

/** The V8 heap in use, from the service's own metrics (prom-client's default gauges). */
async function heapUsedMb(deployment: Deployment): Promise<number> {
  const answer = await fetch(deployment.metricsUrl).catch(() => undefined);
  const match = /^storefront_nodejs_heap_size_used_bytes (\S+)$/m.exec(answer === undefined ? '' : await answer.text());
  return match === null ? Number.NaN : Number(match[1]) / 2 ** 20;
}

/**
 * 13c: both services' RSS, read at the same moment once both have been idle `idleSeconds`, after the
 * same loads; the heap in use from their metrics is information (after the service's own last collection).
 */
async function memoryRow(context: BenchContext, one: Deployment, many: Deployment): Promise<Row> {
  const [manyReading, oneReading] = await Promise.all([
    recordRss(context, many.service, figure, 'end', { idle: true }),
    // Figure 6 takes the most at idle of each figure's 'end'; the larger deployment's is the one.
    recordRss({ ...context, rss: [] }, one.service, figure, 'end', { idle: true }),
  ]);
  const [manyHeap, oneHeap] = await Promise.all([heapUsedMb(many), heapUsedMb(one)]);
  const [manyMb, oneMb] = [manyReading.idleAt!.serviceMb, oneReading.idleAt!.serviceMb];
  progress(
    context,
    `fig 13 memory at idle: ${format(storeCount)} stores ${rssText(manyReading)}, heap used ${format(manyHeap, 1)} MB; one store ${rssText(oneReading)}, heap used ${format(oneHeap, 1)} MB`,
  );
  const settled = (reading: typeof manyReading) => format(reading.settledAt.serviceMb, 1);
  return row(
    '13c',
    `service process RSS growth (MB) with ${format(storeCount)} stores, every one served (its store cache full), over one store: both idle ${idleSeconds} s after the same loads`,
    'MB',
    manyMb - oneMb,
    { text: `≤ ${memoryGrowthLimitMb} MB`, met: manyMb - oneMb <= memoryGrowthLimitMb },
    `RSS at idle ${format(manyMb, 1)} MB against ${format(oneMb, 1)} MB; settled 10 s after the rounds ${settled(manyReading)} against ${settled(oneReading)} MB`,
    {
      baseline: oneMb,
      baselineLabel: `one store's RSS; ${format(storeCount)} stores' ${format(manyMb, 1)} MB`,
      notes: [
        `V8 heap used after the service's own idle collection (its /metrics): ${format(manyHeap, 1)} MB against ${format(oneHeap, 1)} MB (${format(manyHeap - oneHeap, 1)} MB more)`,
        `restart on the seeded database ${format(many.restartSeconds, 1)} s with ${format(storeCount)} stores, ${format(one.restartSeconds, 1)} s with one`,
      ],
    },
  );
}

/**
 * Pauses and resumes each of `stores` through updateStore (what `storefront-auth store set --status`
 * runs), each commit at a random moment of the change feed's cycle, and times from the commit to the
 * first session-check answer showing it (503, then 200), asking every 5 ms; NaN after 10 s. The store
 * is cached before each change, so the change reaches the service only through the feed.
 */
async function changeDelays(deployment: Deployment, cookieName: string, stores: number[], odd: Record<string, number>) {
  const db = openPostgres(deployment.backend.serverUrl(deployment.backend.serviceDatabase), { max: 1 });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const delays: number[] = [];
  try {
    for (const store of stores) {
      const check: Call & { cookie: string } = {
        method: 'GET',
        path: `${auth}/session`,
        cookie: `${cookieName}=${sessionIdOf(store, 1)}`,
      };
      const open = await atStore(agent, deployment, store, check);
      if (open.status !== 200) throw new Error(`store ${store} answered ${open.status} before its change`);
      for (const status of ['paused', 'active'] as const) {
        await sleep(randomInt(0, storeFeedIntervalMs));
        const result = await updateStore(db, systemClock, { status }, { store: slugOf(store) });
        if (!result.ok) throw new Error(`updateStore of store ${store}: ${result.reason}`);
        const committed = performance.now();
        const [wanted, before] = status === 'paused' ? [503, 200] : [200, 503];
        let seen = Number.NaN;
        while (Number.isNaN(seen) && performance.now() < committed + 10_000) {
          const answer = await atStore(agent, deployment, store, check);
          if (answer.status === wanted) seen = performance.now();
          else {
            if (answer.status !== before) odd[answer.status] = (odd[answer.status] ?? 0) + 1;
            await sleep(5);
          }
        }
        delays.push(seen - committed);
      }
    }
  } finally {
    agent.destroy();
    await db.close();
  }
  return delays;
}

/** 13d: change delays with the service otherwise idle, then under session checks at other stores. */
async function changeRow(context: BenchContext, many: Deployment, cookieName: string): Promise<Row> {
  const odd: Record<string, number> = {};
  const picked = new Set<number>();
  while (picked.size < 2 * changeStores) picked.add(randomInt(2, many.stores + 1));
  const [idleStores, loadedStores] = [[...picked].slice(0, changeStores), [...picked].slice(changeStores)];
  await waitUntilIdle(many.service.pid);
  const idle = await changeDelays(many, cookieName, idleStores, odd);
  const listed = (delays: number[]) => delays.map((ms) => format(ms)).join(', ');
  progress(context, `fig 13 store changes, service idle: ${listed(idle)} ms`);
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
    `fig 13 store changes under ${format(rate)} session checks/s at other stores: ${listed(loaded)} ms`,
  );
  const all = [...idle, ...loaded];
  const value = all.some(Number.isNaN) ? Number.NaN : Math.max(...all);
  const oddCount = Object.values(odd).reduce((total, count) => total + count, 0);
  const failed = failures(load);
  const non2xx = failed.non2xx + oddCount - (odd['0'] ?? 0);
  const errors = failed.errors + (odd['0'] ?? 0);
  const summary = (delays: number[]) => `median ${format(median(delays))} ms, max ${format(Math.max(...delays))} ms`;
  return row(
    '13d',
    `a store change (status paused, then active again, by updateStore) seen through the HTTP API of the running ${format(storeCount)}-store service: the most ms from the commit to the first answer showing it, ${all.length} samples`,
    'ms',
    value,
    {
      text: `≤ ${format(changeVisibleLimitMs)} ms`,
      met: value <= changeVisibleLimitMs && non2xx === 0 && errors === 0,
    },
    `idle ${listed(idle)} ms; under load ${listed(loaded)} ms`,
    {
      non2xx,
      errors,
      notes: [
        `all ${summary(all)}; idle ${summary(idle)}; under ${format(rate)} session checks/s at other stores ${summary(loaded)}`,
        `the service reads the change feed every ${format(storeFeedIntervalMs)} ms`,
        ...(oddCount === 0 ? [] : [`answers of neither state while polling: ${JSON.stringify(odd)}`]),
        ...troubles(load),
      ],
    },
  );
}

/**
 * 13e: store B's logins (open-loop, see `quietShare`) alone, and while store A floods logins over 32
 * connections (from a second before B's span to a second after); both on the many-store deployment.
 * As information, the same trickle sent to A's own store during its flood: what B would meet in A's
 * hashing line. The three spans of a round take turns going first.
 */
async function floodRow(context: BenchContext, both: Deployment[], many: Deployment, loginRate: number): Promise<Row> {
  const [floodStore, quietStore] = [2, 3];
  const rate = Math.min(quietRateLimit, Math.round(quietShare * loginRate * 10) / 10);
  const span = Math.max(floodSpanFactor * context.seconds, Math.ceil(quietLoginsPerSpan / rate));
  // From the benchmark's own process: at a few dozen logins a second its event loop is nearly idle.
  const trickle = (store: number, seconds: number) =>
    runOpenLoad({
      url: many.service.url,
      path: `${auth}/login`,
      connections: 10,
      seconds,
      rate,
      headers: () => ({ host: hostOf(store) }),
      body: () => ({ identity: identityOf(randomCustomer()), password: context.password }),
    });
  const spans = { alone: [] as LoadResult[], flooded: [] as LoadResult[], shared: [] as LoadResult[] };
  const floods: LoadResult[] = [];
  const cpus: Series['cpus'] = [];
  await trickle(quietStore, 1);
  const phases = ['alone', 'flooded', 'shared'] as const;
  for (let round = 1; round <= context.rounds; round += 1) {
    for (let turn = 0; turn < phases.length; turn += 1) {
      const phase = phases[(round - 1 + turn) % phases.length]!;
      await waitUntilIdle(many.service.pid);
      await beforeRound(
        context,
        both.map((each) => each.service.pid),
      );
      if (phase === 'alone') {
        spans.alone.push(await timed(context, figure, () => trickle(quietStore, span)));
        continue;
      }
      const stopCpu = measureServiceCpu(many.service.pid);
      const [a, b] = await timed(context, figure, () =>
        Promise.all([
          loginMix(context, many, span + 2, floodStore),
          sleep(1_000).then(() => trickle(phase === 'flooded' ? quietStore : floodStore, span)),
        ]),
      );
      spans[phase].push(b);
      if (phase === 'flooded') {
        cpus.push(stopCpu(a.responses + b.responses));
        floods.push(a);
      }
    }
    const [b, quiet, shared, a] = [spans.flooded.at(-1)!, spans.alone.at(-1)!, spans.shared.at(-1)!, floods.at(-1)!];
    progress(
      context,
      `fig 13 flood round ${round}/${context.rounds}: store B ${loadText(b)} while store A logs in ${loadText(a, cpus.at(-1))}; alone ${loadText(quiet)}; in A's own store ${loadText(shared)}`,
    );
  }
  const listed = (results: LoadResult[]) =>
    p99s(results)
      .map((p99) => format(p99, 1))
      .join(' / ');
  const p50 = (results: LoadResult[]) => format(median(results.map((result) => result.latency.p50)), 1);
  const answered = (results: LoadResult[]) => format(median(results.map((result) => result.okPerSecond)), 1);
  return p99Row({
    id: '13e',
    label: `store B's login p99 (open-loop, ${format(rate, 1)}/s: a tenth of 13a's rate, at most ${quietRateLimit}; ${span} s spans) while store A floods logins over ${hashingConnections} connections, of ${format(storeCount)} stores`,
    ours: spans.flooded,
    theirs: spans.alone,
    baselineLabel: 'store B alone',
    limit: floodP99Limit,
    goalText: `p99 ≤ ${floodP99Limit}× B's alone`,
    rounds: `flooded ${listed(spans.flooded)} ms; alone ${listed(spans.alone)} ms; p50 flooded ${p50(spans.flooded)} ms, alone ${p50(spans.alone)} ms; store A ${floods.map((result) => format(result.okPerSecond, 1)).join(' / ')} logins/s`,
    notes: [
      `information: the same trickle sent to A's own store during its flood, p99 ${listed(spans.shared)} ms, p50 ${p50(spans.shared)} ms (what B's logins would meet in A's hashing line)`,
      `store B answered ${answered(spans.flooded)} logins/s flooded, ${answered(spans.alone)}/s alone`,
      cpuSummary(cpus),
    ],
    counted: [...spans.alone, ...spans.shared, ...floods],
  });
}

/** `count` stores made through the admin API over `connections` connections, closed-loop; every answer timed. */
async function adminCreates(
  context: BenchContext,
  many: Deployment,
  first: number,
  count: number,
  connections: number,
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let next = first;
  const create = async (index: number) => {
    const started = performance.now();
    const answer = await request(agent, many.service.adminUrl!, {
      method: 'POST',
      path: '/admin/v1/stores',
      headers: { authorization: `Bearer ${adminToken}`, 'idempotency-key': `bench-${index}` },
      body: { slug: `made-${index}`, name: `Made ${index}`, hosts: [`made-${index}.new.test`] },
    });
    if (answer.status === 0) throw new Error(`POST /admin/v1/stores ${index}: no answer`);
    latencies.push(performance.now() - started);
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
  };
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
  const seconds = (performance.now() - started) / 1000;
  const [p50, p99] = [percentile(latencies, 0.5), percentile(latencies, 0.99)];
  const clean = latencies.length === (statuses['201'] ?? 0);
  progress(
    context,
    `fig 13 admin creates over ${connections}: ${latencies.length} in ${format(seconds, 1)} s, p50 ${format(p50, 1)} ms, p99 ${format(p99, 1)} ms (${JSON.stringify(statuses)})`,
  );
  const rounds = `${latencies.length} creates in ${format(seconds, 1)} s (${format(latencies.length / seconds, 1)}/s); p50 ${format(p50, 1)} ms, max ${format(latencies.at(-1)!, 1)} ms`;
  const more = {
    non2xx: latencies.length - (statuses['201'] ?? 0),
    notes: [`answers by status: ${JSON.stringify(statuses)}`],
  };
  return (id: string, label: string, goal: (p99: number, clean: boolean) => Row['goal']) =>
    row(id, label, 'ms', p99, goal(p99, clean), rounds, more);
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
        `fig 13 ${deployment.label}: ${format(storeCount)} session checks over its ${format(deployment.stores)} store(s) in ${format(seconds, 1)} s`,
      );
    }
    const [oneSide, manySide] = await throughputRounds(context, one, many, cookieName);
    const rates = (kind: 'firstStore' | 'perStore') =>
      manySide[kind].results.map((result) => format(result.okPerSecond)).join(' / ');
    const rows = [
      throughputRow(
        '13a',
        `login req/s (correct password) at random stores of ${format(storeCount)} (random customers of 100 each), ${hashingConnections} connections`,
        oneSide.login,
        manySide.login,
      ),
      throughputRow(
        '13b',
        `GET /customer/auth/session req/s (session check) at random stores of ${format(storeCount)} (a random seeded session each), ${sessionConnections} connections`,
        oneSide.session,
        manySide.session,
        [
          `information, the ${format(storeCount)}-store service: its first store's 100 sessions only (the one-store pattern) ${rates('firstStore')}/s, ${costText(manySide.firstStore.costs)}; one session at each of its stores ${rates('perStore')}/s, ${costText(manySide.perStore.costs)}`,
        ],
        [...manySide.firstStore.results, ...manySide.perStore.results],
      ),
    ];
    rows.push(await memoryRow(context, one, many));
    rows.push(await changeRow(context, many, cookieName));
    rows.push(await floodRow(context, [one, many], many, rows[0]!.value));
    const oneAtATime = await adminCreates(context, many, 0, adminCreateCount, 1);
    const burst = await adminCreates(context, many, adminCreateCount, adminCreateCount, adminConnections);
    rows.push(
      oneAtATime(
        '13f',
        `POST /admin/v1/stores p99, one at a time (a new store with a host and an Idempotency-Key each) with ${format(storeCount)} stores present`,
        (p99, clean) => ({ text: `≤ ${adminCreateP99LimitMs} ms`, met: p99 <= adminCreateP99LimitMs && clean }),
      ),
      burst(
        '13g',
        `POST /admin/v1/stores p99 in a burst over ${adminConnections} connections, with ${format(storeCount + adminCreateCount)} stores present`,
        (_, clean) => ({ text: 'information', met: clean }),
      ),
    );
    return rows;
  } finally {
    for (const deployment of deployments) await closeDeployment(context, deployment);
    for (const [kind, count] of Object.entries(context.serviceLogs[figure] ?? {}))
      progress(context, `fig 13: services logged ${count}× ${kind}`);
  }
}
