import { rejectUnknownOptions, optionKeys } from '../config/options';
import { ConfigurationError } from '../errors';
import { validateIdentifier } from '../store/identifiers';
import { headerColumns, type HeaderColumn } from './header-columns';

/** Where the outbox is and what travels: shared by the connector and its schema. */
export interface DebeziumOutboxTable {
  /** Schema holding justonce's tables. Default `justonce`. */
  readonly schema?: string;
  /** The store's table prefix. Default none. */
  readonly tablePrefix?: string;
  /**
   * Headers beyond the standard ones (`type`, `content-type`, `causation-id`, `correlation-id`,
   * `traceparent`, `tracestate`, `tenant`, and `message-id`) that events carry and Kafka must
   * see. Each gets a column of its own; a header of an event that is not listed does not
   * travel through Debezium.
   */
  readonly headers?: readonly string[];
  /** The publication on the outbox table alone. Default `justonce_outbox_debezium`. */
  readonly publication?: string;
}

/** Options of {@link debeziumOutboxConnector}. */
export interface DebeziumOutboxConnectorOptions extends DebeziumOutboxTable {
  /**
   * The PostgreSQL database the outbox is in, as a URL
   * (`postgres://user:password@host:5432/database`). Debezium connects to it itself: the host
   * must be the one the Connect workers reach it by.
   */
  readonly databaseUrl: string;
  /** The connector's name in Connect. Default `justonce-outbox`. */
  readonly name?: string;
  /** The replication slot. Default `justonce_outbox_debezium`. */
  readonly slot?: string;
  /**
   * Debezium's `topic.prefix`: names the connector's logical server and any topic of its own;
   * events go to their `destination` whatever it is. Default `justonce-outbox`.
   */
  readonly topicPrefix?: string;
  /**
   * `no_data` (default): relay events committed after the slot is created, and none already in
   * the table. `initial`: also every row in the table when the connector first starts
   * (published rows included: the inboxes downstream drop what they already handled).
   */
  readonly snapshot?: 'no_data' | 'initial';
}

/** The outbox's names and its header columns, validated. @internal */
export interface OutboxTarget {
  readonly schema: string;
  readonly table: string;
  readonly publication: string;
  readonly columns: HeaderColumn[];
}

/** Option keys of {@link DebeziumOutboxTable}, for the schema function. @internal */
export const TABLE_KEYS = optionKeys<DebeziumOutboxTable>()([
  'schema',
  'tablePrefix',
  'headers',
  'publication',
]);

/** Option keys of {@link DebeziumOutboxConnectorOptions}. @internal */
export const CONNECTOR_KEYS = optionKeys<DebeziumOutboxConnectorOptions>()([
  ...TABLE_KEYS,
  'databaseUrl',
  'name',
  'slot',
  'topicPrefix',
  'snapshot',
]);

/** Checks the options naming the table; throws {@link ConfigurationError}. @internal */
export function outboxTarget(options: DebeziumOutboxTable): OutboxTarget {
  const schema = validateIdentifier(options.schema ?? 'justonce', 'schema');
  const prefix = validateIdentifier(options.tablePrefix ?? '', 'tablePrefix', true);
  const table = validateIdentifier(`${prefix}outbox`, 'table name');
  const publication = validateIdentifier(
    options.publication ?? 'justonce_outbox_debezium',
    'publication',
  );
  return { schema, table, publication, columns: headerColumns(options.headers) };
}

/** A text option that Connect passes on as it is: non-empty, one line. @internal */
export function textOption(value: unknown, name: string, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.trim() === '' || /[\r\n]/.test(value)) {
    throw new ConfigurationError(`${name} must be a non-empty string on one line`, {
      [name]: typeof value === 'string' ? value : typeof value,
    });
  }
  return value;
}

/** Refuses unknown keys, then checks the table options. @internal */
export function checkedTarget(
  options: unknown,
  known: readonly string[],
  context: string,
): OutboxTarget {
  rejectUnknownOptions(options, known, context);
  return outboxTarget(options as DebeziumOutboxTable);
}
