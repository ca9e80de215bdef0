import { listWebhookEndpoints, maxEndpointsPerStore, type EndpointErrors } from '../hooks/webhook-endpoints.js';
import { addWebhook, removeWebhook } from '../platform/webhooks.js';
import { operator, operatorPlatform, type OperatorDeps } from './operator.js';
import type { Keys } from '../keys.js';
import type { StoreDatabase } from '../storage/database.js';
import type { StoreContext } from '../store/store.js';

/** `webhooks add|list|remove`: a store's webhook endpoints, as the admin API manages them. */

export type WebhookCommand =
  | { name: 'webhooks.add'; url: string; events: string[]; description?: string }
  | { name: 'webhooks.list' }
  | { name: 'webhooks.remove'; id: string };

/** What a command about one store's webhooks works with (commands.ts hands it over). */
interface WebhookCommandDeps extends OperatorDeps {
  sdb: StoreDatabase;
  keys?: Keys | undefined;
  store: StoreContext;
}

/** The flag of each field, so a refusal names what the operator typed. */
const flagOf: Record<keyof EndpointErrors, string> = { url: '--url', events: '--events' };

export async function runWebhookCommand(
  { sdb, keys, store, ...deps }: WebhookCommandDeps,
  command: WebhookCommand,
): Promise<{ ok: boolean; output?: unknown; error?: string }> {
  const platform = operatorPlatform(deps);
  switch (command.name) {
    case 'webhooks.list':
      return { ok: true, output: await listWebhookEndpoints(sdb, deps.clock) };
    case 'webhooks.remove': {
      if (!(await removeWebhook(platform, operator, store, command.id)).ok)
        return { ok: false, error: `the store ${store.slug} has no webhook endpoint ${command.id}` };
      return { ok: true, output: { id: command.id, status: 'removed' } };
    }
    case 'webhooks.add': {
      if (keys === undefined) return { ok: false, error: 'webhooks add needs the deployment keys' };
      const { url, events, description } = command;
      const input = { url, events, ...(description !== undefined && { description }) };
      const result = await addWebhook({ ...platform, keys }, operator, store, input);
      // The only time the secret is shown: the receiver needs it to check each signature.
      if (result.ok) return { ok: true, output: { ...result.value.endpoint, secret: result.value.secret } };
      if (result.error === 'webhook_limit')
        return {
          ok: false,
          error: `the store ${store.slug} has ${maxEndpointsPerStore} webhook endpoints, as many as it may: remove one first`,
        };
      const lines = Object.entries(result.errors!).flatMap(([field, messages]) =>
        (messages ?? []).map((message) => `${flagOf[field as keyof EndpointErrors]} ${message}`),
      );
      return { ok: false, error: lines.join('; ') };
    }
  }
}
