import type { CustomerDetails, StaffChange } from '../../auth/flows/staff.js';
import { addFieldError, type FieldErrors } from '../../auth/deps.js';
import { blockOn } from '../../auth/rules/blocking.js';
import { validateIdentity, validateName } from '../../auth/rules/fields.js';
import { validateLocale } from '../../auth/rules/locale.js';
import { toCustomer } from '../../auth/tables/customers.js';
import type { SearchPosition, StaffCustomerRow } from '../../auth/tables/staff-customers.js';
import type { IdentityMode } from '../../config.js';
import type { StoreContext } from '../../store/store.js';
import { ProblemError } from '../core/problems.js';
import type { CustomerPatch } from './customer-schemas.js';

/** A customer as the staff API shows it and takes it: answers, cursors and a patch checked. */

export const noSuchCustomer = 'No customer of this store has this id.';
export const notFound = () => new ProblemError('not_found', {}, {}, noSuchCustomer);

export function listed(row: StaffCustomerRow, now: Date) {
  const block = blockOn(row, now);
  return {
    ...toCustomer(row),
    status:
      block !== null ? ('blocked' as const) : row.verified_at === null ? ('unverified' as const) : ('active' as const),
    locale: row.locale,
    external_id: row.external_id,
    created_at: new Date(row.created_at).toISOString(),
    block:
      block === null
        ? null
        : {
            reason: row.blocked_reason ?? '',
            blocked_at: new Date(row.blocked_at!).toISOString(),
            until: block.until === null ? null : block.until.toISOString(),
          },
  };
}

export function described(details: CustomerDetails, now: Date) {
  return {
    ...listed(details.row, now),
    last_sign_in_at: details.lastSignInAt,
    session_count: details.sessions,
    passkey_count: details.passkeys,
    providers: details.providers,
    two_factor: details.row.two_factor,
  };
}

export function cursorOf(position: SearchPosition): string {
  return Buffer.from(JSON.stringify([position.by, position.key, position.id])).toString('base64url');
}

export function positionOf(cursor: string | undefined): SearchPosition | undefined {
  if (cursor === undefined) return undefined;
  try {
    const [by, key, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[];
    if (
      (by === 'identity' || by === 'name') &&
      typeof key === 'string' &&
      typeof id === 'string' &&
      /^[0-9a-f-]{36}$/.test(id)
    )
      return { by, key, id };
  } catch {
    // answered below
  }
  throw new ProblemError('validation_failed', { errors: { cursor: ["Is not a page's next_cursor."] } });
}

/** What a search matches an identity against: as identities are stored (lower case; a phone's digits and `+`). */
export function identityPrefixOf(mode: IdentityMode, query: string): string {
  const text = query.trim().toLowerCase();
  return mode === 'phone' ? text.replace(/[\s().-]/g, '') : text;
}

export function refuse(errors: FieldErrors): void {
  if (Object.keys(errors).length > 0) throw new ProblemError('validation_failed', { errors });
}

/** A patch's fields in the staff flow's terms, every value checked by the rules a customer's own change meets. */
export function changeOf(
  store: StoreContext,
  body: CustomerPatch,
  allowedCallingCodes: readonly string[],
): StaffChange {
  const errors: FieldErrors = {};
  const change: StaffChange = {};
  if (body.name !== undefined) change.name = validateName(body.name, errors);
  if (body.locale !== undefined) change.locale = validateLocale(store, body.locale, errors);
  const other = store.identityMode === 'email' ? 'phone' : 'email';
  if (body[other] !== undefined)
    addFieldError(errors, other, other === 'phone' ? 'email_store_phone' : 'phone_store_email');
  else if (body[store.identityMode] !== undefined)
    change.identity = validateIdentity(store, body, allowedCallingCodes, errors);
  if (body.verified !== undefined) change.verified = body.verified;
  if (body.external_id !== undefined) change.externalId = body.external_id;
  refuse(errors);
  return change;
}

/**
 * The platform's staff and a store's customers, on the admin listener: find them, read one, make
 * one, change, block, require a reset, sign out, delete. Each call is in the store's audit trail
 * with the token's id, and each change writes its event for the store's webhook endpoints.
 */
