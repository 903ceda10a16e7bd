import {
  debeziumOutboxConnector,
  debeziumOutboxSchema,
  type DebeziumOutboxTable,
} from '@justonce/core';
import type { Command } from 'commander';
import type { GlobalOptions } from '../connect';
import { printJson } from '../format';
import { UsageError } from '../usage-error';

/** The options both `debezium` subcommands take: where the outbox is, what travels. */
interface TableFlags {
  readonly tablePrefix?: string;
  readonly header?: string[];
  readonly publication?: string;
}

/** The options of `debezium config`. */
interface ConfigFlags extends TableFlags {
  readonly name?: string;
  readonly slot?: string;
  readonly topicPrefix?: string;
  readonly snapshot?: string;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** The table options from the global `--schema` and the subcommand's flags. */
function tableOf(globals: GlobalOptions, flags: TableFlags): DebeziumOutboxTable {
  return {
    schema: globals.schema,
    ...(flags.tablePrefix !== undefined ? { tablePrefix: flags.tablePrefix } : {}),
    ...(flags.header !== undefined ? { headers: flags.header } : {}),
    ...(flags.publication !== undefined ? { publication: flags.publication } : {}),
  };
}

function withTableFlags(command: Command): Command {
  return command
    .option('--table-prefix <prefix>', "the store's table prefix", undefined)
    .option(
      '--header <name>',
      'a header beyond the standard ones that must travel (repeatable)',
      collect,
    )
    .option(
      '--publication <name>',
      'the publication on the outbox (default: justonce_outbox_debezium)',
    );
}

/**
 * `justonce debezium config` prints the Debezium connector that relays the outbox (the body
 * of Connect's `POST /connectors`); `justonce debezium schema` prints the SQL that prepares
 * the outbox for it. Neither touches a database. See docs/relays.md.
 */
export function debeziumCommand(program: Command, globals: () => GlobalOptions): void {
  const debezium = program
    .command('debezium')
    .description("relay the outbox with Debezium's PostgreSQL connector on Kafka Connect");
  withTableFlags(
    debezium
      .command('config')
      .description('print the connector configuration as JSON, for POST /connectors')
      .option('--name <name>', "the connector's name (default: justonce-outbox)")
      .option('--slot <name>', 'the replication slot (default: justonce_outbox_debezium)')
      .option('--topic-prefix <prefix>', "Debezium's topic.prefix (default: justonce-outbox)")
      .option('--snapshot <mode>', "'no_data' (default) or 'initial'"),
  ).action((flags: ConfigFlags) => {
    const databaseUrl = globals().databaseUrl ?? process.env['DATABASE_URL'];
    if (databaseUrl === undefined || databaseUrl === '') {
      throw new UsageError('no database: pass --database-url or set DATABASE_URL');
    }
    printJson(
      debeziumOutboxConnector({
        ...tableOf(globals(), flags),
        databaseUrl,
        ...(flags.name !== undefined ? { name: flags.name } : {}),
        ...(flags.slot !== undefined ? { slot: flags.slot } : {}),
        ...(flags.topicPrefix !== undefined ? { topicPrefix: flags.topicPrefix } : {}),
        ...(flags.snapshot !== undefined
          ? { snapshot: flags.snapshot as 'no_data' | 'initial' }
          : {}),
      }),
    );
  });
  withTableFlags(
    debezium
      .command('schema')
      .description('print the SQL that adds the header columns, their trigger and the publication'),
  ).action((flags: TableFlags) => {
    for (const statement of debeziumOutboxSchema(tableOf(globals(), flags))) {
      console.log(`${statement};\n`);
    }
  });
}
