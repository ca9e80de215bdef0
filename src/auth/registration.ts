import { queueCode } from './queue-code.js';
import { randomUUID } from 'node:crypto';
import type { StoreContext } from '../store/store.js';
import { identityTaken, insertCustomer, toCustomer, type Customer } from './customers.js';
import { addFieldError, type AuthDeps, type FieldErrors } from './deps.js';
import { callingCodeOf, normalizeEmail, normalizePhone } from './identity.js';
import { newPasswordProblems } from './password.js';
import { fail, failFields, ok, type Result } from './result.js';

export const maxNameLength = 120;

export interface RegisterInput {
  name: string;
  email?: string | undefined;
  phone?: string | undefined;
  password: string;
  password_confirmation: string;
}

export type RegisterResult = Result<Customer, 'invalid' | 'identity_unavailable'>;

// C0 and C1 control characters, which have no place in a person's name.
const controlCharacter = /[\u0000-\u001f\u007f-\u009f]/u;

export function validateName(raw: string, errors: FieldErrors): string {
  const name = raw.trim();
  const length = [...name].length;
  if (length === 0) addFieldError(errors, 'name', 'Is required.');
  if (length > maxNameLength) addFieldError(errors, 'name', `Must be at most ${maxNameLength} characters.`);
  if (controlCharacter.test(name)) addFieldError(errors, 'name', 'Must not contain control characters.');
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
  for (const problem of newPasswordProblems(password)) addFieldError(errors, 'password', problem);
  if (confirmation !== undefined && password !== confirmation) {
    addFieldError(errors, 'password_confirmation', 'Must match the password.');
  }
}

export function validateIdentity(
  store: StoreContext,
  input: Pick<RegisterInput, 'email' | 'phone'>,
  allowedCallingCodes: readonly string[],
  errors: FieldErrors,
): string {
  const [used, other] = store.identityMode === 'email' ? (['email', 'phone'] as const) : (['phone', 'email'] as const);
  if (input[other] !== undefined) {
    addFieldError(errors, other, `This store identifies customers by ${used}; do not send ${other}.`);
  }
  const raw = input[used];
  if (raw === undefined) {
    addFieldError(errors, used, 'Is required.');
    return '';
  }
  const value = used === 'email' ? normalizeEmail(raw) : normalizePhone(raw);
  if (value === null) {
    addFieldError(
      errors,
      used,
      used === 'email'
        ? 'Must be a valid email address.'
        : 'Must be a valid phone number in international format, such as +14155550123.',
    );
    return '';
  }
  if (used === 'phone' && allowedCallingCodes.length > 0 && !allowedCallingCodes.includes(callingCodeOf(value) ?? '')) {
    addFieldError(errors, 'phone', 'Numbers from this country cannot be registered here.');
    return '';
  }
  return value;
}

/**
 * The field errors of a registration whose other fields were refused already (missing or not
 * text): those are left undefined and not checked again, so one answer can name every failing
 * field. The identity field is the store's, so only this check can say it is missing.
 */
export function registrationErrors(
  store: StoreContext,
  input: Partial<RegisterInput>,
  allowedCallingCodes: readonly string[],
): FieldErrors {
  const errors: FieldErrors = {};
  if (input.name !== undefined) validateName(input.name, errors);
  validateIdentity(store, input, allowedCallingCodes, errors);
  if (input.password !== undefined) validateNewPassword(input.password, input.password_confirmation, errors);
  return errors;
}

/** Creates an unverified customer and sends the first verification code. Never creates a session. */
export async function register(deps: AuthDeps, store: StoreContext, input: RegisterInput): Promise<RegisterResult> {
  const errors: FieldErrors = {};
  const name = validateName(input.name, errors);
  const identity = validateIdentity(store, input, deps.allowedCallingCodes, errors);
  validateNewPassword(input.password, input.password_confirmation, errors);
  if (Object.keys(errors).length > 0) return failFields('invalid', errors);

  const type = store.identityMode;
  if (await identityTaken(deps.db, type, identity)) return fail('identity_unavailable');

  const passwordHash = await deps.hasher.hash(input.password);
  const result = await deps.db.transaction(async (tx): Promise<RegisterResult> => {
    const now = deps.clock.now();
    const row = await insertCustomer(tx, { id: randomUUID(), name, type, value: identity, passwordHash, now });
    if (row === null) return fail('identity_unavailable');
    await queueCode(tx, deps, store, row, 'verification');
    return ok(toCustomer(row));
  });
  if (result.ok) deps.messagesQueued();
  return result;
}
