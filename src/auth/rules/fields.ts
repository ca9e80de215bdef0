import { controlCharacter } from '../../i18n/controls.js';
import type { StoreContext } from '../../store/store.js';
import { addFieldError, type FieldErrors } from '../deps.js';
import { normalizeEmail, normalizePhone, phoneAllowed } from './identity.js';
import { newPasswordProblems } from './password.js';

/**
 * The rules of the fields a customer types, shared by every flow that takes them: a name
 * (registration, the profile, a passkey's name), a new password (registration, change, reset) and
 * an identity (registration, identity change). Each adds its messages to `errors`.
 */

export const maxNameLength = 120;

export function validateName(raw: string, errors: FieldErrors): string {
  const name = raw.trim();
  const length = [...name].length;
  if (length === 0) addFieldError(errors, 'name', 'required');
  if (length > maxNameLength) addFieldError(errors, 'name', 'max_length', { count: maxNameLength });
  if (controlCharacter.test(name)) addFieldError(errors, 'name', 'control_characters');
  return name;
}

/**
 * The new password's errors when other fields were refused already (see registrationErrors): the
 * password change and the password reset ask for it alike.
 */
export function newPasswordErrors(input: { password?: string; password_confirmation?: string }): FieldErrors {
  const errors: FieldErrors = {};
  if (input.password !== undefined) validateNewPassword(input.password, input.password_confirmation, errors);
  return errors;
}

/** A confirmation left undefined was refused already (missing or not text), so it is not compared. */
export function validateNewPassword(password: string, confirmation: string | undefined, errors: FieldErrors): void {
  for (const problem of newPasswordProblems(password)) (errors['password'] ??= []).push(problem);
  if (confirmation !== undefined && password !== confirmation) {
    addFieldError(errors, 'password_confirmation', 'password_mismatch');
  }
}

export function validateIdentity(
  store: StoreContext,
  input: { email?: string | undefined; phone?: string | undefined },
  allowedCallingCodes: readonly string[],
  errors: FieldErrors,
): string {
  const [used, other] = store.identityMode === 'email' ? (['email', 'phone'] as const) : (['phone', 'email'] as const);
  if (input[other] !== undefined) {
    addFieldError(errors, other, used === 'email' ? 'email_store_phone' : 'phone_store_email');
  }
  const raw = input[used];
  if (raw === undefined) {
    addFieldError(errors, used, 'required');
    return '';
  }
  const value = used === 'email' ? normalizeEmail(raw) : normalizePhone(raw);
  if (value === null) {
    addFieldError(errors, used, used === 'email' ? 'email' : 'phone');
    return '';
  }
  if (used === 'phone' && !phoneAllowed(value, allowedCallingCodes, store.phoneCountries)) {
    addFieldError(errors, 'phone', 'calling_code');
    return '';
  }
  return value;
}
