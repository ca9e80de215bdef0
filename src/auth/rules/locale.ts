import type { StoreContext } from '../../store/store.js';
import { addFieldError, type FieldErrors } from '../deps.js';

/**
 * A customer's locale as they send it (registration, the profile): one of the store's languages,
 * or null for the store's default. Anything else is a field error on `locale`.
 */
export function validateLocale(
  store: Pick<StoreContext, 'languages'>,
  raw: string | null,
  errors: FieldErrors,
): string | null {
  if (raw === null || store.languages.includes(raw)) return raw;
  addFieldError(errors, 'locale', 'locale', { languages: store.languages.join(', ') });
  return null;
}
