import fs from 'node:fs';
import type { Keys } from '../keys.js';
import { addProvider, deleteProvider } from '../platform/providers.js';
import { listProviders, type ProviderField, type ProviderInput } from '../providers/configured.js';
import type { StoreDatabase } from '../storage/database.js';
import { operator, operatorPlatform, type OperatorDeps } from './operator.js';
import type { StoreContext } from '../store/store.js';

/** `store providers add|remove|list`: a store's sign-in providers, as the admin API manages them. */

export type ProviderCommand =
  /**
   * `privateKeyFile`: Apple's .p8 key; `clientSecretFile`: the secret, kept out of the shell's
   * history and the process list; both read when the command runs.
   */
  | { name: 'store.providers.add'; provider: ProviderInput; privateKeyFile?: string; clientSecretFile?: string }
  | { name: 'store.providers.remove'; id: string }
  | { name: 'store.providers.list' };

/** What a command about one store's providers works with (commands.ts hands it over). */
interface ProviderCommandDeps extends OperatorDeps {
  sdb: StoreDatabase;
  keys?: Keys | undefined;
  store: StoreContext;
}

/** The flag of each field, so a refusal names what the operator typed. */
const flagOf: Record<ProviderField, string> = {
  id: '--id',
  preset: '--preset',
  issuer: '--issuer',
  client_id: '--client-id',
  client_secret: '--client-secret',
  private_key: '--private-key',
  key_id: '--key-id',
  team_id: '--team-id',
  name: '--name',
  scopes: '--scopes',
};

export async function runProviderCommand(
  { sdb, keys, store, ...deps }: ProviderCommandDeps,
  command: ProviderCommand,
): Promise<{ ok: boolean; output?: unknown; error?: string }> {
  const platform = operatorPlatform(deps);
  switch (command.name) {
    case 'store.providers.list':
      return { ok: true, output: await listProviders(sdb) };
    case 'store.providers.remove':
      if (!(await deleteProvider(platform, operator, store, command.id)).ok)
        return { ok: false, error: `the store ${store.slug} has no provider ${command.id}` };
      return { ok: true, output: { id: command.id, status: 'removed' } };
    case 'store.providers.add': {
      if (keys === undefined) return { ok: false, error: 'store providers add needs the deployment keys' };
      let input = command.provider;
      const files = [
        ['--private-key', command.privateKeyFile, 'private_key'],
        ['--client-secret-file', command.clientSecretFile, 'client_secret'],
      ] as const;
      for (const [flag, file, field] of files) {
        if (file === undefined) continue;
        try {
          // A secret file's trailing newline (echo … > file) is not part of the secret.
          const text = fs.readFileSync(file, 'utf8');
          input = { ...input, [field]: field === 'client_secret' ? text.replace(/\r?\n$/, '') : text };
        } catch (error) {
          return { ok: false, error: `${flag} ${file} cannot be read: ${(error as Error).message}` };
        }
      }
      const result = await addProvider({ ...platform, keys }, operator, store, input);
      if (result.ok) return { ok: true, output: { ...result.value.provider, status: result.value.outcome } };
      if (result.error === 'phone_store')
        return {
          ok: false,
          error: `the store ${store.slug} signs customers in by phone number: providers sign in by a verified email, so only email stores have them`,
        };
      const lines = Object.entries(result.errors!).flatMap(([field, messages]) =>
        (messages ?? []).map((message) => `${flagOf[field as ProviderField]} ${message}`),
      );
      return { ok: false, error: lines.join('; ') };
    }
  }
}
