import type { AuthDeps, FieldErrors } from '../deps.js';
import { fieldPhrase } from './field-phrase.js';
import { failFields, type Failure } from '../result.js';
import type { CustomerRow } from '../tables/customers.js';

/**
 * A signed-in customer confirming a change with their current password (a password, identity or
 * passkey change, an erasure): the flows check it alike and refuse it in the same words, on
 * `current_password`.
 */

export const wrongCurrentPassword = fieldPhrase('wrong_current_password');

/**
 * Checks the current password, always: a guess costs one full verification whatever else is wrong
 * with the request. A wrong one is noted in `errors`; the answer says whether it matched.
 */
export async function checkCurrentPassword(
  deps: Pick<AuthDeps, 'hasher'>,
  customer: Pick<CustomerRow, 'password_hash'>,
  currentPassword: string,
  errors: FieldErrors,
): Promise<boolean> {
  const matches = await deps.hasher.verify(customer.password_hash, currentPassword);
  if (!matches) (errors['current_password'] ??= []).push(wrongCurrentPassword);
  return matches;
}

/** The refusal of a current password that is not the password, or no longer is (changed meanwhile). */
export function currentPasswordRefused(): Failure<'wrong_password'> {
  return failFields('wrong_password', { current_password: [wrongCurrentPassword] });
}
