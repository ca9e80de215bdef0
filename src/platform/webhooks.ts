import { fail, ok, type Result } from '../auth/result.js';
import {
  addWebhookEndpoint,
  changeWebhookEndpoint,
  removeWebhookEndpoint,
  rotateWebhookSecret,
  type EndpointErrors,
  type EndpointInput,
  type WebhookEndpointView,
} from '../hooks/webhook-endpoints.js';
import type { Keys } from '../keys.js';
import { forStore } from '../storage/database.js';
import type { StoreContext } from '../store/store.js';
import { recordChange, type Actor, type PlatformDeps } from './actor.js';

/**
 * A store's webhook endpoints added, changed, removed and given a new secret, for the admin API
 * and the command line alike: an endpoint is where customers' data goes, so each is recorded.
 */

type WithKeys = PlatformDeps & { keys: Pick<Keys, 'hooks'> };
/** The endpoint, and its secret: answered here only, for the receiver to check each signature. */
export type EndpointWithSecret = { endpoint: WebhookEndpointView; secret: string };
type EndpointFacts = { errors?: EndpointErrors };

/** `endpoint_invalid` carries each field's refusals; `webhook_limit`: the store has as many as it may. */
export async function addWebhook(
  deps: WithKeys,
  actor: Actor,
  store: StoreContext,
  input: Required<Pick<EndpointInput, 'url' | 'events'>> & { description?: string },
): Promise<Result<EndpointWithSecret, 'endpoint_invalid' | 'webhook_limit', EndpointFacts>> {
  const { clock, keys, config } = deps;
  const result = await addWebhookEndpoint(forStore(deps.db, store.id), { clock, keys, rules: config.webhooks }, input);
  if (!result.ok) return 'full' in result ? fail('webhook_limit') : fail('endpoint_invalid', { errors: result.errors });
  await recordChange(deps, actor, store.id, { webhook_added: result.endpoint.id });
  return ok({ endpoint: result.endpoint, secret: result.secret });
}

export async function changeWebhook(
  deps: PlatformDeps,
  actor: Actor,
  store: StoreContext,
  id: string,
  input: EndpointInput,
): Promise<Result<WebhookEndpointView, 'endpoint_invalid' | 'no_such_endpoint', EndpointFacts>> {
  const { clock, config } = deps;
  const result = await changeWebhookEndpoint(forStore(deps.db, store.id), { clock, rules: config.webhooks }, id, input);
  if (!result.ok)
    return 'missing' in result ? fail('no_such_endpoint') : fail('endpoint_invalid', { errors: result.errors });
  await recordChange(deps, actor, store.id, { webhook_changed: result.endpoint.id });
  return ok(result.endpoint);
}

export async function removeWebhook(
  deps: PlatformDeps,
  actor: Actor,
  store: StoreContext,
  id: string,
): Promise<Result<string, 'no_such_endpoint'>> {
  if (!(await removeWebhookEndpoint(forStore(deps.db, store.id), id))) return fail('no_such_endpoint');
  await recordChange(deps, actor, store.id, { webhook_removed: id });
  return ok(id);
}

/** For 24 hours every delivery carries both signatures, the new secret's and the old one's. */
export async function rotateWebhook(
  deps: WithKeys,
  actor: Actor,
  store: StoreContext,
  id: string,
): Promise<Result<EndpointWithSecret, 'no_such_endpoint'>> {
  const rotated = await rotateWebhookSecret(forStore(deps.db, store.id), deps, id);
  if (rotated === null) return fail('no_such_endpoint');
  await recordChange(deps, actor, store.id, { webhook_secret_rotated: rotated.endpoint.id });
  return ok(rotated);
}
