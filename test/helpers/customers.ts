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
