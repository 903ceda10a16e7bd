import { Command } from 'commander';
import { deadLettersCommand } from './commands/dead-letters';
import { migrateCommand } from './commands/migrate';
import { statusCommand } from './commands/status';
import type { GlobalOptions } from './connect';

/**
 * Builds the `justonce` program. Commander's own errors (unknown command or option, missing
 * argument) are thrown rather than exiting, so {@link run} maps them to exit code 2.
 */
export function buildProgram(): Command {
  const program = new Command('justonce')
    .description('operate a justonce store: migrations, status and dead letters')
    .option('--database-url <url>', 'PostgreSQL connection string (default: $DATABASE_URL)')
    .option('--schema <name>', "schema holding justonce's tables", 'justonce')
    .showHelpAfterError()
    .exitOverride();
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  migrateCommand(program, globals);
  statusCommand(program, globals);
  deadLettersCommand(program, globals);
  for (const command of program.commands) {
    command.exitOverride();
    for (const sub of command.commands) sub.exitOverride();
  }
  return program;
}
