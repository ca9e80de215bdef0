import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { updateStore } from '../../src/store/store.js';
import { auth, useHarness, type TestApp } from '../helpers/harness.js';
import { withSession } from '../helpers/customers.js';
import { addPasskey, loginOptions, registrationOptions } from '../helpers/passkeys.js';
import { SoftAuthenticator } from '../helpers/webauthn.js';
import { accountEndpoints } from './fuzz-account-cases.js';
import {
  caseArbitrary,
  freshChallenge,
  realCredential,
  stores,
  type CredentialMutation,
  type Endpoint,
  type FuzzCase,
  type StoreSetup,
} from './fuzz-cases.js';
import { fuzzer, seed } from './fuzz-properties.js';

/**
 * The properties of fuzz.test.ts (never a 5xx; a documented success or a catalogued problem; a
 * refusal writes nothing but its own bookkeeping) for the signed-in customer's calls and the
 * passkey calls. Most cases carry the seeded customer's session, so they reach the handlers; a
 * passkey ceremony's cases mostly carry a fresh challenge, and many a real credential from a
 * software authenticator with one member replaced by anything at all.
 */

const runsPerEndpointAndStore = 150;

/** `value` with the member at `path` (`response.signature`) set to `replacement`. */
function replaced(value: unknown, [path, replacement]: [string, unknown]): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  const keys = path.split('.');
  let target = copy;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>;
  target[keys.at(-1)!] = replacement;
  return copy;
}

/** The seeded customer, a second session and a passkey, a pending identity change, and passkeys on. */
async function seedAccount(t: TestApp, store: StoreSetup, endpoint: Endpoint & { endsSession?: boolean }) {
  const seeded = await seed(t, store);
  assert.ok((await updateStore(t.db, t.clock, { passkeys: true })).ok);
  t.services.store.invalidate();
  const { session } = seeded.sessions;
  const other = await t.post(`${auth}/login`, { identity: store.identity, password: seeded.pool.password });
  assert.equal(other.status, 200);
  const listed = await t.get(`${auth}/sessions`, withSession(session));
  const otherSession = (listed.body.sessions as Array<{ id: string; current: boolean }>).find((s) => !s.current);
  assert.ok(otherSession);
  const authenticator = new SoftAuthenticator();
  const passkey = await addPasskey(t, { session, password: seeded.pool.password }, authenticator);
  assert.equal(passkey.status, 201, JSON.stringify(passkey.body));
  const newIdentity = seeded.pool.identityField === 'email' ? 'ada.new@example.com' : '+14155550188';
  const change = await t.post(
    `${auth}/identity/change`,
    { [seeded.pool.identityField]: newIdentity, current_password: seeded.pool.password },
    withSession(session),
  );
  assert.equal(change.status, 202, JSON.stringify(change.body));
  const changeCode = await t.codeFor(newIdentity, 'identity_change');
  const pool = {
    ...seeded.pool,
    currentPasswords: endpoint.endsSession === true ? [] : [seeded.pool.password],
    codes: [...seeded.pool.codes, changeCode],
    ids: [otherSession.id, passkey.body.id as string],
  };
  return { pool, sessions: seeded.sessions, authenticator };
}

/**
 * Fills a ceremony's case in as it is sent: a fresh challenge from the options call in the
 * Cookie header, and a real credential for it in the body where the case asks for one.
 */
function ceremonyFiller(t: TestApp, endpoint: Endpoint, session: string, authenticator: SoftAuthenticator) {
  return async (fuzz: FuzzCase): Promise<FuzzCase> => {
    const cookie = fuzz.headers['cookie'];
    const wantsChallenge = cookie?.includes(freshChallenge) === true;
    const wantsCredential = typeof fuzz.payload === 'string' && fuzz.payload.includes(realCredential);
    if (endpoint.ceremony === undefined || (!wantsChallenge && !wantsCredential)) return fuzz;
    const { options, challenge } =
      endpoint.ceremony === 'register' ? await registrationOptions(t, session) : await loginOptions(t);
    let payload = fuzz.payload;
    if (wantsCredential) {
      let body: unknown;
      try {
        body = JSON.parse(payload as string);
      } catch {
        body = undefined;
      }
      const credential = (body as { credential?: Record<string, unknown> } | undefined)?.credential;
      if (credential !== null && typeof credential === 'object' && realCredential in credential) {
        const mutation = credential[realCredential] as CredentialMutation;
        const real =
          endpoint.ceremony === 'register' ? new SoftAuthenticator().register(options) : authenticator.assert(options);
        (body as Record<string, unknown>)['credential'] = mutation === null ? real : replaced(real, mutation);
        payload = JSON.stringify(body);
      }
    }
    const headers = wantsChallenge
      ? { ...fuzz.headers, cookie: cookie!.replace(freshChallenge, challenge) }
      : fuzz.headers;
    return { ...fuzz, headers, payload };
  };
}

describe("fuzzing the signed-in customer's calls and the passkey calls", () => {
  const harness = useHarness();

  for (const store of stores) {
    describe(store.label, () => {
      for (const endpoint of accountEndpoints) {
        test(`${endpoint.method} ${endpoint.path} (${endpoint.name}) never answers 5xx, answers only documented statuses or catalogued problems, and writes nothing when it refuses`, async (context) => {
          const t = await harness.start({ env: store.env });
          const { pool, sessions, authenticator } = await seedAccount(t, store, endpoint);
          const { send, tally } = await fuzzer(t, ceremonyFiller(t, endpoint, sessions.session, authenticator));
          await fc.assert(
            fc.asyncProperty(caseArbitrary(endpoint, pool, sessions), (fuzz) => send(fuzz, endpoint.success)),
            { numRuns: runsPerEndpointAndStore, includeErrorInReport: true },
          );
          context.diagnostic(tally());
        });
      }
    });
  }
});
