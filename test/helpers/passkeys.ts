import assert from 'node:assert/strict';
import { updateStore } from '../../src/store/store.js';
import { auth, registeredCustomer, type Reply, type TestApp } from './harness.js';
import { SoftAuthenticator, type CeremonyOverrides } from './webauthn.js';

export const sessionCookieName = 'storefront_session';
export const challengeCookieName = 'storefront_passkey_challenge';

export async function allowPasskeys(t: TestApp, on = true): Promise<void> {
  const result = await updateStore(t.db, t.clock, { passkeys: on });
  assert.ok(result.ok);
  t.services.store.invalidate();
}

export function cookieOf(reply: Reply, name: string): string | undefined {
  return reply.cookies.find((c) => c.name === name)?.value;
}

/** A Cookie header from name/value pairs, leaving out those not set. */
export function cookies(values: Record<string, string | undefined>): Record<string, string> {
  const header = Object.entries(values)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}=${value}`)
    .join('; ');
  return header === '' ? {} : { cookie: header };
}

/** The identity proven with its verification code: only a proven account may add a passkey. */
export async function verifyIdentity(t: TestApp, identity: string): Promise<void> {
  const code = await t.codeFor(identity, 'verification');
  const reply = await t.post(`${auth}/verify`, { identity, code });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
}

/** A registered customer with a proven identity, signed in with the password: its session cookie value. */
export async function signedInCustomer(t: TestApp, overrides: Record<string, unknown> = {}) {
  const customer = await registeredCustomer(t, overrides);
  await verifyIdentity(t, customer.identity);
  const reply = await t.post(`${auth}/login`, { identity: customer.identity, password: customer.password });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const session = cookieOf(reply, sessionCookieName);
  assert.ok(session);
  return { ...customer, session };
}

/** Registration options for the session: the options and the browser's challenge cookie. */
export async function registrationOptions(t: TestApp, session: string) {
  const reply = await t.post(`${auth}/passkeys/register/options`, undefined, cookies({ [sessionCookieName]: session }));
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const challenge = cookieOf(reply, challengeCookieName);
  assert.ok(challenge);
  return { options: reply.body, challenge };
}

/** Who adds a passkey: a session, and the account's password, which is asked when it has one. */
export interface PasskeyOwner {
  session: string;
  password?: string | undefined;
}

/** Adds a passkey made by `authenticator` to the session's account; the 201 answer. */
export async function addPasskey(
  t: TestApp,
  { session, password }: PasskeyOwner,
  authenticator: SoftAuthenticator,
  overrides: CeremonyOverrides = {},
  name?: string,
): Promise<Reply> {
  const { options, challenge } = await registrationOptions(t, session);
  const credential = authenticator.register(options, overrides);
  return t.post(
    `${auth}/passkeys/register`,
    {
      credential,
      ...(password === undefined ? {} : { current_password: password }),
      ...(name === undefined ? {} : { name }),
    },
    cookies({ [sessionCookieName]: session, [challengeCookieName]: challenge }),
  );
}

/** Sign-in options as a browser without a session gets them, with its challenge cookie. */
export async function loginOptions(t: TestApp) {
  const reply = await t.post(`${auth}/passkeys/login/options`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const challenge = cookieOf(reply, challengeCookieName);
  assert.ok(challenge);
  return { options: reply.body, challenge };
}

export function passkeyLogin(
  t: TestApp,
  credential: unknown,
  challenge: string | undefined,
  extra: Record<string, string> = {},
) {
  return t.post(`${auth}/passkeys/login`, { credential }, cookies({ [challengeCookieName]: challenge, ...extra }));
}

/** Options, an assertion from the authenticator and the sign-in, as one browser does it. */
export async function signInWithPasskey(
  t: TestApp,
  authenticator: SoftAuthenticator,
  overrides: CeremonyOverrides = {},
) {
  const { options, challenge } = await loginOptions(t);
  return passkeyLogin(t, authenticator.assert(options, overrides), challenge);
}

export async function auditRows(t: TestApp, event: string) {
  await t.services.background.drain();
  return t.db.query<{ customer_id: string | null; details: Record<string, string> }>(
    'SELECT customer_id::text AS customer_id, details FROM audit_events WHERE event = $1 ORDER BY id',
    [event],
  );
}

export async function count(t: TestApp, sql: string, params: unknown[] = []): Promise<number> {
  const [row] = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params);
  return row?.n ?? -1;
}
