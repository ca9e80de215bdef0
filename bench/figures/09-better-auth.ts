import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { cpuSummary, format, median, withService, type BenchContext, type Row } from '../context.js';
import {
  ensureCustomers,
  hashingConnections,
  loginLoad,
  sessionConnections,
  sessionLoad,
  signedInCookie,
} from '../customer-load.js';
import { runLoad, type LoadResult } from '../load.js';
import { p99s, ratioRow, runRounds, type Series } from '../rounds.js';
import { startBetterAuth, type Server } from '../servers.js';

const peerPassword = 'bench-Passw0rd-42';
/** Better Auth's customers, signed up through its API; its sign-ins cycle through them. */
const peerCustomers = 32;
const peerEmail = (index: number) => `peer-${index}@bench.example`;

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
  ours: Series,
  theirs: Series,
  peerLabel: string,
  goal?: number,
  maxMainMs?: number,
): Row {
  const p99 = (results: LoadResult[]) => format(median(p99s(results)), 1);
  return ratioRow({
    id,
    label,
    ours,
    theirs: theirs.results,
    names: ['service', 'Better Auth'],
    baselineLabel: peerLabel,
    ...(goal !== undefined && { goal }),
    ...(maxMainMs !== undefined && { maxMainMs }),
    notes: [`p99 ${p99(ours.results)} ms against Better Auth's ${p99(theirs.results)} ms`, cpuSummary(ours.cpus)],
  });
}

/**
 * Figure 9: Better Auth as a peer on the same PostgreSQL server: its session read (cookie cache off
 * and on) against the service's session check, its sign-in against the login. Each round runs all
 * loads one after another, so a drift of the host touches all of them.
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
      const [plainCookie, cachedCookie] = [await peerCookie(plain), await peerCookie(cached)];
      const loads = [
        {
          name: 'service session read',
          service,
          run: (s: number) => sessionLoad(service.url, '/api/v1/customer/auth/session', ourCookie, s),
        },
        {
          name: 'Better Auth session read',
          run: (s: number) => sessionLoad(plain.url, '/api/auth/get-session', plainCookie, s),
        },
        {
          name: 'Better Auth session read, cookie cache',
          run: (s: number) => sessionLoad(cached.url, '/api/auth/get-session', cachedCookie, s),
        },
        {
          name: 'service login, known device',
          service,
          run: (s: number) => loginLoad(context, service.url, s, { returning: true }),
        },
        { name: 'Better Auth sign-in', run: (s: number) => peerLogin(plain, s) },
        { name: 'service login, new device', service, run: (s: number) => loginLoad(context, service.url, s) },
      ];
      for (const load of loads) await load.run(1);
      const [ourSession, plainSession, cachedSession, ourLogin, theirLogin, newDevice] = (await runRounds(
        context,
        '9',
        loads,
        {
          ownPids: [service.pid, plain.pid, cached.pid],
        },
      )) as [Series, Series, Series, Series, Series, Series];
      return [
        versusPeer(
          '9a',
          `session read req/s, ${sessionConnections} connections: the service's GET /customer/auth/session against Better Auth's GET /api/auth/get-session, cookie cache off`,
          ourSession,
          plainSession,
          'Better Auth, cookie cache off',
          6,
          0.1,
        ),
        versusPeer(
          '9b',
          `session read req/s, ${sessionConnections} connections, against Better Auth with its cookie cache on (a signed cookie stands in for the read for 5 minutes)`,
          ourSession,
          cachedSession,
          'Better Auth, cookie cache on',
        ),
        versusPeer(
          '9c',
          `login req/s, ${hashingConnections} connections, each customer from a /24 of its own (a known device), against Better Auth's POST /api/auth/sign-in/email (same argon2id parameters)`,
          ourLogin,
          theirLogin,
          'Better Auth sign-in',
          1.1,
          1.5,
        ),
        versusPeer(
          '9d',
          `login req/s, ${hashingConnections} connections, every login from a /24 new to its customer (a new-device notice queued and sent each time), against Better Auth's sign-in as in 9c`,
          newDevice,
          theirLogin,
          'Better Auth sign-in',
        ),
      ];
    } finally {
      await Promise.all(peers.map((peer) => peer.stop()));
      await database.drop();
    }
  });
}
