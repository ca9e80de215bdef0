import fs from 'node:fs';
import { domainToUnicode } from 'node:url';
import { countCustomers } from '../auth/tables/customers.js';
import { countStorePasskeys } from '../auth/tables/passkeys.js';
import type { Clock } from '../clock.js';
import { deliveryProblem, type Config } from '../config.js';
import type { Keys } from '../keys.js';
import { forStore, type Database } from '../storage/database.js';
import {
  cookieDomainRefusal,
  defaultLanguageRefusal,
  describeStore,
  FieldError,
  relyingPartyInUse,
  sealBotCheck,
  storeChangeDetails,
  strandedPasskeysWarning,
  type BotCheckInput,
} from '../store/fields.js';
import {
  addStoreHost,
  createStore,
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
import { recordOperatorChange } from './operator-audit.js';

/**
 * `store create|set|delete` and `store hosts add|remove`: a store's own fields, changed as the admin
 * API changes them and recorded in the store's audit trail as it records them (`by: operator`).
 */

/** `store set --bot-check`: the check as the admin API takes it, its secret in a file read when the command runs. */
export type BotCheckCommand = Omit<BotCheckInput, 'secret'> & { secretFile: string };

export type StoreChangeCommand =
  | { name: 'store.set'; changes: StoreChanges; force: boolean; botCheck?: BotCheckCommand | null }
  /** `host` normalized (normalizeHost). */
  | { name: 'store.hosts.add'; host: string }
  | { name: 'store.hosts.remove'; host: string; force: boolean }
  /** `confirm` must be the store's slug. */
  | { name: 'store.delete'; confirm: string };

type CommandNamed<N extends StoreChangeCommand['name']> = Extract<StoreChangeCommand, { name: N }>;

interface CreateDeps {
  db: Database;
  clock: Clock;
  config: Pick<Config, 'mail' | 'smsWebhook' | 'deliveryLogAllowed' | 'webauthn'>;
}

/** What a command about one store works with (commands.ts hands it over). */
interface StoreCommandDeps extends CreateDeps {
  keys?: Keys | undefined;
  store: StoreContext;
}

type Answer = { ok: boolean; output?: unknown; error?: string };

export async function runStoreChange(deps: StoreCommandDeps, command: StoreChangeCommand): Promise<Answer> {
  switch (command.name) {
    case 'store.set':
      return setStore(deps, command);
    case 'store.hosts.add':
    case 'store.hosts.remove':
      return changeHost(deps, command);
    case 'store.delete':
      return deleteStore(deps, command.confirm);
  }
}

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

export async function everyStore(db: Database): Promise<StoreContext[]> {
  const stores: StoreContext[] = [];
  for (;;) {
    const page = await listStores(db, { afterSlug: stores.at(-1)?.slug ?? '', limit: 500 });
    stores.push(...page);
    if (page.length < 500) return stores;
  }
}

export async function createStoreNow({ db, clock, config }: CreateDeps, store: NewStore): Promise<Answer> {
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
    await recordOperatorChange(forStore(db, result.store.id), clock, { slug: store.slug }, 'store.created');
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
): Promise<Answer> {
  const options = { countPasskeys: countStorePasskeys, deploymentRpId: config.webauthn.rpId };
  const result =
    command.name === 'store.hosts.add'
      ? await addStoreHost(db, clock, store.id, command.host, options)
      : await removeStoreHost(db, clock, store.id, command.host, { ...options, force: command.force });
  if (result.ok) {
    const change = command.name === 'store.hosts.add' ? 'host_added' : 'host_removed';
    await recordOperatorChange(forStore(db, store.id), clock, { [change]: command.host });
    return { ok: true, output: describeStore(result.store) };
  }
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

async function deleteStore({ db, clock, store }: StoreCommandDeps, confirm: string): Promise<Answer> {
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

function noStore(): Answer {
  return { ok: false, error: 'the deployment has no store: start the service once, or create one with store create' };
}

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
): Promise<Answer> {
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
    await recordOperatorChange(forStore(db, store.id), clock, storeChangeDetails(changes));
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
