import assert from 'node:assert/strict';
import {
  addStoreHost,
  createStore,
  firstStoreId,
  updateStore,
  type NewStore,
  type StoreChanges,
} from '../../src/store/store.js';
import { auth, registration, toReply, type CodePurpose, type Reply, type TestApp } from './harness.js';
import { hostChanges } from './host-changes.js';

/**
 * Two stores on one deployment, each reached by its own Host header: store A is the first store
 * ('default') given the host a.shop.test, store B a store made beside it on b.shop.test.
 */

export const hostA = 'a.shop.test';
export const hostB = 'b.shop.test';

/** One store as a browser on its host talks to it. */
export interface StoreSide {
  id: string;
  slug: string;
  host: string;
  post(url: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  get(url: string, headers?: Record<string, string>): Promise<Reply>;
  /** A POST from a client address of its own (the limits count per address). */
  postFrom(address: string, url: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  /** The code in the newest message this store sent to `to` for `purpose` (delivering first). */
  codeFor(to: string, purpose: CodePurpose): Promise<string>;
  /** Changes this store's settings and makes the service read them again. */
  configure(changes: StoreChanges): Promise<void>;
}

/** A side of the deployment on `host`, for the store `id`. */
export function storeSide(t: TestApp, id: string, slug: string, host: string): StoreSide {
  const withHost = (headers: Record<string, string> = {}) => ({ host, ...headers });
  return {
    id,
    slug,
    host,
    post: (url, body, headers) => t.post(url, body, withHost(headers)),
    get: (url, headers) => t.get(url, withHost(headers)),
    async postFrom(address, url, body, headers) {
      return toReply(
        await t.app.inject({
          method: 'POST',
          url,
          remoteAddress: address,
          headers: withHost({ 'content-type': 'application/json', ...headers }),
          payload: JSON.stringify(body),
        }),
      );
    },
    async codeFor(to, purpose) {
      await t.deliver();
      const message = t.outbox.sent.filter((m) => m.from.storeId === id && m.to === to && m.purpose === purpose).at(-1);
      const code = message?.content.text.match(/\b\d{6}\b/)?.[0];
      if (code === undefined) throw new Error(`store ${slug} sent no ${purpose} code to ${to}`);
      return code;
    },
    async configure(changes) {
      const result = await updateStore(t.db, t.clock, changes, { store: id });
      assert.ok(result.ok, JSON.stringify(result));
      t.services.store.invalidate();
    },
  };
}

/** Gives the first store the host a.shop.test and makes store B on b.shop.test beside it. */
export async function twoStores(t: TestApp, b: Partial<NewStore> = {}): Promise<{ a: StoreSide; b: StoreSide }> {
  const hosted = await addStoreHost(t.db, t.clock, firstStoreId, hostA, hostChanges);
  assert.ok(hosted.ok, JSON.stringify(hosted));
  const created = await createStore(t.db, t.clock, {
    slug: 'shop-b',
    name: 'Shop B',
    identityMode: 'email',
    hosts: [hostB],
    ...b,
  });
  assert.ok(created.ok, JSON.stringify(created));
  t.services.store.invalidate();
  return {
    a: storeSide(t, firstStoreId, hosted.store.slug, hostA),
    b: storeSide(t, created.store.id, created.store.slug, hostB),
  };
}

/** Registers on the side's host (which must answer 201): the body sent, the identity and the new id. */
export async function registerIn(side: StoreSide, overrides: Record<string, unknown> = {}) {
  const body = registration(overrides);
  const reply = await side.post(`${auth}/register`, body);
  assert.equal(reply.status, 201, `${side.slug}: register answered ${reply.status} ${JSON.stringify(reply.body)}`);
  return { ...body, identity: reply.body.identity.value as string, id: reply.body.id as string };
}

/** Proves the identity with the verification code the store sent. */
export async function verifyIn(side: StoreSide, identity: string): Promise<void> {
  const code = await side.codeFor(identity, 'verification');
  const reply = await side.post(`${auth}/verify`, { identity, code });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
}

export function loginIn(side: StoreSide, identity: string, password: string, headers?: Record<string, string>) {
  return side.post(`${auth}/login`, { identity, password }, headers);
}

/** A login that must succeed: its session cookie, XSRF token and customer id. */
export async function signedInIn(side: StoreSide, identity: string, password: string) {
  const reply = await loginIn(side, identity, password);
  assert.equal(reply.status, 200, `${side.slug}: ${JSON.stringify(reply.body)}`);
  const session = reply.cookies.find((c) => c.name === 'storefront_session')?.value;
  const xsrf = reply.cookies.find((c) => c.name === 'XSRF-TOKEN')?.value;
  assert.ok(session && xsrf);
  return { session, xsrf, customerId: reply.body.customer.id as string };
}

/** What a refusal looks like without what differs on every answer: status and body without request_id. */
export function refusalShape(reply: Reply) {
  const { request_id: _id, ...body } = reply.body as Record<string, unknown>;
  return { status: reply.status, body, setCookie: reply.headers['set-cookie'] };
}

/** Every table that holds a store's rows, its own row and hosts included. */
export const storeTables = [
  'customers',
  'challenges',
  'sessions',
  'outbox',
  'webhook_endpoints',
  'webhook_events',
  'webhook_deliveries',
  'audit_events',
  'known_devices',
  'passkeys',
  'passkey_challenges',
  'store_providers',
  'provider_links',
  'provider_states',
  'store_hosts',
  'stores',
];

/** How many rows of each table belong to the store. */
export async function rowsOf(t: TestApp, storeId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of storeTables) {
    const column = table === 'stores' ? 'id' : 'store_id';
    const [row] = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [
      storeId,
    ]);
    counts[table] = row!.n;
  }
  return counts;
}
