import { randomBytes, randomUUID } from 'node:crypto';
import { secondsBefore, type Clock } from '../clock.js';
import { acceptedKeys, seal, unseal, type Keys } from '../keys.js';
import { deleteInBatch, isUuid, type Queryable, type StoreQueryable } from '../storage/database.js';
import { webhookSecretKey } from './standard-webhooks.js';
import { allEvents, customerEventTypes } from './webhook-catalogue.js';
import { hurryEndpointDeliveries } from './webhook-outbox.js';
import { webhookTargetProblem, type TargetRules } from './webhook-target.js';

/** This module owns the `webhook_endpoints` table: where a store's events go, and how they are signed. */

/** Endpoints a store may have: enough for its CRM, mail, orders and a spare, not a fan-out service. */
export const maxEndpointsPerStore = 20;
/** How long the previous secret keeps signing beside a rotated one, so receivers can switch over. */
export const rotationOverlapSeconds = 24 * 60 * 60;
/** An endpoint failing for this long without one success is disabled. */
export const failingDaysToDisable = 5;

export interface WebhookEndpointView {
  id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_at: string | null;
  disabled_reason: string | null;
  /** When its current run of failures began; null when its last answer was a success. */
  failing_since: string | null;
  /** Until when the secret before the last rotation still signs beside the new one. */
  previous_secret_until: string | null;
  created_at: string;
  updated_at: string;
}

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());

interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  description: string;
  disabled_at: Date | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  previous_secret_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

const viewColumns = `id::text AS id, url, events, description, disabled_at, disabled_reason, failing_since,
  previous_secret_until, created_at, updated_at`;

function toView(row: EndpointRow, now: Date): WebhookEndpointView {
  const rotating = row.previous_secret_until !== null && new Date(row.previous_secret_until) > now;
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.disabled_at === null,
    disabled_at: iso(row.disabled_at),
    disabled_reason: row.disabled_reason,
    failing_since: iso(row.failing_since),
    previous_secret_until: rotating ? iso(row.previous_secret_until) : null,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/** A new signing secret: 32 random bytes, as Standard Webhooks' libraries make them. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export interface EndpointInput {
  url?: string;
  events?: string[];
  description?: string;
  enabled?: boolean;
}

export type EndpointErrors = Partial<Record<'url' | 'events', string[]>>;

const knownEvents: readonly string[] = [allEvents, ...customerEventTypes];

/** What is wrong with the fields given, the URL's name looked up (see webhookTargetProblem). */
async function inputProblems(input: EndpointInput, rules: TargetRules): Promise<EndpointErrors> {
  const errors: EndpointErrors = {};
  if (input.url !== undefined) {
    const problem = await webhookTargetProblem(input.url, rules);
    if (problem !== null) errors.url = [problem];
  }
  if (input.events !== undefined) {
    const unknown = input.events.filter((event) => !knownEvents.includes(event));
    if (input.events.length === 0) errors.events = ['must name at least one event, or "*" for all'];
    else if (unknown.length > 0)
      errors.events = [
        `${unknown.map((e) => JSON.stringify(e)).join(', ')}: no such event (see the admin OpenAPI document's webhooks)`,
      ];
  }
  return errors;
}

export type AddEndpointResult =
  | { ok: true; endpoint: WebhookEndpointView; secret: string }
  | { ok: false; errors: EndpointErrors }
  | { ok: false; full: true };

/** Adds an endpoint; its secret is answered here only, sealed under APP_SECRET for signing. */
export async function addWebhookEndpoint(
  db: StoreQueryable,
  deps: { clock: Clock; keys: Pick<Keys, 'hooks'>; rules: TargetRules },
  input: Required<Pick<EndpointInput, 'url' | 'events'>> & { description?: string },
): Promise<AddEndpointResult> {
  const errors = await inputProblems(input, deps.rules);
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const secret = newSecret();
  const now = deps.clock.now();
  const [row] = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (store_id, id, url, events, description, sealed_secret, created_at, updated_at)
     SELECT $1, $2, $3, $4, $5, $6, $7, $7
      WHERE (SELECT count(*) FROM webhook_endpoints WHERE store_id = $1) < $8
     RETURNING ${viewColumns}`,
    [
      db.storeId,
      randomUUID(),
      input.url,
      [...new Set(input.events)],
      input.description ?? '',
      seal(deps.keys.hooks, secret),
      now,
      maxEndpointsPerStore,
    ],
  );
  if (row === undefined) return { ok: false, full: true };
  return { ok: true, endpoint: toView(row, now), secret };
}

export async function listWebhookEndpoints(db: StoreQueryable, clock: Clock): Promise<WebhookEndpointView[]> {
  const rows = await db.query<EndpointRow>(
    `SELECT ${viewColumns} FROM webhook_endpoints WHERE store_id = $1 ORDER BY created_at, id`,
    [db.storeId],
  );
  return rows.map((row) => toView(row, clock.now()));
}

export async function findWebhookEndpoint(
  db: StoreQueryable,
  clock: Clock,
  id: string,
): Promise<WebhookEndpointView | null> {
  if (!isUuid(id)) return null;
  const [row] = await db.query<EndpointRow>(
    `SELECT ${viewColumns} FROM webhook_endpoints WHERE store_id = $1 AND id = $2`,
    [db.storeId, id],
  );
  return row === undefined ? null : toView(row, clock.now());
}

export type ChangeEndpointResult =
  { ok: true; endpoint: WebhookEndpointView } | { ok: false; errors: EndpointErrors } | { ok: false; missing: true };

/**
 * Changes the fields given. `enabled: true` turns a disabled endpoint back on with a clean record
 * (what was queued for it before is sent now); `enabled: false` holds those and queues nothing new:
 * the events while it is off are not for it.
 */
export async function changeWebhookEndpoint(
  db: StoreQueryable,
  deps: { clock: Clock; rules: TargetRules },
  id: string,
  input: EndpointInput,
): Promise<ChangeEndpointResult> {
  if (!isUuid(id)) return { ok: false, missing: true };
  const errors = await inputProblems(input, deps.rules);
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const now = deps.clock.now();
  const [row] = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET url = COALESCE($3, url), events = COALESCE($4, events),
            description = COALESCE($5, description), updated_at = $6,
            disabled_at = CASE WHEN $7::boolean IS NULL THEN disabled_at WHEN $7 THEN NULL ELSE COALESCE(disabled_at, $6) END,
            disabled_reason = CASE WHEN $7::boolean IS NULL THEN disabled_reason WHEN $7 THEN NULL
                                   ELSE COALESCE(disabled_reason, 'disabled by the platform') END,
            failing_since = CASE WHEN $7::boolean THEN NULL ELSE failing_since END
      WHERE store_id = $1 AND id = $2 RETURNING ${viewColumns}`,
    [
      db.storeId,
      id,
      input.url ?? null,
      input.events === undefined ? null : [...new Set(input.events)],
      input.description ?? null,
      now,
      input.enabled ?? null,
    ],
  );
  if (row === undefined) return { ok: false, missing: true };
  // Turned on again: what waits for a retry goes now, not at the end of gaps made for a dead receiver.
  if (input.enabled === true) await hurryEndpointDeliveries(db, db.storeId, row.id, now, { unreachable: false });
  return { ok: true, endpoint: toView(row, now) };
}

/** Removes an endpoint and, with it, its deliveries. */
export async function removeWebhookEndpoint(db: StoreQueryable, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  const rows = await db.query('DELETE FROM webhook_endpoints WHERE store_id = $1 AND id = $2 RETURNING 1', [
    db.storeId,
    id,
  ]);
  return rows.length > 0;
}

/** A new secret; the one it replaces signs beside it for `rotationOverlapSeconds`. Null: no such endpoint. */
export async function rotateWebhookSecret(
  db: StoreQueryable,
  deps: { clock: Clock; keys: Pick<Keys, 'hooks'> },
  id: string,
): Promise<{ endpoint: WebhookEndpointView; secret: string } | null> {
  if (!isUuid(id)) return null;
  const secret = newSecret();
  const now = deps.clock.now();
  const [row] = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET sealed_previous_secret = sealed_secret, sealed_secret = $3,
            previous_secret_until = $4, updated_at = $5
      WHERE store_id = $1 AND id = $2 RETURNING ${viewColumns}`,
    [db.storeId, id, seal(deps.keys.hooks, secret), new Date(now.getTime() + rotationOverlapSeconds * 1000), now],
  );
  return row === undefined ? null : { endpoint: toView(row, now), secret };
}

/**
 * The keys a delivery is signed with now: the current secret's, and the previous one's while a
 * rotation overlaps. A secret no accepted APP_SECRET opens is left out; none at all throws.
 */
export function signingKeys(
  keys: Pick<Keys, 'hooks' | 'previous'>,
  sealed: { current: string; previous: string | null; previousUntil: Date | null },
  now: Date,
): Buffer[] {
  const open = (text: string) => {
    const opened = unseal(acceptedKeys(keys, 'hooks'), text);
    return opened === undefined ? null : webhookSecretKey(opened.text);
  };
  const overlapping = sealed.previous !== null && sealed.previousUntil !== null && new Date(sealed.previousUntil) > now;
  const found = [open(sealed.current), overlapping ? open(sealed.previous!) : null].filter((key) => key !== null);
  if (found.length === 0)
    throw new Error(
      'the endpoint secret was sealed under a secret that is neither APP_SECRET nor in APP_SECRET_PREVIOUS',
    );
  return found;
}

/**
 * Notes an answer that was not a success. Returns the reason when the endpoint is now disabled:
 * `gone` (it answered 410), or a run of failures `failingDaysToDisable` days long.
 */
export async function endpointFailed(
  db: Queryable,
  key: { storeId: string; endpointId: string },
  now: Date,
  gone: boolean,
): Promise<string | null> {
  const [row] = await db.query<{ disabled_reason: string | null }>(
    `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $3),
            disabled_at = CASE WHEN $4 OR COALESCE(failing_since, $3) <= $5 THEN $3 END,
            disabled_reason = CASE WHEN $4 THEN 'the endpoint answered 410 Gone'
                                   WHEN COALESCE(failing_since, $3) <= $5 THEN $6 END
      WHERE store_id = $1 AND id = $2 AND disabled_at IS NULL
        -- Written only when it changes something: a dead endpoint fails often, and this row is shared.
        AND (failing_since IS NULL OR $4 OR failing_since <= $5)
      RETURNING disabled_reason`,
    [
      key.storeId,
      key.endpointId,
      now,
      gone,
      secondsBefore(now, failingDaysToDisable * 24 * 60 * 60),
      `no delivery succeeded for ${failingDaysToDisable} days`,
    ],
  );
  return row?.disabled_reason ?? null;
}

/** Notes a success; true when it ends a run of failures (what waits for a retry may go now). */
export async function endpointSucceeded(db: Queryable, key: { storeId: string; endpointId: string }): Promise<boolean> {
  const rows = await db.query(
    'UPDATE webhook_endpoints SET failing_since = NULL WHERE store_id = $1 AND id = $2 AND failing_since IS NOT NULL RETURNING 1',
    [key.storeId, key.endpointId],
  );
  return rows.length > 0;
}

/** Part of erasing a deleted store (after its events): its endpoints, with what is left of their deliveries. */
export async function deleteStoreWebhookEndpoints(db: Queryable, storeId: string, limit: number): Promise<number> {
  return deleteInBatch(
    db,
    { table: 'webhook_endpoints', key: ['store_id', 'id'], where: 'store_id = $1' },
    [storeId],
    limit,
  );
}
