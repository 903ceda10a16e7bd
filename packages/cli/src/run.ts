import { errorMessage } from '@justonce/core/transport';
import { hasErrorCode } from '@justonce/core';
import { CommanderError } from 'commander';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './exit-codes';
import { buildProgram } from './program';
import { isUsageError } from './usage-error';
import { complain } from './format';

/**
 * Runs the CLI on `argv` (process.argv form) and resolves to the exit code: 0 ok, 1 the
 * command failed or found what needs attention, 2 bad arguments (nothing changed).
 */
export async function run(argv: readonly string[]): Promise<number> {
  process.exitCode = undefined;
  try {
    await buildProgram().parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; commander already printed its message for the rest.
      return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    // A ConfigurationError from core: a value the command passed on was refused.
    if (isUsageError(error) || hasErrorCode(error, 'INVALID_CONFIG')) {
      complain(`justonce: ${error.message}`);
      return EXIT_USAGE;
    }
    complain(`justonce: ${errorMessage(error)}`);
    return EXIT_FAILED;
  }
}
