import { fail, ok, type Result } from '../auth/result.js';
import type { Keys } from '../keys.js';
import {
  addStoreProvider,
  removeProvider,
  type ProviderField,
  type ProviderInput,
  type ProviderView,
} from '../providers/configured.js';
import { forStore } from '../storage/database.js';
import type { StoreContext } from '../store/store.js';
import { recordChange, type Actor, type PlatformDeps } from './actor.js';

/** A store's sign-in providers added, replaced and removed, for the admin API and the command line alike. */

export type ProviderAdded = { provider: ProviderView; outcome: 'added' | 'replaced' };
type ProviderErrors = Partial<Record<ProviderField, string[]>>;

/** `invalid` carries each field's refusals; a store of phone numbers has no providers (`phone_store`). */
export async function addProvider(
  deps: PlatformDeps & { keys: Pick<Keys, 'providers'> },
  actor: Actor,
  store: StoreContext,
  input: ProviderInput,
): Promise<Result<ProviderAdded, 'provider_invalid' | 'phone_store', { errors?: ProviderErrors }>> {
  const result = await addStoreProvider(forStore(deps.db, store.id), deps.clock, deps.keys, store, input);
  if (!result.ok)
    return result.reason === 'invalid' ? fail('provider_invalid', { errors: result.errors }) : fail('phone_store');
  await recordChange(deps, actor, store.id, { [`provider_${result.outcome}`]: result.provider.id });
  return ok({ provider: result.provider, outcome: result.outcome });
}

export async function deleteProvider(
  deps: PlatformDeps,
  actor: Actor,
  store: StoreContext,
  id: string,
): Promise<Result<string, 'no_such_provider'>> {
  if (!(await removeProvider(forStore(deps.db, store.id), id))) return fail('no_such_provider');
  await recordChange(deps, actor, store.id, { provider_removed: id });
  return ok(id);
}
