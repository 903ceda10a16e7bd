import type { MigrationNames } from '../migration';

/**
 * The statements that keep the inbox's dedup key `(consumer, scope, message_id)` unique
 * across the partitions of a partitioned `inbox_records`, whose primary key must include the
 * partition column `created_at` and so is unique only within one partition.
 *
 * A `before insert` row trigger, cloned by PostgreSQL onto every partition, takes a
 * transaction-scoped advisory lock on the key (so two inserts of one key queue, the second
 * until the first commits or rolls back, as they do on a unique index) and then looks the key
 * up in every partition: a record present there makes the trigger skip the row, which an
 * `insert … on conflict do nothing … returning` reports exactly as a conflict (no row). Under
 * `read committed` each statement of the trigger reads with a fresh snapshot, so the lookup
 * after the lock sees the record the other transaction committed. @internal
 */
export function dedupTriggerStatements({ schema, table, name, raw }: MigrationNames): string[] {
  const fn = `${schema}.${name('inbox_records_dedup')}`;
  // Validated identifiers only: safe inside a string literal.
  const space = `justonce:dedup:${schema.slice(1, -1)}.${raw('inbox_records')}`;
  return [
    `create or replace function ${fn}() returns trigger
       language plpgsql volatile as $fn$
     begin
       perform pg_advisory_xact_lock(hashtext('${space}'),
         hashtext(new.consumer || chr(31) || new.scope || chr(31) || new.message_id));
       if exists (select 1 from ${table('inbox_records')} r
                   where r.consumer = new.consumer and r.scope = new.scope
                     and r.message_id = new.message_id) then
         return null;
       end if;
       return new;
     end
     $fn$`,
    `drop trigger if exists ${name('inbox_records_dedup')} on ${table('inbox_records')}`,
    `create trigger ${name('inbox_records_dedup')}
       before insert on ${table('inbox_records')}
       for each row execute function ${fn}()`,
  ];
}
