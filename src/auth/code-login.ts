import type { StoreContext } from '../store/store.js';
import { consumeChallenge } from './codes.js';
import { findCustomerByIdentity } from './customers.js';
import type { MessagingDeps } from './deps.js';
import type { ParsedIdentity } from './identity.js';
import { completeSignIn, type LoginResult } from './login.js';
import { proveControl } from './ownership.js';
import { queueCodeIfWanted } from './queue-code.js';
import { fail, ok } from './result.js';
import { createSession, deleteSession, type SessionClient } from './sessions.js';

/**
 * Sends a sign-in code when the identity names an account, verified or not: the code proves the
 * identity on its own. The caller answers 202 before this runs, so nothing tells who has an account.
 */
export async function requestSignInCode(
  deps: MessagingDeps,
  store: StoreContext,
  identity: ParsedIdentity,
): Promise<void> {
  const { value } = identity;
  if (value === null) return;
  await queueCodeIfWanted(deps, store, value, 'sign_in', () => true);
}

/**
 * Signs in with a live sign-in code. Unknown identity, wrong code and expired code take the same
 * path through consumeChallenge (one attempt query, the same MAC work, an unsynchronised commit)
 * and fail alike. The customer row is locked before the code is spent, as a reset does, so the
 * credential version the session is opened against (see createSession) is the current one and a
 * password change waits for this sign-in rather than racing it. A session the request already
 * carried is replaced, never reused.
 */
export async function loginWithCode(
  deps: MessagingDeps,
  store: StoreContext,
  identity: ParsedIdentity,
  code: string,
  previousSessionId: string | undefined,
  /** The device signing in: its session keeps the user agent and masked address. */
  client: SessionClient,
): Promise<LoginResult> {
  const { value } = identity;
  const opened = await deps.db.transaction(async (tx) => {
    const customer =
      value === null ? null : await findCustomerByIdentity(tx, store.identityMode, value, { forUpdate: true });
    const accepted = await consumeChallenge(tx, deps, customer?.id ?? null, 'sign_in', code);
    if (!accepted || customer === null) return fail('refused', { customerId: customer?.id ?? null });
    // Receiving the code proves the identity, so a store that requires verification lets it in. On
    // an unproven account it is the first proof: what the claimant set up before it ends, and
    // the password too, since this proof set none.
    const verified = await proveControl(tx, deps.clock, customer, { retiresPassword: true });
    const session = await createSession(tx, deps.clock, customer.id, verified.credential_version, client);
    if (session === null) return fail('refused', { customerId: customer.id });
    if (previousSessionId !== undefined) await deleteSession(tx, deps.clock, previousSessionId);
    return ok({ row: verified, session });
  });
  if (!opened.ok) return opened;
  return completeSignIn(deps, store, opened.value.row, opened.value.session, client);
}
