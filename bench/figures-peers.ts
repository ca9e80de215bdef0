import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  beforeRound,
  cpuSummary,
  medianMainMs,
  format,
  measuredRound,
  median,
  progress,
  withService,
  type BenchContext,
  type Row,
} from './context.js';
import {
  ensureCustomers,
  hashingConnections,
  loginLoad,
  sessionConnections,
  sessionLoad,
  signedInCookie,
} from './customer-load.js';
import { runLoad, statusText, sum, type LoadResult } from './load.js';
import type { ServiceCpu } from './proc.js';
import { startBetterAuth, type Server } from './servers.js';

/** Figure 9's goals: the service reads a session at least this many times as fast as Better Auth without its cookie cache… */
const sessionReadGoal = 6;
/** …and signs in at least this many times as fast, on equal hashing. */
const loginGoal = 1.1;
const peerPassword = 'bench-Passw0rd-42';
/** Better Auth's customers, signed up through its API; its sign-ins cycle through them. */
const peerCustomers = 32;

/** A database of Better Auth's own on the service's PostgreSQL server, and how to drop it. */
async function peerDatabase(context: BenchContext): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `sfa_bench_better_auth_${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: context.backend.serverUrl('postgres') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  return {
    url: context.backend.serverUrl(name),
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

function peerEmail(index: number): string {
  return `peer-${index}@bench.example`;
}

/** POSTs JSON to Better Auth as a browser on its own origin would; returns the answer's cookies. */
async function peerPost(peer: Server, path: string, body: unknown): Promise<string> {
  const answer = await fetch(`${peer.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: peer.url },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (answer.status !== 200) throw new Error(`Better Auth ${path} answered ${answer.status}: ${text.slice(0, 200)}`);
  return answer.headers
    .getSetCookie()
    .map((line) => line.split(';')[0]!)
    .join('; ');
}

/** Better Auth's session cookies (and cached session, when on), checked to open the session. */
async function peerCookie(peer: Server): Promise<string> {
  const cookie = await peerPost(peer, '/api/auth/sign-in/email', { email: peerEmail(0), password: peerPassword });
  const check = await fetch(`${peer.url}/api/auth/get-session`, { headers: { cookie } });
  const session = (await check.json()) as { user?: { email?: string } } | null;
  // get-session answers 200 with null for no session: the load would count those as successes.
  if (session?.user?.email !== peerEmail(0)) throw new Error('Better Auth did not read its own session back');
  return cookie;
}

let peerCursor = 0;
function peerLogin(peer: Server, seconds: number): Promise<LoadResult> {
  return runLoad({
    url: peer.url,
    method: 'POST',
    path: '/api/auth/sign-in/email',
    connections: hashingConnections,
    seconds,
    headers: { origin: peer.url },
    body: () => ({ email: peerEmail(peerCursor++ % peerCustomers), password: peerPassword }),
  });
}

function versusPeer(
  id: string,
  label: string,
  ours: LoadResult[],
  theirs: LoadResult[],
  peerLabel: string,
  goal: number | undefined,
  cpus: ServiceCpu[],
  /** A second goal: the service's main-thread CPU per answer at most this many milliseconds. */
  maxMainMsPerAnswer?: number,
): Row {
  const value = median(ours.map((result) => result.okPerSecond));
  const baseline = median(theirs.map((result) => result.okPerSecond));
  const ratio = value / baseline;
  const non2xx = sum(ours, (result) => result.non2xx) + sum(theirs, (result) => result.non2xx);
  const errors = sum(ours, (result) => result.errors) + sum(theirs, (result) => result.errors);
  const clean = non2xx === 0 && errors === 0;
  const mainMs = medianMainMs(cpus);
  const cpuMet = maxMainMsPerAnswer === undefined || mainMs <= maxMainMsPerAnswer;
  const cpuGoal = maxMainMsPerAnswer === undefined ? '' : `, main thread ≤ ${maxMainMsPerAnswer} ms per answer`;
  return {
    id,
    label,
    unit: 'req/s',
    value,
    baseline,
    baselineLabel: peerLabel,
    ratio,
    goal:
      goal === undefined
        ? { text: 'information', met: clean }
        : { text: `ratio ≥ ${goal.toFixed(2)}${cpuGoal}`, met: ratio >= goal && cpuMet && clean },
    non2xx,
    errors,
    rounds: `service ${ours.map((result) => format(result.okPerSecond, 1)).join(' / ')}; Better Auth ${theirs.map((result) => format(result.okPerSecond, 1)).join(' / ')}`,
    notes: [
      `p99 ${format(median(ours.map((result) => result.latency.p99)), 1)} ms against Better Auth's ${format(median(theirs.map((result) => result.latency.p99)), 1)} ms`,
      cpuSummary(cpus),
      ...[...ours, ...theirs].filter((result) => result.non2xx + result.errors > 0).map(statusText),
    ],
    mainMs,
  };
}

/**
 * Figure 9: Better Auth as a peer on the same PostgreSQL server: its session read (cookie cache off
 * and on) against the service's session check, its sign-in against the login. Each round runs all
 * five loads one after another, so a drift of the host touches all of them.
 */
export async function figureBetterAuth(context: BenchContext): Promise<Row[]> {
  return withService(context, '9', async (service) => {
    // Embedded: the server exists while the service runs, so the peer's database is made now.
    const database = await peerDatabase(context);
    const peers: Server[] = [];
    try {
      const plain = await startBetterAuth(database.url, false);
      peers.push(plain);
      const cached = await startBetterAuth(database.url, true);
      peers.push(cached);
      for (let index = 0; index < peerCustomers; index += 1)
        await peerPost(plain, '/api/auth/sign-up/email', {
          name: 'Peer',
          email: peerEmail(index),
          password: peerPassword,
        });
      await ensureCustomers(context, service, Math.ceil(context.seconds * 150));
      const ourCookie = await signedInCookie(context, service);
      const plainCookie = await peerCookie(plain);
      const cachedCookie = await peerCookie(cached);
      const ownPids = [service.pid, plain.pid, cached.pid];
      const loads = {
        ourSession: (seconds: number) => sessionLoad(service.url, '/api/v1/customer/auth/session', ourCookie, seconds),
        plainSession: (seconds: number) => sessionLoad(plain.url, '/api/auth/get-session', plainCookie, seconds),
        cachedSession: (seconds: number) => sessionLoad(cached.url, '/api/auth/get-session', cachedCookie, seconds),
        ourLogin: (seconds: number) => loginLoad(context, service.url, seconds, { returning: true }),
        peerLogin: (seconds: number) => peerLogin(plain, seconds),
        ourNewDeviceLogin: (seconds: number) => loginLoad(context, service.url, seconds),
      };
      for (const load of Object.values(loads)) await load(1);
      const results: Record<keyof typeof loads, LoadResult[]> = {
        ourSession: [],
        plainSession: [],
        cachedSession: [],
        ourLogin: [],
        peerLogin: [],
        ourNewDeviceLogin: [],
      };
      const sessionCpus: ServiceCpu[] = [];
      const loginCpus: ServiceCpu[] = [];
      const newDeviceCpus: ServiceCpu[] = [];
      for (let round = 1; round <= context.rounds; round += 1) {
        for (const [name, load] of Object.entries(loads) as Array<
          [keyof typeof loads, (s: number) => Promise<LoadResult>]
        >) {
          if (name === 'ourSession' || name === 'ourLogin' || name === 'ourNewDeviceLogin') {
            const { result, cpu } = await measuredRound(
              context,
              '9',
              service,
              () => load(context.seconds),
              (done) => done.responses,
            );
            results[name].push(result);
            ({ ourSession: sessionCpus, ourLogin: loginCpus, ourNewDeviceLogin: newDeviceCpus })[name].push(cpu);
          } else {
            await beforeRound(context, ownPids);
            results[name].push(await load(context.seconds));
          }
        }
        const last = (name: keyof typeof loads) => results[name][results[name].length - 1]!;
        progress(
          context,
          `fig 9 round ${round}/${context.rounds}: session read service ${format(last('ourSession').okPerSecond)}/s, Better Auth ${format(last('plainSession').okPerSecond)}/s (cookie cache on ${format(last('cachedSession').okPerSecond)}/s); login service ${format(last('ourLogin').okPerSecond, 1)}/s, Better Auth ${format(last('peerLogin').okPerSecond, 1)}/s (${Object.values(
            results,
          )
            .map((list) => statusText(list[list.length - 1]!))
            .join(', ')})`,
        );
      }
      return [
        versusPeer(
          '9a',
          `session read req/s, ${sessionConnections} connections: the service's GET /customer/auth/session against Better Auth's GET /api/auth/get-session, cookie cache off`,
          results.ourSession,
          results.plainSession,
          'Better Auth, cookie cache off',
          sessionReadGoal,
          sessionCpus,
          0.1,
        ),
        versusPeer(
          '9b',
          `session read req/s, ${sessionConnections} connections, against Better Auth with its cookie cache on (a signed cookie stands in for the read for 5 minutes)`,
          results.ourSession,
          results.cachedSession,
          'Better Auth, cookie cache on',
          undefined,
          sessionCpus,
        ),
        versusPeer(
          '9c',
          `login req/s, ${hashingConnections} connections, each customer from a /24 of its own (a known device), against Better Auth's POST /api/auth/sign-in/email (same argon2id parameters)`,
          results.ourLogin,
          results.peerLogin,
          'Better Auth sign-in',
          loginGoal,
          loginCpus,
          1.5,
        ),
        versusPeer(
          '9d',
          `login req/s, ${hashingConnections} connections, every login from a /24 new to its customer (a new-device notice queued and sent each time), against Better Auth's sign-in as in 9c`,
          results.ourNewDeviceLogin,
          results.peerLogin,
          'Better Auth sign-in',
          undefined,
          newDeviceCpus,
        ),
      ];
    } finally {
      await Promise.all(peers.map((peer) => peer.stop()));
      await database.drop();
    }
  });
}
