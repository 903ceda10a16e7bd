import { TABLE_KEYS, checkedTarget, type DebeziumOutboxTable } from './options';

/**
 * The statements that prepare justonce's outbox for Debezium, in order; each may run again.
 *
 * - A text column per travelling header (`header_type`, `header_causation_id`, …): the event
 *   router places columns as headers, but not the entries of the `headers` JSON, and
 *   PostgreSQL (before 18) does not publish generated columns.
 * - A `before insert` trigger that copies each header from `headers` into its column, so that
 *   `outbox.add` and everything else writing the outbox stay as they are.
 * - The publication on the outbox table alone, of inserts only: the polling relay's and
 *   retention's updates and deletes never reach Debezium. Partitions publish as the outbox.
 *
 * Run them as the table's owner (the publication needs it) before registering the connector
 * of {@link debeziumOutboxConnector} with the same options. Rows added before the trigger
 * existed have no header columns. Throws `ConfigurationError` for an unknown or invalid option.
 */
export function debeziumOutboxSchema(options: DebeziumOutboxTable = {}): string[] {
  const target = checkedTarget(options, TABLE_KEYS, 'debeziumOutboxSchema');
  const table = `"${target.schema}"."${target.table}"`;
  const headerColumns = target.columns.filter((c) => c.column !== 'message_id');
  const functionName = `"${target.schema}"."${target.table}_debezium_headers"`;
  const trigger = `"${target.table}_debezium_headers"`;
  // Header names are validated to letters, digits, '.', '_' and '-': safe in a literal.
  const copies = headerColumns.map((c) => `  new.${c.column} := new.headers ->> '${c.header}';`);
  return [
    `alter table ${table}\n${headerColumns.map((c) => `  add column if not exists ${c.column} text`).join(',\n')}`,
    `create or replace function ${functionName}() returns trigger language plpgsql as $$\nbegin\n${copies.join('\n')}\n  return new;\nend\n$$`,
    `drop trigger if exists ${trigger} on ${table}`,
    `create trigger ${trigger} before insert on ${table}\n  for each row execute function ${functionName}()`,
    `do $$ begin\n  if not exists (select from pg_publication where pubname = '${target.publication}') then\n    create publication "${target.publication}" for table ${table}\n      with (publish = 'insert', publish_via_partition_root = true);\n  end if;\nend $$`,
  ];
}
