import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { recordOperatorChange } from './operator-audit.js';
import {
  addWebhookEndpoint,
  listWebhookEndpoints,
  maxEndpointsPerStore,
  removeWebhookEndpoint,
  type EndpointErrors,
} from '../hooks/webhook-endpoints.js';
import type { Keys } from '../keys.js';
import type { StoreDatabase } from '../storage/database.js';
import type { StoreContext } from '../store/store.js';

/** `webhooks add|list|remove`: a store's webhook endpoints, as the admin API manages them. */

export type WebhookCommand =
  | { name: 'webhooks.add'; url: string; events: string[]; description?: string }
  | { name: 'webhooks.list' }
  | { name: 'webhooks.remove'; id: string };

/** What a command about one store's webhooks works with (commands.ts hands it over). */
interface WebhookCommandDeps {
  sdb: StoreDatabase;
  clock: Clock;
  keys?: Keys | undefined;
  /** The URL rules are the command's own configuration, taken to be the service's. */
  config: Pick<Config, 'webhooks'>;
  store: StoreContext;
}

/** The flag of each field, so a refusal names what the operator typed. */
const flagOf: Record<keyof EndpointErrors, string> = { url: '--url', events: '--events' };

export async function runWebhookCommand(
  { sdb, clock, keys, config, store }: WebhookCommandDeps,
  command: WebhookCommand,
): Promise<{ ok: boolean; output?: unknown; error?: string }> {
  switch (command.name) {
    case 'webhooks.list':
      return { ok: true, output: await listWebhookEndpoints(sdb, clock) };
    case 'webhooks.remove': {
      if (!(await removeWebhookEndpoint(sdb, command.id)))
        return { ok: false, error: `the store ${store.slug} has no webhook endpoint ${command.id}` };
      // As the admin API records it: an endpoint is where customers' data goes.
      await recordOperatorChange(sdb, clock, { webhook_removed: command.id });
      return { ok: true, output: { id: command.id, status: 'removed' } };
    }
    case 'webhooks.add': {
      if (keys === undefined) return { ok: false, error: 'webhooks add needs the deployment keys' };
      const { url, events, description } = command;
      const input = { url, events, ...(description !== undefined && { description }) };
      const result = await addWebhookEndpoint(sdb, { clock, keys, rules: config.webhooks }, input);
      if (result.ok) {
        await recordOperatorChange(sdb, clock, { webhook_added: result.endpoint.id });
        // The only time the secret is shown: the receiver needs it to check each signature.
        return { ok: true, output: { ...result.endpoint, secret: result.secret } };
      }
      if ('full' in result)
        return {
          ok: false,
          error: `the store ${store.slug} has ${maxEndpointsPerStore} webhook endpoints, as many as it may: remove one first`,
        };
      const lines = Object.entries(result.errors).flatMap(([field, messages]) =>
        (messages ?? []).map((message) => `${flagOf[field as keyof EndpointErrors]} ${message}`),
      );
      return { ok: false, error: lines.join('; ') };
    }
  }
}
