import { listAudit, writeAuditEntry, type AuditEvent } from '../audit.js';
import { eraseAccount } from '../auth/flows/erasure.js';
import type { Keys } from '../keys.js';
import type { Clock } from '../clock.js';
import { defaultRetention, type Config, type RetentionSettings } from '../config.js';
import { findCustomerByIdentity, toCustomer, type CustomerRow } from '../auth/tables/customers.js';
import { countLiveCustomerSessions, listCustomerSessions } from '../auth/tables/sessions.js';
import { blockCustomer, unblockCustomer } from '../auth/flows/staff.js';
import { revokeSessions } from '../auth/flows/session-revocation.js';
import { listPasskeys, removePasskey } from '../auth/tables/passkeys.js';
import { parseIdentity } from '../auth/rules/identity.js';
import { listOutbox, retryOutboxMessage, type OutboxStatus } from '../delivery/outbox.js';
import { defaultPruneLimits, eraseDeletedStores, prune, PruneError } from '../janitor.js';
import { forStore, type Database, type StoreDatabase } from '../storage/database.js';
import { migrate } from '../storage/migrations.js';
import { describeStore } from '../store/fields.js';
import { findStoreNamed, onlyStore, type NewStore, type StoreContext } from '../store/store.js';
import { createStoreNow, everyStore, runStoreChange, type StoreChangeCommand } from './store-commands.js';
import { runProviderCommand, type ProviderCommand } from './providers.js';
import { runWebhookCommand, type WebhookCommand } from './webhooks.js';

/** What an operator can ask for. */
export type AdminCommand =
  | { name: 'migrate' }
  | { name: 'prune' }
  | { name: 'store.list' }
  | { name: 'store.create'; store: NewStore }
  | StoreCommand;

/**
 * A command about one store's data: `store` names it (slug or id); without it, the deployment's
 * only store, or an error asking for one.
 */
export type StoreCommand = { store?: string | undefined } & (
  | { name: 'store.show' }
  | StoreChangeCommand
  | ProviderCommand
  | WebhookCommand
  | { name: 'customer.show'; identity: string }
  | { name: 'customer.delete'; identity: string }
  | { name: 'customer.sessions'; identity: string }
  | { name: 'customer.revoke-sessions'; identity: string }
  | { name: 'customer.block'; identity: string; reason: string; until: Date | null }
  | { name: 'customer.unblock'; identity: string }
  | { name: 'customer.passkeys'; identity: string }
  | { name: 'customer.remove-passkey'; identity: string; id: string }
  | { name: 'outbox.list'; status?: OutboxStatus }
  | { name: 'outbox.retry'; id: string }
  | { name: 'audit.list'; identity?: string; event?: AuditEvent; limit?: number }
);

export interface AdminResult {
  ok: boolean;
  /** Printed as JSON on success. */
  output?: unknown;
  /** Printed on failure. */
  error?: string;
}

export interface AdminDeps {
  db: Database;
  clock: Clock;
  /** What `prune` keeps; the defaults when not given. */
  retention?: RetentionSettings;
  /**
   * The command's own configuration, taken to be the service's (the same environment, as with
   * `docker exec`): the transport check of `store set` and the URL rules of `webhooks add` can
   * only be as right as that.
   */
  config: Pick<Config, 'mail' | 'smsWebhook' | 'deliveryLogAllowed' | 'webauthn' | 'webhooks'>;
  /**
   * The deployment's keys, to seal the notice `customer delete` queues, a provider's secret and a
   * webhook endpoint's; those commands need them.
   */
  keys?: Keys;
}

/** The customer an operator named, or the error line to print. */
async function customerNamed(db: StoreDatabase, store: StoreContext, identity: string): Promise<CustomerRow | string> {
  const row = await findCustomerByIdentity(db, parseIdentity(store.identityMode, identity));
  return row ?? `no customer with ${store.identityMode} ${identity}`;
}

/** The store a command names, or the error line to print. */
export async function commandStore(db: Database, name: string | undefined): Promise<StoreContext | string> {
  if (name !== undefined) return (await findStoreNamed(db, name)) ?? `no store ${name}`;
  const only = await onlyStore(db);
  if (only.ok) return only.store;
  return only.reason === 'no_store'
    ? 'the deployment has no store: start the service once, or create one with store create'
    : 'the deployment has several stores: name one with --store <slug>';
}

export async function runAdminCommand(deps: AdminDeps, command: AdminCommand): Promise<AdminResult> {
  switch (command.name) {
    case 'migrate':
      return { ok: true, output: { applied: await migrate(deps.db) } };
    case 'prune':
      return pruneNow(deps);
    case 'store.list':
      return { ok: true, output: (await everyStore(deps.db)).map(describeStore) };
    case 'store.create':
      return createStoreNow(deps, command.store);
    default: {
      const store = await commandStore(deps.db, command.store);
      if (typeof store === 'string') return { ok: false, error: store };
      return runStoreCommand({ ...deps, sdb: forStore(deps.db, store.id), store }, command);
    }
  }
}

/** What a command about one store works with: its database handle and the store itself. */
type StoreCommandDeps = AdminDeps & { sdb: StoreDatabase; store: StoreContext };

async function runStoreCommand(deps: StoreCommandDeps, command: StoreCommand): Promise<AdminResult> {
  const { sdb, clock, store } = deps;
  switch (command.name) {
    case 'store.show':
      return { ok: true, output: describeStore(store) };
    case 'store.set':
    case 'store.hosts.add':
    case 'store.hosts.remove':
    case 'store.delete':
      return runStoreChange(deps, command);
    case 'store.providers.add':
    case 'store.providers.remove':
    case 'store.providers.list':
      return runProviderCommand(deps, command);
    case 'webhooks.add':
    case 'webhooks.list':
    case 'webhooks.remove':
      return runWebhookCommand(deps, command);
    case 'customer.show': {
      const row = await customerNamed(sdb, store, command.identity);
      if (typeof row === 'string') return { ok: false, error: row };
      const activeSessions = await countLiveCustomerSessions(sdb, clock, row.id);
      return { ok: true, output: { ...toCustomer(row), locale: row.locale, active_sessions: activeSessions } };
    }
    case 'customer.delete':
      return deleteCustomer(deps, command.identity);
    case 'customer.block':
    case 'customer.unblock':
      return blockCommand(deps, command);
    case 'customer.sessions':
    case 'customer.revoke-sessions':
    case 'customer.passkeys':
    case 'customer.remove-passkey':
      return runCustomerCommand(deps, command);
    case 'audit.list':
      return listAuditEntries(deps, command);
    case 'outbox.list':
      return { ok: true, output: await listOutbox(sdb, command.status) };
    case 'outbox.retry':
      return retryMessage(deps, command.id);
  }
}

type CommandNamed<N extends AdminCommand['name']> = Extract<AdminCommand, { name: N }>;

/** A command has no dispatchers to wake: a running service's find what it queued on their next poll. */
const noNudges = { messagesQueued: () => {}, eventsRecorded: () => {} };

async function deleteCustomer(
  { sdb: db, clock, keys, store }: StoreCommandDeps,
  identity: string,
): Promise<AdminResult> {
  if (keys === undefined) return { ok: false, error: 'customer delete needs the deployment keys' };
  const row = await findCustomerByIdentity(db, parseIdentity(store.identityMode, identity));
  if (row === null) return { ok: false, error: `no customer with ${store.identityMode} ${identity}` };
  // The same erasure as the customer's own, without a password; a running service's
  // dispatcher finds the queued notice on its next poll.
  const result = await eraseAccount({ db, clock, keys, ...noNudges }, store, row.id);
  if (!result.ok) return { ok: false, error: `no customer with ${store.identityMode} ${identity}` };
  await writeAuditEntry(db, clock, {
    event: 'account.deleted',
    customerId: row.id,
    details: { by: 'operator' },
  });
  return { ok: true, output: { id: row.id, status: 'deleted' } };
}

/** Blocks or unblocks as the admin API does; a running service's dispatcher finds the event on its next poll. */
async function blockCommand(
  { sdb: db, clock, keys, store }: StoreCommandDeps,
  command: CommandNamed<'customer.block' | 'customer.unblock'>,
): Promise<AdminResult> {
  if (keys === undefined) return { ok: false, error: `${command.name.replace('.', ' ')} needs the deployment keys` };
  const row = await customerNamed(db, store, command.identity);
  if (typeof row === 'string') return { ok: false, error: row };
  const deps = { db, clock, keys, ...noNudges };
  if (command.name === 'customer.block') {
    if (command.until !== null && command.until.getTime() <= clock.now().getTime())
      return { ok: false, error: '--until must be in the future' };
    await blockCustomer(deps, row.id, { reason: command.reason, until: command.until });
  } else await unblockCustomer(deps, row.id);
  const blocked = command.name === 'customer.block';
  await writeAuditEntry(db, clock, {
    event: blocked ? 'customer.blocked' : 'customer.unblocked',
    customerId: row.id,
    details: { by: 'operator', ...(blocked && command.until !== null && { until: command.until.toISOString() }) },
  });
  return { ok: true, output: { id: row.id, status: blocked ? 'blocked' : 'unblocked' } };
}

/** A customer's sessions and passkeys: listed, or ended and removed with an audit entry. */
async function runCustomerCommand(
  { sdb: db, clock, store }: StoreCommandDeps,
  command: CommandNamed<
    'customer.sessions' | 'customer.revoke-sessions' | 'customer.passkeys' | 'customer.remove-passkey'
  >,
): Promise<AdminResult> {
  const row = await customerNamed(db, store, command.identity);
  if (typeof row === 'string') return { ok: false, error: row };
  switch (command.name) {
    case 'customer.sessions':
      // No request, so no session is current: every entry says current: false.
      return { ok: true, output: await listCustomerSessions(db, clock, row.id) };
    case 'customer.revoke-sessions': {
      // The running service's webhook dispatcher finds the event on its next poll.
      const count = await revokeSessions({ db, clock, eventsRecorded: () => {} }, row.id, { by: 'staff' });
      await writeAuditEntry(db, clock, {
        event: 'session.revoked',
        customerId: row.id,
        details: { count: String(count), by: 'operator' },
      });
      return { ok: true, output: { status: 'revoked', count } };
    }
    case 'customer.passkeys':
      return { ok: true, output: await listPasskeys(db, row.id) };
    case 'customer.remove-passkey':
      if (!(await removePasskey(db, row.id, command.id)))
        return { ok: false, error: `no passkey ${command.id} for ${command.identity}` };
      await writeAuditEntry(db, clock, {
        event: 'passkey.removed',
        customerId: row.id,
        details: { passkey: command.id, by: 'operator' },
      });
      return { ok: true, output: { id: command.id, status: 'deleted' } };
  }
}

async function listAuditEntries(
  { sdb: db, store }: StoreCommandDeps,
  command: CommandNamed<'audit.list'>,
): Promise<AdminResult> {
  let customerId: string | undefined;
  if (command.identity !== undefined) {
    const row = await findCustomerByIdentity(db, parseIdentity(store.identityMode, command.identity));
    if (row === null) return { ok: false, error: `no customer with identity ${command.identity}` };
    customerId = row.id;
  }
  return { ok: true, output: await listAudit(db, { customerId, event: command.event, limit: command.limit }) };
}

async function pruneNow({ db, clock, retention }: AdminDeps): Promise<AdminResult> {
  // Deleted stores first, as the janitor does: whatever they held goes whole, not by retention.
  const erased = await eraseDeletedStores(db, { batchSize: defaultPruneLimits.batchSize, stopping: () => false });
  try {
    const removed = await prune({ db, clock, retention: retention ?? defaultRetention });
    return { ok: true, output: { removed, ...(Object.keys(erased).length > 0 && { erased_stores: erased }) } };
  } catch (error) {
    // The other tables were pruned all the same: say which failed, and what went.
    if (!(error instanceof PruneError)) throw error;
    return { ok: false, error: `${error.message}; removed ${JSON.stringify(error.removed)}` };
  }
}

async function retryMessage({ sdb: db, clock }: StoreCommandDeps, id: string): Promise<AdminResult> {
  const outcome = await retryOutboxMessage(db, clock, id);
  if (outcome === 'retried') return { ok: true, output: { id, status: 'pending' } };
  return {
    ok: false,
    error:
      outcome === 'not_found'
        ? `no outbox message ${id}`
        : `message ${id} is not failed (only failed messages can be sent again)`,
  };
}
