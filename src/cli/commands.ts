import fs from 'node:fs';
import { domainToUnicode } from 'node:url';
import { listAudit, writeAuditEntry, type AuditEvent } from '../audit.js';
import { eraseAccount } from '../auth/flows/erasure.js';
import type { Keys } from '../keys.js';
import type { Clock } from '../clock.js';
import { defaultRetention, deliveryProblem, type Config, type RetentionSettings } from '../config.js';
import { countCustomers, findCustomerByIdentity, toCustomer, type CustomerRow } from '../auth/tables/customers.js';
import { countLiveCustomerSessions, listCustomerSessions } from '../auth/tables/sessions.js';
import { blockCustomer, unblockCustomer } from '../auth/flows/staff.js';
import { revokeSessions } from '../auth/flows/session-revocation.js';
import { countStorePasskeys, listPasskeys, removePasskey } from '../auth/tables/passkeys.js';
import { parseIdentity } from '../auth/rules/identity.js';
import { listOutbox, retryOutboxMessage, type OutboxStatus } from '../delivery/outbox.js';
import { defaultPruneLimits, eraseDeletedStores, prune, PruneError } from '../janitor.js';
import { forStore, type Database, type StoreDatabase } from '../storage/database.js';
import { migrate } from '../storage/migrations.js';
import {
  addStoreHost,
  createStore,
  findStoreNamed,
  listStores,
  loadStore,
  markStoreDeleted,
  onlyStore,
  removeStoreHost,
  updateStore,
  type BotCheck,
  type NewStore,
  type StoreChanges,
  type StoreContext,
} from '../store/store.js';
import { counted } from './counted.js';
import { runProviderCommand, type ProviderCommand } from './providers.js';
import { runWebhookCommand, type WebhookCommand } from './webhooks.js';
import {
  cookieDomainRefusal,
  defaultLanguageRefusal,
  describeStore,
  FieldError,
  relyingPartyInUse,
  sealBotCheck,
  strandedPasskeysWarning,
  type BotCheckInput,
} from '../store/fields.js';

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
  | { name: 'store.set'; changes: StoreChanges; force: boolean; botCheck?: BotCheckCommand | null }
  /** `host` normalized (normalizeHost). */
  | { name: 'store.hosts.add'; host: string }
  | { name: 'store.hosts.remove'; host: string; force: boolean }
  /** `confirm` must be the store's slug. */
  | { name: 'store.delete'; confirm: string }
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
      return setStore(deps, command);
    case 'store.hosts.add':
    case 'store.hosts.remove':
      return changeHost(deps, command);
    case 'store.delete':
      return deleteStore(deps, command.confirm);
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

/** A host as an operator reads it: its Unicode form, with the stored punycode beside it when they differ. */
function shownHost(host: string): string {
  const unicode = domainToUnicode(host);
  return unicode === '' || unicode === host ? host : `${unicode} (${host})`;
}

/** The error line for a host another store holds, naming that store when it can still be read. */
async function hostTaken(db: Database, host: string): Promise<string> {
  const owner = await loadStore(db, { host });
  return `the host ${shownHost(host)} belongs to ${owner === null ? 'another store' : `the store ${owner.slug}`}; remove it there first`;
}

async function everyStore(db: Database): Promise<StoreContext[]> {
  const stores: StoreContext[] = [];
  for (;;) {
    const page = await listStores(db, { afterSlug: stores.at(-1)?.slug ?? '', limit: 500 });
    stores.push(...page);
    if (page.length < 500) return stores;
  }
}

async function createStoreNow({ db, clock, config }: AdminDeps, store: NewStore): Promise<AdminResult> {
  const problem = deliveryProblem(config, store.identityMode);
  if (problem !== undefined) return { ok: false, error: `${problem.variable} ${problem.reason}` };
  // The only store, while it has no hosts, answers on every host; beside a second store it answers
  // on its own hosts only, and so on none. Made all the same, but the operator is told.
  const before = await onlyStore(db);
  const result = await createStore(db, clock, store);
  if (result.ok) {
    const unhosted = before.ok && before.store.hosts.length === 0 ? before.store.slug : undefined;
    const warning =
      unhosted === undefined
        ? {}
        : {
            warning: `the store ${unhosted} has no host: it answered on every host as the only store, and now answers on none; give it one with store hosts add --store ${unhosted} <host>`,
          };
    return { ok: true, output: { ...describeStore(result.store), ...warning } };
  }
  switch (result.reason) {
    case 'slug_taken':
      return { ok: false, error: `a store with the slug ${store.slug} exists already` };
    case 'host_taken':
      return { ok: false, error: await hostTaken(db, result.host) };
    case 'host_under_cookie_domain':
      return { ok: false, error: hostUnderCookieDomain(result.host) };
    default:
      return {
        ok: false,
        error: `--cookie-domain ${cookieDomainRefusal(store.cookieDomain!, result, store.hosts ?? [])}`,
      };
  }
}

function hostUnderCookieDomain(host: string): string {
  return `the host ${shownHost(host)} is under another store's cookie domain: it would receive that store's cookies`;
}

async function changeHost(
  { db, clock, config, store }: StoreCommandDeps,
  command: CommandNamed<'store.hosts.add' | 'store.hosts.remove'>,
): Promise<AdminResult> {
  const options = { countPasskeys: countStorePasskeys, deploymentRpId: config.webauthn.rpId };
  const result =
    command.name === 'store.hosts.add'
      ? await addStoreHost(db, clock, store.id, command.host, options)
      : await removeStoreHost(db, clock, store.id, command.host, { ...options, force: command.force });
  if (result.ok) return { ok: true, output: describeStore(result.store) };
  switch (result.reason) {
    case 'host_taken':
      return { ok: false, error: await hostTaken(db, command.host) };
    case 'host_under_cookie_domain':
      return { ok: false, error: hostUnderCookieDomain(command.host) };
    case 'relying_party_in_use':
      return { ok: false, error: relyingPartyInUse(command.host, store.webauthnRpId, result.passkeys, '--force') };
    case 'no_such_host':
      return { ok: false, error: `the store ${store.slug} has no host ${shownHost(command.host)}` };
    case 'no_store':
      return { ok: false, error: `no store ${store.slug}: it was deleted meanwhile` };
  }
}

async function deleteStore({ db, clock, store }: StoreCommandDeps, confirm: string): Promise<AdminResult> {
  if (confirm !== store.slug)
    return {
      ok: false,
      error: `--confirm must repeat the slug of the store to delete, ${store.slug}; nothing was deleted`,
    };
  if (!(await markStoreDeleted(db, clock, store.id)))
    return { ok: false, error: `no store ${store.slug}: it was deleted meanwhile` };
  return {
    ok: true,
    output: {
      id: store.id,
      slug: store.slug,
      status: 'deleted',
      freed_hosts: store.hosts,
      erasure:
        'continues in the background: the janitor of the running service (or of the next to start) erases what the store held, in batches; its slug and hosts are free now',
    },
  };
}

function noStore(): AdminResult {
  return { ok: false, error: 'the deployment has no store: start the service once, or create one with store create' };
}

/** `store set --bot-check`: the check as the admin API takes it, its secret in a file read when the command runs. */
export type BotCheckCommand = Omit<BotCheckInput, 'secret'> & { secretFile: string };

/** The bot check sealed with the deployment's keys, or what is wrong with it. */
function sealedBotCheck(command: BotCheckCommand, keys: Keys | undefined): BotCheck | string {
  if (keys === undefined) return 'store set --bot-check needs the deployment keys';
  const { secretFile, ...check } = command;
  let secret: string;
  try {
    // A secret file's trailing newline (echo … > file) is not part of the secret.
    secret = fs.readFileSync(secretFile, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    return `--bot-check-secret-file ${secretFile} cannot be read: ${(error as Error).message}`;
  }
  try {
    return sealBotCheck({ ...check, secret }, keys.hooks);
  } catch (error) {
    if (error instanceof FieldError) return `--bot-check ${error.message}`;
    throw error;
  }
}

async function setStore(
  { db, clock, config, keys, store }: StoreCommandDeps,
  command: CommandNamed<'store.set'>,
): Promise<AdminResult> {
  const mode = command.changes.identityMode;
  const problem = mode === undefined ? undefined : deliveryProblem(config, mode);
  if (problem !== undefined) return { ok: false, error: `${problem.variable} ${problem.reason}` };
  const changes = { ...command.changes };
  if (command.botCheck !== undefined) {
    const botCheck = command.botCheck === null ? null : sealedBotCheck(command.botCheck, keys);
    if (typeof botCheck === 'string') return { ok: false, error: botCheck };
    changes.botCheck = botCheck;
  }
  const options = { store: store.id, force: command.force, countCustomers, countPasskeys: countStorePasskeys };
  const result = await updateStore(db, clock, changes, options);
  if (result.ok) {
    const stranded = result.strandedPasskeys;
    const warning = stranded > 0 ? { warning: strandedPasskeysWarning(stranded, store.webauthnRpId) } : {};
    return { ok: true, output: { ...describeStore(result.store), ...warning } };
  }
  if (result.reason === 'cookie_domain_off_hosts' || result.reason === 'cookie_domain_shared')
    return {
      ok: false,
      error: `--cookie-domain ${cookieDomainRefusal(command.changes.cookieDomain!, result, store.hosts)}`,
    };
  if (result.reason === 'default_language_not_spoken')
    return {
      ok: false,
      error: `--default-language ${defaultLanguageRefusal(result.current, command.changes.languages!)}`,
    };
  if (result.reason !== 'identity_mode_in_use') return noStore();
  return {
    ok: false,
    error: `the store has ${counted(result.customers, 'customer')} registered by its current identity mode; add --force to switch anyway (they will not be able to sign in)`,
  };
}

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
