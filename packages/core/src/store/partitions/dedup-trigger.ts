import type { MigrationNames } from '../migration';
import type { PartitionedTable } from './tables';

/**
 * The statements that keep a partitioned table's dedup key (`spec.dedupColumns`: the inbox's
 * `(consumer, scope, message_id)`, the outbox's `message_id`) unique across its partitions,
 * whose unique keys must include the partition column `created_at` and so are unique only
 * within one partition.
 *
 * A `before insert` row trigger, cloned by PostgreSQL onto every partition, takes a
 * transaction-scoped advisory lock on the key (so two inserts of one key queue, the second
 * until the first commits or rolls back, as they do on a unique index) and then looks the key
 * up in every partition: a row present there makes the trigger skip the row, which an
 * `insert … on conflict do nothing … returning` reports exactly as a conflict (no row). Under
 * `read committed` each statement of the trigger reads with a fresh snapshot, so the lookup
 * after the lock sees the row the other transaction committed; it also sees the rows the same
 * statement inserted before. @internal
 */
export function dedupTriggerStatements(
  { schema, table, name, raw }: MigrationNames,
  spec: PartitionedTable,
): string[] {
  const fn = `${schema}.${name(`${spec.table}_dedup`)}`;
  // Validated identifiers only: safe inside a string literal.
  const space = `justonce:dedup:${schema.slice(1, -1)}.${raw(spec.table)}`;
  const key = spec.dedupColumns.map((c) => `new.${c}`).join(' || chr(31) || ');
  const match = spec.dedupColumns.map((c) => `r.${c} = new.${c}`).join(' and ');
  return [
    `create or replace function ${fn}() returns trigger
       language plpgsql volatile as $fn$
     begin
       perform pg_advisory_xact_lock(hashtext('${space}'), hashtext(${key}));
       if exists (select 1 from ${table(spec.table)} r where ${match}) then
         return null;
       end if;
       return new;
     end
     $fn$`,
    `drop trigger if exists ${name(`${spec.table}_dedup`)} on ${table(spec.table)}`,
    `create trigger ${name(`${spec.table}_dedup`)}
       before insert on ${table(spec.table)}
       for each row execute function ${fn}()`,
  ];
}
