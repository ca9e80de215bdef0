import type { AuthenticationResponseJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { lockCustomer } from '../tables/customers.js';
import type { AuthDeps, MessagingDeps } from '../deps.js';
import { blockOn } from '../rules/blocking.js';
import { storePasskeyChallenge, takePasskeyChallenge } from '../tables/passkey-challenges.js';
import { counterAdvances, findPasskeyByCredentialId, recordPasskeyUse } from '../tables/passkeys.js';
import { passkeyCeremonyTimeoutMilliseconds, webauthn, type RelyingParty } from '../rules/relying-party.js';
import { fail, type Result } from '../result.js';
import { createSession, deleteSession } from '../tables/sessions.js';
import { completeSignIn, deviceKeyOf, type SignedIn, type SignInAttempt } from '../rules/sign-in.js';

/**
 * Options for signing in with a passkey, and the handle of their challenge (for the browser's
 * cookie). No credentials are listed: the authenticator offers its discoverable passkeys for this
 * RP ID, so nothing here says who has an account.
 */
export async function startPasskeyLogin(
  deps: Pick<AuthDeps, 'db' | 'clock'>,
  rp: RelyingParty,
): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; handle: string }> {
  const { generateAuthenticationOptions } = await webauthn();
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: [],
    userVerification: 'preferred',
    timeout: passkeyCeremonyTimeoutMilliseconds,
  });
  const handle = await storePasskeyChallenge(deps.db, deps.clock, 'login', options.challenge, null);
  return { options, handle };
}

/** Why a passkey sign-in was refused: for the audit trail only, the answer is the same for all. */
export type PasskeyLoginFailure =
  'challenge' | 'unknown_passkey' | 'verification' | 'counter_regressed' | 'unverified' | 'blocked';

/**
 * The facts of a refusal are for the audit trail; the answer is the same for all but `blocked`,
 * which comes only after the assertion was verified, with the block's end.
 */
export type PasskeyLoginResult = Result<
  SignedIn,
  PasskeyLoginFailure,
  { customerId: string | null; passkeyId?: string; until?: Date | null }
>;

/** The browser's answer to the sign-in options. */
export interface PasskeyAssertion {
  /** The handle in this browser's challenge cookie. */
  handle: string | undefined;
  response: AuthenticationResponseJSON;
}

/**
 * Signs in with a passkey's assertion. The challenge of this browser's handle is spent first, by
 * one conditional DELETE, so an assertion (which signs that challenge) opens at most one session
 * however many requests carry it. Then the passkey is found by its credential id and the signature,
 * origin, RP ID and challenge are verified. A signature counter that does not advance is refused:
 * the credential may have been cloned. On success, as a login: a session is opened (replacing the
 * request's own) and the new sign-in notice is considered. A passkey proves the authenticator, not
 * the identity: it never sets verified_at, and a store that requires verification refuses an
 * unproven account here as its password login does.
 */
export async function loginWithPasskey(
  deps: MessagingDeps,
  rp: RelyingParty,
  attempt: SignInAttempt,
  { handle, response }: PasskeyAssertion,
): Promise<PasskeyLoginResult> {
  const challenge = handle === undefined ? null : await takePasskeyChallenge(deps.db, deps.clock, 'login', handle);
  if (challenge === null) return fail('challenge', { customerId: null });
  const passkey = await findPasskeyByCredentialId(deps.db, response.id);
  if (passkey === null) return fail('unknown_passkey', { customerId: null });
  const refused = (reason: PasskeyLoginFailure) =>
    fail(reason, { customerId: passkey.customerId, passkeyId: passkey.publicId });
  const { verifyAuthenticationResponse } = await webauthn();
  let newCounter: number;
  try {
    const verification = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      // The stored counter is compared below, after the signature, so a regression is told apart
      // from a forgery and audited as what it is.
      credential: {
        id: passkey.credentialId,
        publicKey: passkey.publicKey,
        counter: 0,
        transports: passkey.transports,
      },
      requireUserVerification: false,
    });
    if (!verification.verified) return refused('verification');
    newCounter = verification.authenticationInfo.newCounter;
  } catch {
    return refused('verification');
  }
  // A discoverable credential names its account too; it must be the passkey's.
  const userHandle = response.response.userHandle;
  if (userHandle !== undefined && Buffer.from(userHandle, 'base64url').toString('utf8') !== passkey.customerId) {
    return refused('verification');
  }
  if (!counterAdvances(passkey.counter, newCounter)) return refused('counter_regressed');

  const opened = await deps.db.transaction(async (tx) => {
    // The customer first, then the passkey: the order every change of an account takes (its
    // deletion locks the customer, then cascades to the passkeys), so the two cannot deadlock.
    const row = await lockCustomer(tx, { id: passkey.customerId });
    if (row === null) return 'unknown_passkey' as const;
    if (attempt.store.verificationRequired && row.verified_at === null) return 'unverified' as const;
    const block = blockOn(row, deps.clock.now());
    if (block !== null) return block;
    // The counter is written only if it still advances: a parallel use of the same passkey with
    // another challenge that got there first leaves this one refused, never both recorded.
    if (!(await recordPasskeyUse(tx, deps.clock, passkey.publicId, newCounter))) return 'counter_regressed' as const;
    const { client, previousSessionId } = attempt;
    const session = await createSession(tx, deps.clock, {
      customerId: row.id,
      credentialVersion: row.credential_version,
      client,
      signedIn: 'passkey',
    });
    if (session === null) return 'unknown_passkey' as const;
    if (previousSessionId !== undefined) await deleteSession(tx, deps.clock, previousSessionId);
    return { customer: row, ...session };
  });
  if (typeof opened === 'string') return refused(opened);
  if ('blocked' in opened) return fail('blocked', { customerId: passkey.customerId, until: opened.until });
  return completeSignIn(deps, attempt.store, { ...opened, device: deviceKeyOf(attempt.client) });
}
