import fs from 'node:fs';
import { domainToUnicode } from 'node:url';
import type { Failure } from '../auth/result.js';
import type { Keys } from '../keys.js';
import {
  changeHost as changeStoreHost,
  changeStore,
  createStore,
  deleteStore as markDeleted,
  type RefusalFacts,
  type StoreRefusal,
} from '../platform/stores.js';
import type { Database } from '../storage/database.js';
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
import { listStores, type BotCheck, type NewStore, type StoreChanges, type StoreContext } from '../store/store.js';
import { counted } from './counted.js';
import { operator, operatorPlatform, type OperatorDeps } from './operator.js';

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

/** What a command about one store works with (commands.ts hands it over). */
interface StoreCommandDeps extends OperatorDeps {
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

export async function everyStore(db: Database): Promise<StoreContext[]> {
  const stores: StoreContext[] = [];
  for (;;) {
    const page = await listStores(db, { afterSlug: stores.at(-1)?.slug ?? '', limit: 500 });
    stores.push(...page);
    if (page.length < 500) return stores;
  }
}

/** What the command asked for, where a refusal's line names it. */
interface Asked {
  slug: string;
  store?: StoreContext;
  cookieDomain?: string | null | undefined;
  languages?: StoreChanges['languages'];
  hosts?: readonly string[] | undefined;
}

/** A platform refusal as an error line: every kind mapped, or this does not compile. */
function refusalLine(refusal: Failure<StoreRefusal, RefusalFacts>, asked: Asked): string {
  switch (refusal.error) {
    case 'no_transport':
      return `${refusal.transport!.variable} ${refusal.transport!.reason}`;
    case 'slug_taken':
      return `a store with the slug ${asked.slug} exists already`;
    case 'host_taken': {
      const { host, owner } = refusal.taken!;
      return `the host ${shownHost(host)} belongs to ${owner === null ? 'another store' : `the store ${owner}`}; remove it there first`;
    }
    case 'host_under_cookie_domain':
      return `the host ${shownHost(refusal.host!)} is under another store's cookie domain: it would receive that store's cookies`;
    case 'cookie_domain_off_hosts':
    case 'cookie_domain_shared': {
      const cookieRefusal = { ok: false as const, reason: refusal.error, host: refusal.host! };
      return `--cookie-domain ${cookieDomainRefusal(asked.cookieDomain!, cookieRefusal, asked.hosts ?? [])}`;
    }
    case 'default_language_not_spoken':
      return `--default-language ${defaultLanguageRefusal(refusal.languages!, asked.languages!)}`;
    case 'identity_mode_in_use':
      return `the store has ${counted(refusal.customers!, 'customer')} registered by its current identity mode; add --force to switch anyway (they will not be able to sign in)`;
    case 'relying_party_in_use':
      return relyingPartyInUse(refusal.host!, asked.store?.webauthnRpId ?? null, refusal.passkeys!, '--force');
    case 'no_such_host':
      return `the store ${asked.slug} has no host ${shownHost(refusal.host!)}`;
    case 'no_store':
    case 'idempotency_key_reused':
      return `no store ${asked.slug}: it was deleted meanwhile`;
  }
}

export async function createStoreNow(deps: OperatorDeps, store: NewStore): Promise<Answer> {
  const result = await createStore(operatorPlatform(deps), operator, store);
  if (!result.ok) return { ok: false, error: refusalLine(result, store) };
  if (result.value.replayed) throw new Error('a store made without an idempotency key cannot be a replay');
  // The only store, while it had no hosts, answered on every host; beside a second store it answers
  // on its own hosts only, and so on none. Made all the same, but the operator is told.
  const { unhosted } = result.value;
  const warning =
    unhosted === undefined
      ? {}
      : {
          warning: `the store ${unhosted} has no host: it answered on every host as the only store, and now answers on none; give it one with store hosts add --store ${unhosted} <host>`,
        };
  return { ok: true, output: { ...describeStore(result.value.store), ...warning } };
}

async function changeHost(
  deps: StoreCommandDeps,
  command: CommandNamed<'store.hosts.add' | 'store.hosts.remove'>,
): Promise<Answer> {
  const { store } = deps;
  const change =
    command.name === 'store.hosts.add' ? { add: command.host } : { remove: command.host, force: command.force };
  const result = await changeStoreHost(operatorPlatform(deps), operator, store, change);
  if (!result.ok) return { ok: false, error: refusalLine(result, { slug: store.slug, store }) };
  return { ok: true, output: describeStore(result.value) };
}

async function deleteStore(deps: StoreCommandDeps, confirm: string): Promise<Answer> {
  const { store } = deps;
  if (confirm !== store.slug)
    return {
      ok: false,
      error: `--confirm must repeat the slug of the store to delete, ${store.slug}; nothing was deleted`,
    };
  const result = await markDeleted(operatorPlatform(deps), store);
  if (!result.ok) return { ok: false, error: refusalLine(result, { slug: store.slug }) };
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

async function setStore(deps: StoreCommandDeps, command: CommandNamed<'store.set'>): Promise<Answer> {
  const { store } = deps;
  const changes = { ...command.changes };
  if (command.botCheck !== undefined) {
    const botCheck = command.botCheck === null ? null : sealedBotCheck(command.botCheck, deps.keys);
    if (typeof botCheck === 'string') return { ok: false, error: botCheck };
    changes.botCheck = botCheck;
  }
  const result = await changeStore(operatorPlatform(deps), operator, store, changes, command.force);
  if (!result.ok)
    return { ok: false, error: refusalLine(result, { ...changes, slug: store.slug, hosts: store.hosts }) };
  const stranded = result.value.strandedPasskeys;
  const warning = stranded > 0 ? { warning: strandedPasskeysWarning(stranded, store.webauthnRpId) } : {};
  return { ok: true, output: { ...describeStore(result.value.store), ...warning } };
}
