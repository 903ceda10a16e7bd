import { ConfigurationError } from '../errors';
import { validateIdentifier } from '../store/identifiers';
import {
  CONNECTOR_KEYS,
  checkedTarget,
  textOption,
  type DebeziumOutboxConnectorOptions,
  type OutboxTarget,
} from './options';

/** A connector as Kafka Connect's REST API takes it (`POST /connectors`). */
export interface DebeziumConnector {
  /** The connector's name. */
  readonly name: string;
  /** Its configuration: every value a string, as Connect stores it. */
  readonly config: Readonly<Record<string, string>>;
}

/** The database URL's parts, as Debezium's `database.*` settings take them. */
function databaseSettings(url: unknown): Record<string, string> {
  if (typeof url !== 'string') {
    throw new ConfigurationError('databaseUrl must be a PostgreSQL URL', {
      databaseUrl: typeof url,
    });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigurationError('databaseUrl is not a URL', {});
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!['postgres:', 'postgresql:'].includes(parsed.protocol) || !parsed.hostname || !database) {
    // The URL may hold a password: name its parts, never the URL.
    throw new ConfigurationError(
      'databaseUrl must be postgres://user[:password]@host[:port]/database: Debezium reads PostgreSQL only',
      { protocol: parsed.protocol, host: parsed.hostname, database },
    );
  }
  const settings: Record<string, string> = {
    'database.hostname': parsed.hostname.replace(/^\[|\]$/g, ''),
    'database.port': parsed.port || '5432',
    'database.user': decodeURIComponent(parsed.username) || 'postgres',
    'database.dbname': database,
  };
  if (parsed.password !== '') settings['database.password'] = decodeURIComponent(parsed.password);
  return settings;
}

/** A Debezium include-list entry: a regular expression matching exactly this name. */
function exactly(...parts: string[]): string {
  return parts.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\.');
}

/**
 * The outbox event router and the transforms after it. The router takes the topic from
 * `destination`, the key from `partition_key` and the value from `payload`; every header
 * column becomes the header it holds. It also adds a header `id` (the event id) of its own,
 * which the polling relay does not send: `DropHeaders` removes it.
 */
function transforms(target: OutboxTarget): Record<string, string> {
  const placement = target.columns.map(({ column, header }) => `${column}:header:${header}`);
  return {
    transforms: 'outbox,dropRouterId',
    'transforms.outbox.type': 'io.debezium.transforms.outbox.EventRouter',
    'transforms.outbox.table.field.event.id': 'message_id',
    'transforms.outbox.table.field.event.key': 'partition_key',
    'transforms.outbox.table.field.event.payload': 'payload',
    'transforms.outbox.table.expand.json.payload': 'false',
    'transforms.outbox.table.fields.additional.placement': placement.join(','),
    'transforms.outbox.route.by.field': 'destination',
    'transforms.outbox.route.topic.replacement': '${routedByValue}',
    'transforms.outbox.route.tombstone.on.empty.payload': 'false',
    'transforms.dropRouterId.type': 'org.apache.kafka.connect.transforms.DropHeaders',
    'transforms.dropRouterId.headers': 'id',
  };
}

/**
 * The Debezium PostgreSQL connector, with the outbox event router, that relays justonce's
 * outbox to Kafka as the polling relay would: the same topic (`destination`), key (the
 * partition key; none for keyless events), value bytes (`payload`, untouched) and headers
 * (`message-id` and the header columns, as plain UTF-8 strings, in the relay's order).
 * Register it with `POST /connectors` of a Connect worker that has the Debezium PostgreSQL
 * plugin. The outbox needs the header columns, their trigger and the publication of
 * {@link debeziumOutboxSchema} first, with the same `schema`, `tablePrefix`, `headers` and
 * `publication`. Throws {@link ConfigurationError} for an unknown or invalid option.
 *
 * @example
 * ```ts
 * const connector = debeziumOutboxConnector({ databaseUrl: 'postgres://app:secret@db:5432/shop' });
 * await fetch('http://connect:8083/connectors', {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json' },
 *   body: JSON.stringify(connector),
 * });
 * ```
 */
export function debeziumOutboxConnector(
  options: DebeziumOutboxConnectorOptions,
): DebeziumConnector {
  const target = checkedTarget(options, CONNECTOR_KEYS, 'debeziumOutboxConnector');
  const name = textOption(options.name, 'name', 'justonce-outbox');
  const slot = validateIdentifier(options.slot ?? 'justonce_outbox_debezium', 'slot');
  const topicPrefix = textOption(options.topicPrefix, 'topicPrefix', 'justonce-outbox');
  const snapshot = options.snapshot ?? 'no_data';
  if (snapshot !== 'no_data' && snapshot !== 'initial') {
    throw new ConfigurationError("snapshot must be 'no_data' or 'initial'", { snapshot });
  }
  const columns = [
    'destination',
    'partition_key',
    'payload',
    ...target.columns.map((c) => c.column),
  ];
  const config: Record<string, string> = {
    'connector.class': 'io.debezium.connector.postgresql.PostgresConnector',
    'tasks.max': '1',
    ...databaseSettings(options.databaseUrl),
    'topic.prefix': topicPrefix,
    'plugin.name': 'pgoutput',
    'slot.name': slot,
    'publication.name': target.publication,
    'publication.autocreate.mode': 'disabled',
    'snapshot.mode': snapshot,
    // Logical decoding messages (`pg_logical_emit_message`, which the log relay's drain
    // writes) reach every slot whatever its publication; Debezium would turn each into a
    // record that the byte-array converter refuses, failing the task for good.
    'message.prefix.exclude.list': '.*',
    'table.include.list': exactly(target.schema, target.table),
    'column.include.list': columns.map((c) => exactly(target.schema, target.table, c)).join(','),
    'binary.handling.mode': 'bytes',
    'tombstones.on.delete': 'false',
    // Debezium's own `__debezium.context.*` headers: the polling relay sends none.
    'extended.headers.enabled': 'false',
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'org.apache.kafka.connect.converters.ByteArrayConverter',
    'header.converter': 'org.apache.kafka.connect.storage.StringConverter',
    ...transforms(target),
  };
  return { name, config };
}
