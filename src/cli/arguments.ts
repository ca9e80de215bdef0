/**
 * The command line's words: the parsing of arguments into a command (the flags in flags.ts, a
 * store's in store-flags.ts, the usage text in usage.ts). Apart from the entry (main.ts), which
 * runs as soon as it is loaded.
 */
import { auditEvents, type AuditEvent } from '../audit.js';
import { outboxStatuses, type OutboxStatus } from '../delivery/outbox.js';
import { NewWebhookBody } from '../http/admin/webhook-schemas.js';
import { storeHost } from '../store/fields.js';
import type { AdminCommand, StoreCommand } from './commands.js';
import type { CustomersCommand } from './customer-transfer.js';
import { choice, flagValue, readArguments, storeFlag, UsageError, type Flag, type Flags } from './flags.js';
import { botCheckFlags, storeCreateCommand, storeSetCommand, storeSettingFlags } from './store-flags.js';

export { UsageError } from './flags.js';
export { usage } from './usage.js';

/** `import <folder>`: not an admin command, it reads a second database. */
export interface ImportCommand {
  name: 'import';
  folder: string;
}

/** `backup <file>` and `restore <file>`: not admin commands, they read or replace the whole database. */
export type BackupCommand = { name: 'backup'; file: string } | { name: 'restore'; file: string; force: boolean };

/** `breached load <file>`: not an admin command, it fills the deployment's corpus table from a file. */
export interface BreachedLoadCommand {
  name: 'breached.load';
  file: string;
}

interface CommandShape {
  /** The flags it takes besides --help. */
  flags: readonly Flag[];
  /** How many arguments it takes after its words. */
  arguments: number;
}

const commands: Record<string, CommandShape> = {
  serve: { flags: [], arguments: 0 },
  migrate: { flags: [], arguments: 0 },
  prune: { flags: [], arguments: 0 },
  'store list': { flags: [], arguments: 0 },
  'store create': { flags: ['slug', 'host', ...storeSettingFlags], arguments: 0 },
  'store show': { flags: ['store'], arguments: 0 },
  'store set': { flags: ['store', 'force', ...storeSettingFlags, ...botCheckFlags], arguments: 0 },
  'store hosts add': { flags: ['store'], arguments: 1 },
  'store hosts remove': { flags: ['store', 'force'], arguments: 1 },
  'store providers add': {
    flags: [
      'store',
      'id',
      'preset',
      'issuer',
      'client-id',
      'client-secret',
      'client-secret-file',
      'private-key',
      'key-id',
      'team-id',
      'name',
      'scopes',
    ],
    arguments: 0,
  },
  'store providers remove': { flags: ['store', 'id'], arguments: 0 },
  'store providers list': { flags: ['store'], arguments: 0 },
  'store delete': { flags: ['store', 'confirm'], arguments: 0 },
  'webhooks add': { flags: ['store', 'url', 'events', 'description'], arguments: 0 },
  'webhooks list': { flags: ['store'], arguments: 0 },
  'webhooks remove': { flags: ['store', 'id'], arguments: 0 },
  'customer show': { flags: ['store'], arguments: 1 },
  'customer delete': { flags: ['store', 'yes'], arguments: 1 },
  'customer sessions': { flags: ['store'], arguments: 1 },
  'customer revoke-sessions': { flags: ['store'], arguments: 1 },
  'customer block': { flags: ['store', 'reason', 'until'], arguments: 1 },
  'customer unblock': { flags: ['store'], arguments: 1 },
  'customer passkeys': { flags: ['store'], arguments: 1 },
  'customer remove-passkey': { flags: ['store'], arguments: 2 },
  'customers import': { flags: ['store', 'dry-run'], arguments: 1 },
  'customers export': { flags: ['store'], arguments: 1 },
  'outbox list': { flags: ['store', 'status'], arguments: 0 },
  'outbox retry': { flags: ['store'], arguments: 1 },
  audit: { flags: ['store', 'customer', 'event', 'limit'], arguments: 0 },
};

/** A flag the command does not take is refused rather than ignored: `prune --store S` must not prune every store. */
function refuseOtherFlags(key: string, flags: Flags, allowed: readonly Flag[]): void {
  for (const flag of Object.keys(flags) as Flag[]) {
    if (flag === 'help' || allowed.includes(flag)) continue;
    if (flag === 'store' && key === 'prune')
      throw new UsageError('prune works on every store at once: it takes no --store');
    if (flag === 'store' && key === 'store create')
      throw new UsageError('store create names the new store with --slug, not --store');
    if (flag === 'store') throw new UsageError(`${key} is about the whole deployment: it takes no --store`);
    throw new UsageError(`${key} takes no --${flag}`);
  }
}

export function parseCommand(
  argv: string[],
): AdminCommand | ImportCommand | BackupCommand | BreachedLoadCommand | CustomersCommand | 'serve' | 'help' {
  const { values, positionals } = readArguments(argv);
  const [noun, verb, ...rest] = positionals;
  if (values.help === true || noun === 'help') return 'help';
  if (noun === undefined) throw new UsageError('no command given');
  if (noun === 'import') {
    if (verb === undefined)
      throw new UsageError('import needs the folder to read (DATA_DIR/pgdata of the earlier version)');
    if (rest[0] !== undefined) throw new UsageError(`unexpected argument "${rest[0]}"`);
    refuseOtherFlags('import', values, []);
    return { name: 'import', folder: verb };
  }
  if (noun === 'breached') {
    if (verb !== 'load') throw new UsageError('breached needs load, and the file to read');
    const [file, unexpected] = rest;
    if (file === undefined) throw new UsageError('breached load needs the file to read (HEX40:COUNT lines)');
    if (unexpected !== undefined) throw new UsageError(`unexpected argument "${unexpected}"`);
    refuseOtherFlags('breached load', values, []);
    return { name: 'breached.load', file };
  }
  if (noun === 'backup' || noun === 'restore') {
    if (verb === undefined)
      throw new UsageError(`${noun} needs the backup file to ${noun === 'backup' ? 'write' : 'read'}`);
    if (rest[0] !== undefined) throw new UsageError(`unexpected argument "${rest[0]}"`);
    refuseOtherFlags(noun, values, noun === 'restore' ? ['force'] : []);
    return noun === 'backup' ? { name: noun, file: verb } : { name: noun, file: verb, force: values.force === true };
  }
  // `store hosts add|remove <host>` and `store providers add|remove|list` have three words; every
  // other command one or two.
  const threeWords = noun === 'store' && (verb === 'hosts' || verb === 'providers');
  if (verb === 'hosts' && rest[0] !== 'add' && rest[0] !== 'remove')
    throw new UsageError('store hosts needs add or remove, and a host');
  if (threeWords && verb === 'providers' && !['add', 'remove', 'list'].includes(rest[0] ?? ''))
    throw new UsageError('store providers needs add, remove or list');
  if (noun === 'webhooks' && !['add', 'list', 'remove'].includes(verb ?? ''))
    throw new UsageError('webhooks needs add, list or remove');
  const key = threeWords ? `store ${verb} ${rest[0]}` : verb === undefined ? noun : `${noun} ${verb}`;
  const args = threeWords ? rest.slice(1) : rest;
  const shape = commands[key];
  if (shape === undefined) throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  const unexpected = args[shape.arguments];
  if (unexpected !== undefined) throw new UsageError(`unexpected argument "${unexpected}"`);
  refuseOtherFlags(key, values, shape.flags);
  const [argument, second] = args;
  const store = storeFlag(values.store);
  if (key === 'customers import' || key === 'customers export') return customersCommand(key, values, argument, store);
  const command = parseKnown(key, values, argument, second);
  if (command === 'serve' || store === undefined) return command;
  // refuseOtherFlags let --store through to the commands about one store only.
  return { ...(command as StoreCommand), store };
}

function parseKnown(
  key: string,
  values: Flags,
  argument: string | undefined,
  second: string | undefined,
): AdminCommand | 'serve' {
  switch (key) {
    case 'serve':
      return 'serve';
    case 'migrate':
      return { name: 'migrate' };
    case 'prune':
      return { name: 'prune' };
    case 'store list':
      return { name: 'store.list' };
    case 'store create':
      return storeCreateCommand(values);
    case 'store show':
      return { name: 'store.show' };
    case 'store set':
      return storeSetCommand(values);
    case 'store hosts add':
    case 'store hosts remove': {
      if (argument === undefined) throw new UsageError(`${key} needs a host`);
      const host = flagValue(key, storeHost, argument);
      return key === 'store hosts add'
        ? { name: 'store.hosts.add', host }
        : { name: 'store.hosts.remove', host, force: values.force === true };
    }
    case 'store providers add':
      return providerAddCommand(values);
    case 'store providers remove':
      if (values.id === undefined) throw new UsageError('store providers remove needs --id, the provider to remove');
      return { name: 'store.providers.remove', id: values.id };
    case 'store providers list':
      return { name: 'store.providers.list' };
    case 'webhooks add':
      return webhookAddCommand(values);
    case 'webhooks list':
      return { name: 'webhooks.list' };
    case 'webhooks remove':
      if (values.id === undefined) throw new UsageError('webhooks remove needs --id, the endpoint to remove');
      return { name: 'webhooks.remove', id: values.id };
    case 'store delete': {
      if (values.store === undefined || values.confirm === undefined)
        throw new UsageError(
          'store delete needs --store <slug> and --confirm <the same slug>: it deletes the store and everything it holds',
        );
      return { name: 'store.delete', confirm: values.confirm };
    }
    case 'customer show':
    case 'customer delete':
    case 'customer sessions':
    case 'customer revoke-sessions':
    case 'customer passkeys':
    case 'customer remove-passkey':
      return customerCommand(key, argument, second, values.yes === true);
    case 'customer block':
      return blockCommand(argument, values);
    case 'customer unblock':
      if (argument === undefined) throw new UsageError('customer unblock needs an identity');
      return { name: 'customer.unblock', identity: argument };
    case 'outbox list': {
      const status = choice<OutboxStatus>('--status', values.status, outboxStatuses);
      return status === undefined ? { name: 'outbox.list' } : { name: 'outbox.list', status };
    }
    case 'outbox retry':
      if (argument === undefined) throw new UsageError('outbox retry needs a message id');
      return { name: 'outbox.retry', id: argument };
    case 'audit':
      return auditCommand(values);
    default:
      throw new UsageError(`unknown command "${key}"`);
  }
}

function customersCommand(
  key: 'customers import' | 'customers export',
  values: Flags,
  file: string | undefined,
  store: string | undefined,
): CustomersCommand {
  const named = store === undefined ? {} : { store };
  if (key === 'customers export')
    return { name: 'customers.export', ...named, ...(file === undefined ? {} : { file }) };
  if (file === undefined) throw new UsageError('customers import needs the NDJSON file to read');
  return { name: 'customers.import', ...named, file, dryRun: values['dry-run'] === true };
}

/** The provider's fields by the admin API's names; the key file is read when the command runs. */
function providerAddCommand(values: Flags): AdminCommand {
  if (values.id === undefined || values['client-id'] === undefined)
    throw new UsageError('store providers add needs --id, --client-id, and --preset or --issuer');
  if (values.preset === undefined && values.issuer === undefined)
    throw new UsageError('store providers add needs --preset google|apple|microsoft or --issuer URL');
  const given = {
    id: values.id,
    preset: values.preset,
    issuer: values.issuer,
    client_id: values['client-id'],
    client_secret: values['client-secret'],
    key_id: values['key-id'],
    team_id: values['team-id'],
    name: values.name,
    scopes: values.scopes,
  };
  const provider = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
  const keyFile = values['private-key'];
  const secretFile = values['client-secret-file'];
  return {
    name: 'store.providers.add',
    provider,
    ...(keyFile !== undefined && { privateKeyFile: keyFile }),
    ...(secretFile !== undefined && { clientSecretFile: secretFile }),
  };
}

/**
 * The endpoint to add. The admin API's schema limits are checked here; the URL's rules (scheme,
 * private addresses) and the event names when the command runs, as the API checks them.
 */
function webhookAddCommand(values: Flags): AdminCommand {
  const { url, events, description } = values;
  if (url === undefined || events === undefined)
    throw new UsageError('webhooks add needs --url and --events (event types separated by commas, or *)');
  const limits = NewWebhookBody.properties;
  const tooLong = (text: string, max: number | undefined) => max !== undefined && text.length > max;
  if (tooLong(url, limits.url.maxLength))
    throw new UsageError(`--url must be at most ${limits.url.maxLength} characters`);
  if (description !== undefined && tooLong(description, limits.description.maxLength))
    throw new UsageError(`--description must be at most ${limits.description.maxLength} characters`);
  // `a,b`, spaces forgiven; an empty list is refused when the command runs, in the API's words.
  const types = events
    .split(',')
    .map((type) => type.trim())
    .filter((type) => type !== '');
  const maxItems = limits.events.maxItems;
  if (maxItems !== undefined && types.length > maxItems)
    throw new UsageError(`--events names at most ${maxItems} event types`);
  return { name: 'webhooks.add', url, events: types, ...(description !== undefined && { description }) };
}

function customerCommand(
  key: `customer ${'show' | 'delete' | 'sessions' | 'revoke-sessions' | 'passkeys' | 'remove-passkey'}`,
  identity: string | undefined,
  id: string | undefined,
  yes: boolean,
): AdminCommand {
  if (key === 'customer remove-passkey') {
    if (identity === undefined || id === undefined)
      throw new UsageError('customer remove-passkey needs an identity and a passkey id');
    return { name: 'customer.remove-passkey', identity, id };
  }
  if (identity === undefined) throw new UsageError(`${key} needs an identity`);
  if (key === 'customer delete' && !yes)
    throw new UsageError('customer delete erases the account, its sessions and codes for good; add --yes to confirm');
  const names = {
    'customer show': 'customer.show',
    'customer delete': 'customer.delete',
    'customer sessions': 'customer.sessions',
    'customer revoke-sessions': 'customer.revoke-sessions',
    'customer passkeys': 'customer.passkeys',
  } as const;
  return { name: names[key], identity };
}

function blockCommand(identity: string | undefined, values: Flags): AdminCommand {
  if (identity === undefined) throw new UsageError('customer block needs an identity');
  const reason = values.reason?.trim();
  if (reason === undefined || reason === '' || reason.length > 500)
    throw new UsageError('customer block needs --reason, 1 to 500 characters: why, for the audit trail');
  if (values.until === undefined) return { name: 'customer.block', identity, reason, until: null };
  const until = new Date(values.until);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(values.until) || Number.isNaN(until.getTime()))
    throw new UsageError('--until must be an ISO 8601 date and time, e.g. 2030-01-31T12:00:00Z');
  return { name: 'customer.block', identity, reason, until };
}

function auditCommand(values: Flags): AdminCommand {
  const event = choice<AuditEvent>('--event', values.event, auditEvents);
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      throw new UsageError('--limit must be a whole number from 1 to 10000');
  }
  return {
    name: 'audit.list',
    ...(values.customer === undefined ? {} : { identity: values.customer }),
    ...(event === undefined ? {} : { event }),
    ...(limit === undefined ? {} : { limit }),
  };
}
