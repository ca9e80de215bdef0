import { Type } from '@sinclair/typebox';
import { PasskeyCreationOptions, Passkey, PasskeyList, PasskeyRegisterBody } from '../passkey-schemas.js';
import { describe } from '../kit.js';
import { bodyProblemResponses, customerProblems, DeletedStatus, problemResponses } from '../schemas.js';

export const credentialRefused = 'Could not be verified for this account and page; ask for new options and try again.';

// Every account-area passkey route needs the session; with the store setting off each is a 404.
const signedInProblems = () => problemResponses(...customerProblems, 'unauthenticated', 'not_found');

/** The OpenAPI description and validation of `POST /passkeys/register/options`. */
export const registrationOptionsSchema = {
  ...describe(
    'passkeyRegistrationOptions',
    'Start adding a passkey',
    'Options for `navigator.credentials.create` (resident key required, user verification preferred), and an HttpOnly cookie binding their challenge (single use, 5 minutes) to this browser. An account whose email or phone is not yet proven (verified, reset or signed in with a code) cannot add a passkey: 403 identity_unverified.',
    { session: true },
  ),
  response: {
    200: PasskeyCreationOptions,
    ...problemResponses(...customerProblems, 'unauthenticated', 'identity_unverified', 'not_found'),
  },
};

/** The OpenAPI description and validation of `POST /passkeys/register`. */
export const registerPasskeySchema = {
  ...describe(
    'registerPasskey',
    'Add a passkey',
    "Verifies the browser's answer against this browser's challenge (spent whatever the outcome) and keeps the passkey. A wrong origin or RP ID, a used, expired or other browser's challenge, or a credential already registered is a 422 on `credential`. An account that has a password must send it as `current_password` (checked as a login is, counted by the failed-login limit; a wrong one is a 422 on `current_password`). An unproven account gets 403 identity_unverified.",
    { session: true },
  ),
  body: PasskeyRegisterBody,
  response: {
    201: Passkey,
    ...bodyProblemResponses(PasskeyRegisterBody, ['unauthenticated', 'identity_unverified', 'not_found'], {
      fieldErrors: { credential: [credentialRefused], current_password: ['Is not correct.'] },
    }),
  },
};

/** The OpenAPI description and validation of `GET /passkeys`. */
export const listPasskeysSchema = {
  ...describe('listPasskeys', 'List my passkeys', "The signed-in customer's passkeys, newest first.", {
    session: true,
  }),
  response: { 200: PasskeyList, ...signedInProblems() },
};

/** The OpenAPI description and validation of `POST /passkeys/:id/delete`. */
export const removePasskeySchema = {
  ...describe(
    'removePasskey',
    'Remove a passkey',
    "Removes the passkey with this id; it can no longer sign in. Needs the session only. An id that is not one of the caller's passkeys answers 404 whether it exists or not.",
    { session: true },
  ),
  params: Type.Object({ id: Type.String({ description: 'The `id` of a passkey from the list.' }) }),
  response: { 200: DeletedStatus, ...signedInProblems() },
};
