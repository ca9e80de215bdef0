import type { StoreContext } from '../../store/store.js';
import { consumeChallenge } from '../tables/codes.js';
import { lockCustomer } from '../tables/customers.js';
import type { MessagingDeps } from '../deps.js';
import { blockOn } from '../rules/blocking.js';
import type { ParsedIdentity } from '../rules/identity.js';
import { isFirstProof, proveControl } from '../rules/ownership.js';
import { queueCodeIfWanted } from '../rules/queue-code.js';
import { fail, ok } from '../result.js';
import { createSession, deleteSession } from '../tables/sessions.js';
import {
  asksSecondStep,
  completeSignIn,
  deviceKeyOf,
  holdForSecondStep,
  type LoginResult,
  type SignInAttempt,
} from '../rules/sign-in.js';

/**
 * Sends a sign-in code when the identity names an account, verified or not: the code proves the
 * identity on its own. The caller answers 202 before this runs, so nothing tells who has an account.
 */
export async function requestSignInCode(
  deps: MessagingDeps,
  store: StoreContext,
  identity: ParsedIdentity,
): Promise<void> {
  await queueCodeIfWanted(deps, store, identity, 'sign_in', () => true);
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
  attempt: SignInAttempt,
  identity: ParsedIdentity,
  code: string,
): Promise<LoginResult> {
  const opened = await deps.db.transaction(async (tx) => {
    const customer = await lockCustomer(tx, identity);
    const accepted = await consumeChallenge(tx, deps, customer?.id ?? null, 'sign_in', code);
    if (!accepted || customer === null) return fail('refused', { customerId: customer?.id ?? null });
    // No code is sent to a blocked account; a code sent before the block is right, and says so.
    const block = blockOn(customer, deps.clock.now());
    if (block !== null) return fail('blocked', { customerId: customer.id, until: block.until });
    // Receiving the code proves the identity, so a store that requires verification lets it in. On
    // an unproven account it is the first proof: what the claimant set up before it ends, and
    // the password too, since this proof set none.
    const firstProof = isFirstProof(customer);
    const verified = await proveControl(tx, deps.clock, customer, { retiresPassword: true });
    if (asksSecondStep(attempt.store, verified)) return holdForSecondStep(tx, deps.clock, verified, 'code');
    const { client, previousSessionId } = attempt;
    const session = await createSession(tx, deps.clock, {
      customerId: customer.id,
      credentialVersion: verified.credential_version,
      client,
      signedIn: 'code',
    });
    if (session === null) return fail('refused', { customerId: customer.id });
    if (previousSessionId !== undefined) await deleteSession(tx, deps.clock, previousSessionId);
    return ok({ customer: verified, ...session, eventRecorded: session.eventRecorded || firstProof });
  });
  if (!opened.ok) return opened;
  const held = opened.value;
  if ('secondStep' in held) return ok(held);
  return completeSignIn(deps, attempt.store, { ...held, device: deviceKeyOf(attempt.client) });
}
