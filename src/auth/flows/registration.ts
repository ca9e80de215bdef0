import { recordCustomerEvent } from '../../hooks/webhook-outbox.js';
import { queueCode } from '../rules/queue-code.js';
import { randomUUID } from 'node:crypto';
import type { StoreContext } from '../../store/store.js';
import { identityTaken, insertCustomer, toCustomer, type Customer } from '../tables/customers.js';
import type { AuthDeps, FieldErrors } from '../deps.js';
import { validateIdentity, validateName, validateNewPassword } from '../rules/fields.js';
import { validateLocale } from '../rules/locale.js';
import { validateNotBreached } from '../rules/breached.js';
import { fail, failFields, ok, type Result } from '../result.js';

export interface RegisterInput {
  name: string;
  email?: string | undefined;
  phone?: string | undefined;
  password: string;
  password_confirmation: string;
  /** The language the customer chose for their messages: one of the store's. */
  locale?: string | undefined;
}

export type RegisterResult = Result<Customer, 'invalid' | 'identity_unavailable'>;

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
  if (input.locale !== undefined) validateLocale(store, input.locale, errors);
  return errors;
}

/**
 * Creates an unverified customer and sends the first verification code. Never creates a session.
 * The customer's language is the one they chose (`locale`), else `requestedLocale` (the store
 * language their browser asked for, if any), else none: the store's default. The code goes out in it.
 */
export async function register(
  deps: AuthDeps,
  store: StoreContext,
  input: RegisterInput,
  requestedLocale: string | null = null,
): Promise<RegisterResult> {
  const errors: FieldErrors = {};
  const name = validateName(input.name, errors);
  const identity = validateIdentity(store, input, deps.allowedCallingCodes, errors);
  validateNewPassword(input.password, input.password_confirmation, errors);
  const locale = input.locale === undefined ? requestedLocale : validateLocale(store, input.locale, errors);
  // Before the identity is looked up: the check's time is the same for a taken identity and a free one.
  await validateNotBreached(deps.breachedPasswords, input.password, errors);
  if (Object.keys(errors).length > 0) return failFields('invalid', errors);

  const type = store.identityMode;
  if (await identityTaken(deps.db, type, identity)) return fail('identity_unavailable');

  const passwordHash = await deps.hasher.hash(input.password);
  const result = await deps.db.transaction(async (tx): Promise<RegisterResult> => {
    const now = deps.clock.now();
    const row = await insertCustomer(tx, { id: randomUUID(), name, type, value: identity, passwordHash, now, locale });
    if (row === null) return fail('identity_unavailable');
    await queueCode(tx, deps, store, row, 'verification');
    await recordCustomerEvent(tx, deps.clock, {
      type: 'customer.registered',
      customerId: row.id,
      data: { method: 'password' },
    });
    return ok(toCustomer(row));
  });
  if (result.ok) {
    deps.messagesQueued();
    deps.eventsRecorded();
  }
  return result;
}
