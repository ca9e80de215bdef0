/**
 * The command line's words: its usage text and the parsing of arguments into a command. Apart from
 * the entry (main.ts), which runs as soon as it is loaded.
 */
import { parseArgs } from 'node:util';
import { auditEvents, type AuditEvent } from '../audit.js';
import { outboxStatuses, type OutboxStatus } from '../delivery/outbox.js';
import { storeStatuses, type StoreChanges, type StoreStatus } from '../store/store.js';
import type { AdminCommand } from './commands.js';

export const usage = `Usage: storefront-auth <command>

  serve                                   run the service
  migrate                                 apply database migrations
  store show                              print the store context
  store set [--name N] [--identity-mode email|phone] [--verification-required true|false]
            [--sign-in-with-code true|false] [--sign-in-notices true|false]
            [--passkeys true|false] [--status active|paused|closed] [--force]
  customer show <identity>                print a customer
  customer delete <identity> --yes        delete a customer and their data, as they can themselves
  customer sessions <identity>            a customer's live sessions, newest first
  customer revoke-sessions <identity>     sign a customer out everywhere (audited)
  customer passkeys <identity>            a customer's passkeys, newest first
  customer remove-passkey <identity> <id> remove one of a customer's passkeys (audited)
  outbox list [--status pending|sent|failed|dropped]
  outbox retry <id>                       send a failed message again
  audit [--customer <identity>] [--event <event>] [--limit N]
                                          security events, newest first (default 100)
  prune                                   delete what has outlived its retention now
  import <folder>                         copy the rows of an earlier version's PGlite folder
                                          (DATA_DIR/pgdata) into a store without customers

Configuration comes from the environment (see the README).`;

export class UsageError extends Error {}

/** `import <folder>`: not an admin command, it reads a second database. */
export interface ImportCommand {
  name: 'import';
  folder: string;
}

function choice<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}`);
  return value as T;
}

function readArguments(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      name: { type: 'string' },
      'identity-mode': { type: 'string' },
      'verification-required': { type: 'string' },
      'sign-in-with-code': { type: 'string' },
      'sign-in-notices': { type: 'string' },
      passkeys: { type: 'string' },
      status: { type: 'string' },
      force: { type: 'boolean', default: false },
      yes: { type: 'boolean', default: false },
      customer: { type: 'string' },
      event: { type: 'string' },
      limit: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

type Flags = ReturnType<typeof readArguments>['values'];

export function parseCommand(argv: string[]): AdminCommand | ImportCommand | 'serve' | 'help' {
  const { values, positionals } = readArguments(argv);
  const [noun, verb, argument, second, extra] = positionals;
  if (values.help || noun === 'help') return 'help';
  if (noun === undefined) throw new UsageError('no command given');
  if (noun === 'import') {
    if (verb === undefined)
      throw new UsageError('import needs the folder to read (DATA_DIR/pgdata of the earlier version)');
    if (argument !== undefined) throw new UsageError(`unexpected argument "${argument}"`);
    return { name: 'import', folder: verb };
  }
  const key = verb === undefined ? noun : `${noun} ${verb}`;
  // Only removing a passkey takes a second argument (the passkey's id).
  const unexpected = key === 'customer remove-passkey' ? extra : (second ?? extra);
  if (unexpected !== undefined) throw new UsageError(`unexpected argument "${unexpected}"`);
  switch (key) {
    case 'serve':
      return 'serve';
    case 'migrate':
      return { name: 'migrate' };
    case 'prune':
      return { name: 'prune' };
    case 'store show':
      return { name: 'store.show' };
    case 'store set':
      return storeSetCommand(values);
    case 'customer show':
    case 'customer delete':
    case 'customer sessions':
    case 'customer revoke-sessions':
    case 'customer passkeys':
    case 'customer remove-passkey':
      return customerCommand(key, argument, second, values.yes);
    case 'outbox list': {
      const status = choice<OutboxStatus>('--status', values.status, outboxStatuses);
      return status === undefined ? { name: 'outbox.list' } : { name: 'outbox.list', status };
    }
    case 'audit':
      return auditCommand(values);
    case 'outbox retry':
      if (argument === undefined) throw new UsageError('outbox retry needs a message id');
      return { name: 'outbox.retry', id: argument };
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
}

function storeSetCommand(values: Flags): AdminCommand {
  const changes: StoreChanges = {};
  if (values.name !== undefined) {
    const name = values.name.trim();
    if (name === '' || [...name].length > 120) throw new UsageError('--name must be 1 to 120 characters');
    changes.name = name;
  }
  const mode = choice('--identity-mode', values['identity-mode'], ['email', 'phone'] as const);
  if (mode !== undefined) changes.identityMode = mode;
  const required = choice('--verification-required', values['verification-required'], ['true', 'false'] as const);
  if (required !== undefined) changes.verificationRequired = required === 'true';
  const withCode = choice('--sign-in-with-code', values['sign-in-with-code'], ['true', 'false'] as const);
  if (withCode !== undefined) changes.signInWithCode = withCode === 'true';
  const notices = choice('--sign-in-notices', values['sign-in-notices'], ['true', 'false'] as const);
  if (notices !== undefined) changes.signInNotices = notices === 'true';
  const passkeys = choice('--passkeys', values.passkeys, ['true', 'false'] as const);
  if (passkeys !== undefined) changes.passkeys = passkeys === 'true';
  const status = choice<StoreStatus>('--status', values.status, storeStatuses);
  if (status !== undefined) changes.status = status;
  if (Object.keys(changes).length === 0)
    throw new UsageError(
      'store set needs at least one of --name, --identity-mode, --verification-required, --sign-in-with-code, --sign-in-notices, --passkeys, --status',
    );
  return { name: 'store.set', changes, force: values.force };
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
