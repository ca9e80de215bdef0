import { describe } from '../kit.js';
import { AcceptedStatus, bodyProblemResponses, Customer, IdentityChangeBody, IdentityConfirmBody } from '../schemas.js';

/** The OpenAPI description and validation of `POST /identity/change`. */
export const identityChangeSchema = {
  ...describe(
    'changeIdentity',
    'Ask to change the email address or phone number',
    'Checks current_password as a login does (it counts toward the failed-login limit; a wrong one is a 422 on current_password), then answers 202 whether or not the new identity is free (503 service_unavailable with Retry-After instead while this instance has too much work waiting, before the password is checked). A free one is sent a code for POST /identity/confirm; one that already has an account is told so instead. Send `email` on an email store and `phone` on a phone store.',
    { session: true },
  ),
  body: IdentityChangeBody,
  response: {
    202: AcceptedStatus,
    ...bodyProblemResponses(IdentityChangeBody, ['unauthenticated'], {
      fieldErrors: { email: ['Must be a valid email address.'], current_password: ['Is not correct.'] },
    }),
  },
};

/** The OpenAPI description and validation of `POST /identity/confirm`. */
export const identityConfirmSchema = {
  ...describe(
    'confirmIdentity',
    'Confirm the change of email address or phone number',
    'Switches the account to the new identity (verified now) when the code is the live change code, signs every other session out, and tells the old identity, naming the new one masked.',
    { session: true },
  ),
  body: IdentityConfirmBody,
  response: {
    200: Customer,
    ...bodyProblemResponses(IdentityConfirmBody, [
      'unauthenticated',
      'invalid_identity_challenge',
      'identity_unavailable',
    ]),
  },
};
