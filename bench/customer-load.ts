import { progress, type BenchContext } from './context.js';
import { nextClientAddress, nextEmail, returningAddress, runLoad, type LoadResult } from './load.js';
import type { Server } from './servers.js';

/** The customer calls several figures load the service with, and the customers and cookie they need. */

/** Enough callers to keep the service's 2 hashing slots busy without nearing its queue of 256. */
export const hashingConnections = 32;
export const sessionConnections = 64;
export const auth = '/api/v1/customer/auth';

/** Registrations at `url`; only the service's (`keep`) join the customers the login figures use. */
export function registerLoad(context: BenchContext, url: string, seconds: number, keep = true): Promise<LoadResult> {
  return runLoad({
    url,
    method: 'POST',
    path: `${auth}/register`,
    connections: hashingConnections,
    seconds,
    body: () => {
      const email = nextEmail('shopper');
      return { name: 'Bench Shopper', email, password: context.password, password_confirmation: context.password };
    },
    onResponse: (status, body) => {
      if (status !== 201 || !keep) return;
      context.customers.push((JSON.parse(body) as { identity: { value: string } }).identity.value);
    },
  });
}

let loginCursor = 0;
const visits: number[] = [];
/**
 * Logins cycle through the registered customers, each from a never-reused address: nearly always
 * a new device, whose sign-in notice is queued and sent. With `returning`, each customer signs in
 * from a /24 of its own (a new address in it each time), so after its first login the device is known.
 */
export function loginLoad(
  context: BenchContext,
  url: string,
  seconds: number,
  { returning = false }: { returning?: boolean } = {},
): Promise<LoadResult> {
  let customer = 0;
  const next = () => (customer = loginCursor++ % context.customers.length);
  return runLoad({
    url,
    method: 'POST',
    path: `${auth}/login`,
    connections: hashingConnections,
    seconds,
    ...(returning && {
      clientAddress: () => {
        next();
        visits[customer] = (visits[customer] ?? 0) + 1;
        return returningAddress(customer, visits[customer]!);
      },
    }),
    body: () => ({ identity: context.customers[returning ? customer : next()], password: context.password }),
  });
}

/** Registers customers until there are enough for a login round without repeating one. */
export async function ensureCustomers(context: BenchContext, service: Server, wanted: number): Promise<void> {
  while (context.customers.length < wanted) {
    const before = context.customers.length;
    await registerLoad(context, service.url, 3);
    progress(context, `registered customers for the login figures: ${context.customers.length}`);
    if (context.customers.length === before) throw new Error('registration made no customers');
  }
}

/** Session reads over `sessionConnections`, with one cookie or a cookie per request. */
export function sessionLoad(
  url: string,
  path: string,
  cookie: string | (() => string),
  seconds: number,
): Promise<LoadResult> {
  const headers = typeof cookie === 'string' ? { cookie } : () => ({ cookie: cookie() });
  return runLoad({ url, method: 'GET', path, connections: sessionConnections, seconds, headers });
}

/** The `name=value` of a session cookie for the first registered customer (registering one if need be). */
export async function signedInCookie(context: BenchContext, service: Server): Promise<string> {
  await ensureCustomers(context, service, 1);
  const login = await fetch(`${service.url}${auth}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': nextClientAddress() },
    body: JSON.stringify({ identity: context.customers[0], password: context.password }),
  });
  await login.arrayBuffer();
  const cookie = login.headers.getSetCookie().find((line) => /session=/.test(line.split(';')[0]!));
  if (login.status !== 200 || cookie === undefined) throw new Error(`bench login answered ${login.status}`);
  return cookie.split(';')[0]!;
}
