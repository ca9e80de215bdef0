#!/usr/bin/env node
import path from 'node:path';
import { parseArgs } from 'node:util';
import { auditEvents, type AuditEvent } from '../audit.js';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { outboxStatuses, type OutboxStatus } from '../delivery/outbox.js';
import { deriveKeys } from '../keys.js';
import { serve, StartupError } from '../serve.js';
import { createLogger, openDatabase } from '../services.js';
import { DatabaseUnavailableError, type Database } from '../storage/database.js';
import { DataFolderBusyError, LegacyDataFolderError } from '../storage/embedded-postgres.js';
import { migrate } from '../storage/migrations.js';
import { checkLegacyFolder, LegacyFolderError, loadPglite } from '../storage/pglite-folder.js';
import { certificateFailure } from '../tls.js';
import { ensureStore, storeStatuses, type StoreChanges, type StoreStatus } from '../store/store.js';
import { runAdminCommand, type AdminCommand, type AdminResult } from './commands.js';
import { ImportRefusedError, importLegacyFolder, type ImportSummary } from './import.js';

const usage = `Usage: storefront-auth <command>

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

class UsageError extends Error {}

/** `import <folder>`: not an admin command, it reads a second database. */
export interface ImportCommand {
  name: 'import';
  folder: string;
}

function oneLine(text: string): string {
  return text.trim().replace(/\s*\n\s*/g, ' | ');
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
  if (values.help || noun === undefined || noun === 'help') return 'help';
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

/**
 * Runs `work` on the database, migrated and with its store row. In embedded mode it connects to the
 * server the running service owns through its socket, or starts the server for the length of the
 * command when no service runs. A running service sees store changes through its short store cache.
 */
async function withStore<T>(
  config: Config,
  work: (db: Database, secret: string) => Promise<T>,
  { allowLegacyFolder = false } = {},
): Promise<T> {
  const opened = await openDatabase(config, {
    shareRunning: true,
    allowLegacyFolder,
    max: 2,
    log: createLogger({ level: 'warn', destination: 'stderr' }),
  });
  // Everything here is maintenance (migrations, imports, table copies): the long statement limits.
  const db = opened.maintenance;
  try {
    await migrate(db);
    await ensureStore(db, systemClock, config.initialStore);
    return await work(db, opened.secret);
  } finally {
    await opened.release();
  }
}

function execute(config: Config, command: AdminCommand): Promise<AdminResult> {
  return withStore(config, (db, secret) =>
    runAdminCommand(
      {
        db,
        clock: systemClock,
        retention: config.retention,
        config,
        keys: deriveKeys(secret, config.appSecretPrevious),
      },
      command,
    ),
  );
}

/**
 * Copies an earlier version's PGlite folder into the store the configuration names. The folder may
 * still sit in DATA_DIR: this is the command that empties it.
 */
async function runImport(config: Config, folder: string): Promise<ImportSummary> {
  // What can be found wrong without the store is found before the store is started.
  checkLegacyFolder(folder);
  await loadPglite();
  return withStore(
    config,
    (db) => importLegacyFolder(db, folder, (line) => process.stderr.write(`storefront-auth: ${line}\n`)),
    { allowLegacyFolder: true },
  );
}

async function main(argv: string[]): Promise<number> {
  let command: ReturnType<typeof parseCommand>;
  try {
    command = parseCommand(argv);
  } catch (error) {
    process.stderr.write(`storefront-auth: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  if (command === 'help') {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`storefront-auth: configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  try {
    if (command === 'serve') {
      await serve(config);
      return 0;
    }
    if (command.name === 'import') {
      const summary = await runImport(config, path.resolve(command.folder));
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
      return 0;
    }
    const result = await execute(config, command);
    if (!result.ok) {
      process.stderr.write(`storefront-auth: ${result.error ?? 'failed'}\n`);
      return 1;
    }
    process.stdout.write(`${JSON.stringify(result.output, null, 2)}\n`);
    return 0;
  } catch (error) {
    // Some configuration can only be judged once the store row is read (the channel it needs).
    if (error instanceof ConfigError) {
      process.stderr.write(`storefront-auth: configuration error: ${error.message}\n`);
      return 2;
    }
    if (error instanceof StartupError) {
      process.stderr.write(`storefront-auth: ${error.message}\n`);
      return 1;
    }
    if (error instanceof DataFolderBusyError) {
      process.stderr.write(`storefront-auth: ${error.message}; stop it first\n`);
      return 1;
    }
    if (error instanceof LegacyFolderError || error instanceof ImportRefusedError) {
      process.stderr.write(`storefront-auth: ${oneLine(error.message)}\n`);
      return 1;
    }
    if (error instanceof LegacyDataFolderError) {
      process.stderr.write(`storefront-auth: ${error.message}\n`);
      return 1;
    }
    if (error instanceof DatabaseUnavailableError) {
      // Say what the driver saw (refused, timed out, reset): the operator fixes the network, not the code.
      const cause = oneLine(error.cause instanceof Error ? error.cause.message : String(error.cause));
      const refused = certificateFailure(error.cause);
      const what =
        refused !== undefined
          ? `the database server's TLS certificate was refused (${oneLine(refused)}); check DATABASE_CA_FILE, the host name in DATABASE_URL and its sslmode`
          : config.database.mode === 'embedded'
            ? `the embedded PostgreSQL server of DATA_DIR=${config.database.dataDir} is not answering (${cause}); its warnings are in the service log, start it again`
            : `the database is not answering (${cause}); check DATABASE_URL and the server`;
      process.stderr.write(`storefront-auth: ${what}\n`);
      return 1;
    }
    throw error;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (error: unknown) => {
    // An operator reads one line, not a stack trace; a failed initdb, say, brings its own output.
    process.stderr.write(`storefront-auth: ${oneLine(error instanceof Error ? error.message : String(error))}\n`);
    process.exitCode = 1;
  },
);
