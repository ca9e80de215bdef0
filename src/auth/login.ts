import type { StoreContext } from '../store/store.js';
import {
  findCustomerByIdentity,
  toCustomer,
  upgradePasswordHash,
  type Customer,
  type CustomerRow,
} from './customers.js';
import type { AuthDeps, MessagingDeps } from './deps.js';
import type { ParsedIdentity } from './identity.js';
import { fail, ok, type Ok, type Result } from './result.js';
import type { NewSession, SessionClient } from './sessions.js';
import { deviceKeyOf, noteSignIn, type SignInNotice } from './sign-in-notice.js';
import { openSignInSession } from './sign-in-session.js';

/** A sign-in of any kind that opened its session. */
export interface SignedIn {
  customer: Customer;
  sessionId: string;
  /** What became of the new sign-in notice; a failure is the caller's to log, the login stands. */
  signInNotice: SignInNotice | { failed: unknown };
}

/** `customerId` is for the audit trail only; the answer never depends on it. */
export type LoginResult = Result<SignedIn, 'refused', { customerId: string | null }>;

/**
 * Checks the password and opens a session. Unknown identity, wrong password and (on a store that
 * requires it) an unverified account all do one full hash verification and fail alike, so the
 * three cases cannot be told apart by answer or by time.
 */
export async function login(
  deps: MessagingDeps & Pick<AuthDeps, 'hasher'>,
  store: StoreContext,
  identity: ParsedIdentity,
  password: string,
  previousSessionId: string | undefined,
  client: SessionClient,
): Promise<LoginResult> {
  const { value } = identity;
  const customer = value === null ? null : await findCustomerByIdentity(deps.db, store.identityMode, value);
  if (customer === null) {
    await deps.hasher.verifyDummy(password);
    return fail('refused', { customerId: null });
  }
  const passwordMatches = await deps.hasher.verify(customer.password_hash, password);
  if (!passwordMatches || (store.verificationRequired && customer.verified_at === null)) {
    return fail('refused', { customerId: customer.id });
  }

  const passwordHash = customer.password_hash;
  if (passwordHash !== null && deps.hasher.needsRehash(passwordHash)) {
    // The same password under new parameters: the credential version stays, and so do sessions.
    const upgraded = await deps.hasher.hash(password);
    await upgradePasswordHash(deps.db, customer.id, passwordHash, upgraded);
  }
  // One statement opens the session, ends the one the request carried (never reused: session
  // fixation) and refreshes a known device; no transaction is needed around it.
  const opened = await openSignInSession(
    deps.db,
    deps.clock,
    customer.id,
    customer.credential_version,
    client,
    deviceKeyOf(client),
    previousSessionId,
  );
  // The password was changed while it was being checked: the one given is no longer the password.
  if (opened === null) return fail('refused', { customerId: customer.id });
  // After the session, outside its statement: the notice is a few more queries on the success path
  // only (a wrong password never reaches here, so its timing is untouched), and a failure to queue
  // it must not turn a correct password into a refused login. From a known device it costs none.
  return completeSignIn(deps, store, customer, opened.session, client, opened.knownDeviceRefreshed);
}

/**
 * The success of every way of signing in, once its session is open: the new sign-in notice is
 * considered outside the session's statement, and a failure to queue it is handed back for the
 * caller to log, never turning a sign-in into a refusal.
 */
export async function completeSignIn(
  deps: MessagingDeps,
  store: StoreContext,
  customer: CustomerRow,
  session: NewSession,
  client: SessionClient,
  knownDeviceRefreshed = false,
): Promise<Ok<SignedIn>> {
  const signInNotice = await noteSignIn(deps, store, customer, session.sessionId, client, knownDeviceRefreshed).catch(
    (error: unknown) => ({ failed: error }),
  );
  return ok({ customer: toCustomer(customer), sessionId: session.sessionId, signInNotice });
}
