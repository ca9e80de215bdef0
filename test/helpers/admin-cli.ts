import { parseCommand, UsageError } from '../../src/cli/arguments.js';
import { runAdminCommand, type AdminCommand, type AdminDeps } from '../../src/cli/commands.js';

/** An admin command's end, as main.ts turns it into an exit code. */
export interface AdminOutcome {
  /** As the binary exits: 0 done, 1 refused, 2 bad usage. */
  code: number;
  output?: any;
  error?: string;
}

/**
 * `storefront-auth …argv` in-process: parsed as main.ts parses it, run as main.ts runs an admin
 * command (exit 2 with the usage error, 1 with the command's error, 0 with its output). `kind`
 * says what the test means to run, so arguments that parse as another command fail the test.
 */
export async function runAdminInProcess(
  deps: AdminDeps,
  argv: string[],
  kind: { what: string; is(name: string): boolean } = { what: 'an admin command', is: () => true },
): Promise<AdminOutcome> {
  let command: ReturnType<typeof parseCommand>;
  try {
    command = parseCommand(argv);
  } catch (error) {
    if (error instanceof UsageError) return { code: 2, error: error.message };
    throw error;
  }
  if (typeof command !== 'object' || !kind.is(command.name)) throw new Error(`${argv.join(' ')} is not ${kind.what}`);
  const result = await runAdminCommand(deps, command as AdminCommand);
  return result.ok ? { code: 0, output: result.output } : { code: 1, error: result.error ?? '' };
}
