import type { PublicKeyCredentialCreationOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { enqueueMessage } from '../../delivery/outbox.js';
import { messageLanguage } from '../../delivery/templates.js';
import type { StoreContext } from '../../store/store.js';
import { lockCustomer, type CustomerRow } from '../tables/customers.js';
import { channelFor, type AuthDeps, type MessagingDeps } from '../deps.js';
import { isProven, templateName } from '../rules/ownership.js';
import { deviceFamily } from '../rules/device-family.js';
import { storePasskeyChallenge, takePasskeyChallenge } from '../tables/passkey-challenges.js';
import { insertPasskey, listCredentialDescriptors, type PasskeyView } from '../tables/passkeys.js';
import {
  passkeyAlgorithms,
  passkeyCeremonyTimeoutMilliseconds,
  webauthn,
  type RelyingParty,
} from '../rules/relying-party.js';
import { fail, ok, type Result } from '../result.js';
import { currentPasswordRefused } from '../rules/reauthentication.js';

/**
 * Options for adding a passkey to the signed-in customer's account, and the handle of the
 * challenge they carry (for the browser's cookie). A resident (discoverable) key is required, so
 * the passkey can later sign in without the customer typing who they are; the customer's own
 * passkeys are excluded, so one authenticator is not registered twice. An account whose identity
 * is unproven gets none: whoever registered it may not own the address (see ownership.ts).
 */
export async function startPasskeyRegistration(
  deps: Pick<AuthDeps, 'db' | 'clock'>,
  rp: RelyingParty,
  customer: Pick<CustomerRow, 'id' | 'name' | 'identity_value' | 'verified_at'>,
): Promise<Result<{ options: PublicKeyCredentialCreationOptionsJSON; handle: string }, 'identity_unverified'>> {
  if (!isProven(customer)) return fail('identity_unverified');
  const { generateRegistrationOptions } = await webauthn();
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: customer.identity_value,
    userDisplayName: customer.name,
    // The user handle an authenticator keeps is the customer id: a random UUID, no personal data.
    userID: new TextEncoder().encode(customer.id),
    attestationType: 'none',
    timeout: passkeyCeremonyTimeoutMilliseconds,
    excludeCredentials: await listCredentialDescriptors(deps.db, customer.id),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'preferred' },
    supportedAlgorithmIDs: passkeyAlgorithms,
  });
  const handle = await storePasskeyChallenge(deps.db, deps.clock, 'register', options.challenge, customer.id);
  return ok({ options, handle });
}

/** The browser's answer to the registration options, and what the customer gave with it. */
export interface PasskeyRegistration {
  /** The handle in this browser's challenge cookie. */
  handle: string | undefined;
  response: RegistrationResponseJSON;
  name: string | undefined;
  /** Asked of an account that has a password, so a stolen session alone plants no lasting way in. */
  currentPassword: string | undefined;
  userAgent: string | undefined;
}

export type PasskeyRegistrationResult = Result<
  PasskeyView,
  'credential_refused' | 'identity_unverified' | 'wrong_password'
>;

/**
 * Verifies the authenticator's answer against the challenge of this browser's handle (spent here,
 * whatever the outcome) and stores the passkey. Refused when the challenge is missing, expired,
 * used or another customer's, when the origin or RP ID is not this relying party's, when the
 * attestation does not verify, or when the credential is already registered.
 *
 * A passkey signs in without the password and outlives a password reset, so only a proven account
 * may add one, the current password is asked when the account has one, and the identity is told at
 * once (`passkey_added`, queued in the passkey's own transaction). The customer row is locked
 * there, and a password change since the password was checked refuses the passkey.
 */
export async function finishPasskeyRegistration(
  deps: MessagingDeps & Pick<AuthDeps, 'hasher'>,
  rp: RelyingParty,
  store: Pick<StoreContext, 'name' | 'identityMode' | 'languages' | 'defaultLanguage' | 'mailBranding'>,
  customer: CustomerRow,
  registration: PasskeyRegistration,
): Promise<PasskeyRegistrationResult> {
  const { handle, response, name, currentPassword, userAgent } = registration;
  const challenge = handle === undefined ? null : await takePasskeyChallenge(deps.db, deps.clock, 'register', handle);
  if (!isProven(customer)) return fail('identity_unverified');
  if (customer.password_hash !== null && !(await deps.hasher.verify(customer.password_hash, currentPassword ?? ''))) {
    return currentPasswordRefused();
  }
  if (challenge === null || challenge.customerId !== customer.id) return fail('credential_refused');
  const { verifyRegistrationResponse } = await webauthn();
  let verification;
  try {
    verification = await verifyRegistrationResponse({
      response,
      expectedChallenge: challenge.challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      // Preferred, not required: a security key without a PIN still makes a passkey.
      requireUserVerification: false,
      supportedAlgorithmIDs: passkeyAlgorithms,
    });
  } catch {
    // A malformed or forged answer: the library's message describes it, but never reaches a client.
    return fail('credential_refused');
  }
  if (!verification.verified) return fail('credential_refused');
  const { credential } = verification.registrationInfo;
  // The id kept is the attested one: it must be the one the browser reported, which the schema caps
  // at WebAuthn's 1,023 bytes, or a longer one behind a short one would reach the unique index.
  if (credential.id !== response.id) return fail('credential_refused');
  const passkey = await deps.db.transaction(async (tx) => {
    const locked = await lockCustomer(tx, { id: customer.id });
    if (locked === null || locked.credential_version !== customer.credential_version || !isProven(locked)) return null;
    const added = await insertPasskey(tx, deps.clock, {
      customerId: customer.id,
      credentialId: credential.id,
      publicKey: credential.publicKey,
      counter: credential.counter,
      transports: credential.transports ?? [],
      // Unnamed, a passkey is called after the device that made it, as sessions are described.
      name: name ?? deviceFamily(userAgent),
    });
    if (added === null) return null;
    await enqueueMessage(tx, deps, {
      channel: channelFor(store.identityMode),
      purpose: 'passkey_added',
      to: locked.identity_value,
      customerId: customer.id,
      storeName: store.name,
      branding: store.mailBranding,
      customerName: templateName(locked),
      language: messageLanguage(store, locked.locale),
    });
    return added;
  });
  if (passkey === null) return fail('credential_refused');
  deps.messagesQueued();
  return ok(passkey);
}
