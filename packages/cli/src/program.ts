import { Command } from 'commander';
import { cleanupCommand } from './commands/cleanup';
import { dashboardCommand } from './commands/dashboard';
import { debeziumCommand } from './commands/debezium';
import { deadLettersCommand } from './commands/dead-letters';
import { migrateCommand } from './commands/migrate';
import { operationsCommand } from './commands/operations';
import { outboxCommand } from './commands/outbox';
import { slotsCommand } from './commands/slots';
import { statusCommand } from './commands/status';
import type { GlobalOptions } from './connect';

/** Sets exitOverride on `command` and every command below it. */
function throwInsteadOfExit(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) throwInsteadOfExit(sub);
}

/**
 * Builds the `justonce` program. Commander's own errors (unknown command or option, missing
 * argument) are thrown rather than exiting, so {@link run} maps them to exit code 2.
 */
export function buildProgram(): Command {
  const program = new Command('justonce')
    .description(
      'operate a justonce store: migrations, status, dead letters, outbox, operations, cleanup, replication slots and the dashboard',
    )
    .option(
      '--database-url <url>',
      'PostgreSQL, MySQL or MariaDB connection string (default: $DATABASE_URL)',
    )
    .option(
      '--pglite <dir>',
      'a PGlite data directory instead of PostgreSQL (stop the app using it first)',
    )
    .option('--schema <name>', "schema holding justonce's tables", 'justonce')
    .option(
      '--knex-migrations-table <name>',
      "knex's migrations table, when justonce's migrations run through knex's migrator " +
        '(tableName or schemaName.tableName; default: knex_migrations, if it exists)',
    )
    .showHelpAfterError();
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  migrateCommand(program, globals);
  statusCommand(program, globals);
  deadLettersCommand(program, globals);
  outboxCommand(program, globals);
  operationsCommand(program, globals);
  cleanupCommand(program, globals);
  slotsCommand(program, globals);
  dashboardCommand(program, globals);
  debeziumCommand(program, globals);
  throwInsteadOfExit(program);
  return program;
}
