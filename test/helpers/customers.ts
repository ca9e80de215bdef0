import assert from 'node:assert/strict';
import { auth, registeredCustomer, type Reply, type TestApp } from './harness.js';

/**
 * A customer's steps through the HTTP API that many suites start from, and what the database
 * holds about them.
 */

export const sessionCookie = 'storefront_session';

export function withSession(session: string): { cookie: string } {
  return { cookie: `${sessionCookie}=${session}` };
}

/** The value of a cookie the answer sets, which must be there. */
export function cookieValue(reply: Reply, name: string): string {
  const cookie = reply.cookies.find((c) => c.name === name);
  assert.ok(cookie, `${name} is set`);
  return cookie.value;
}

/** Whether a session cookie still opens `/session`. */
export async function works(t: TestApp, session: string): Promise<boolean> {
  return (await t.get(`${auth}/session`, withSession(session))).status === 200;
}

/** The fields of a session as the session list and the export show it: a public handle, never the cookie. */
export const listedSessionFields = ['client', 'created_at', 'current', 'expires_at', 'id', 'last_seen_at'];

export interface Login {
  status: number;
  code: string;
  cookie: string | undefined;
  xsrf: string | undefined;
}

/** A login from a client address of its own, so logins do not share one address's limit. */
export async function loginFrom(t: TestApp, address: string, identity: string, password: string): Promise<Login> {
  const response = await t.app.inject({
    method: 'POST',
    url: `${auth}/login`,
    remoteAddress: address,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ identity, password }),
  });
  const name = t.services.config.sessionCookieName;
  return {
    status: response.statusCode,
    code: response.json().code ?? '',
    cookie: response.cookies.find((c) => c.name === name)?.value,
    xsrf: response.cookies.find((c) => c.name === 'XSRF-TOKEN')?.value,
  };
}

/** Asks for a reset code (which must be accepted) and spends it on `password`: the code and the reset's answer. */
export async function resetWithCode(t: TestApp, identity: string, password: string) {
  assert.equal((await t.post(`${auth}/password/forgot`, { identity })).status, 202);
  const code = await t.codeFor(identity, 'password_reset');
  const reply = await t.post(`${auth}/password/reset`, { identity, code, password, password_confirmation: password });
  return { code, reply };
}

/** An answer that set no session cookie, and no session row anywhere. */
export async function assertNoSessionOpened(t: TestApp, reply: Reply): Promise<void> {
  assert.equal(
    reply.cookies.find((cookie) => /session/i.test(cookie.name)),
    undefined,
  );
  assert.equal(await count(t, 'sessions'), 0);
}

/** Registers and logs in (which must succeed): the customer with their session and CSRF token. */
export async function signedIn(t: TestApp, overrides: Record<string, unknown> = {}) {
  const customer = await registeredCustomer(t, overrides);
  const reply = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const session = reply.cookies.find((cookie) => cookie.name === sessionCookie)?.value;
  const xsrf = reply.cookies.find((cookie) => cookie.name === 'XSRF-TOKEN')?.value;
  assert.ok(session && xsrf);
  return { ...customer, session, xsrf };
}

/** `SELECT count(*) FROM <from>`: `count(t, 'sessions WHERE customer_id = $1', [id])`. */
export async function count(t: TestApp, from: string, params: unknown[] = []): Promise<number> {
  const [row] = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${from}`, params);
  return row?.n ?? -1;
}

export async function verifiedAt(t: TestApp, id: string): Promise<Date | null> {
  const [row] = await t.db.query<{ verified_at: Date | null }>('SELECT verified_at FROM customers WHERE id = $1', [id]);
  assert.ok(row);
  return row.verified_at;
}
