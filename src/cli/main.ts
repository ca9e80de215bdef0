#!/usr/bin/env node
import path from 'node:path';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig, nearMissWarning, type Config } from '../config.js';
import { deriveKeys } from '../keys.js';
import { serve, StartupError } from '../serve.js';
import { createLogger, openDatabase } from '../services.js';
import { DatabaseUnavailableError, type Database } from '../storage/database.js';
import { DataFolderBusyError, LegacyDataFolderError } from '../storage/embedded-postgres.js';
import { migrate } from '../storage/migrations.js';
import { checkLegacyFolder, LegacyFolderError, loadPglite } from '../storage/pglite-folder.js';
import { certificateFailure } from '../tls.js';
import { ensureStore } from '../store/store.js';
import { parseCommand, usage } from './arguments.js';
import { runAdminCommand, type AdminCommand, type AdminResult } from './commands.js';
import { ImportRefusedError, importLegacyFolder, type ImportSummary } from './import.js';
import { BackupRefusedError, runBackup } from './backup.js';
import { runRestore } from './restore.js';
import { runCustomersCommand } from './customer-transfer.js';
import { BreachedFileError, loadBreachedFile } from './breached.js';
import { BackupFileError } from '../storage/backup-file.js';

function oneLine(text: string): string {
  return text.trim().replace(/\s*\n\s*/g, ' | ');
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
      await serve(config); // warns of near misses in its log
      return 0;
    }
    for (const nearMiss of config.nearMisses)
      process.stderr.write(`storefront-auth: warning: ${nearMissWarning(nearMiss)}\n`);
    if (command.name === 'import') {
      const summary = await runImport(config, path.resolve(command.folder));
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
      return 0;
    }
    if (command.name === 'customers.import' || command.name === 'customers.export') {
      const named = {
        ...command,
        ...('file' in command && command.file !== undefined ? { file: path.resolve(command.file) } : {}),
      };
      const outcome = await withStore(config, (db, secret) =>
        runCustomersCommand(db, systemClock, config, deriveKeys(secret, config.appSecretPrevious), named),
      );
      if (outcome.output !== undefined) process.stdout.write(`${JSON.stringify(outcome.output, null, 2)}\n`);
      return outcome.code;
    }
    if (command.name === 'breached.load') {
      const file = path.resolve(command.file);
      const summary = await withStore(config, (db) => loadBreachedFile(db, file));
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
      return 0;
    }
    if (command.name === 'backup' || command.name === 'restore') {
      const file = path.resolve(command.file);
      const summary =
        command.name === 'backup' ? await runBackup(config, file) : await runRestore(config, file, command.force);
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
    if (
      error instanceof LegacyFolderError ||
      error instanceof ImportRefusedError ||
      error instanceof BackupRefusedError ||
      error instanceof BreachedFileError ||
      error instanceof BackupFileError
    ) {
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
