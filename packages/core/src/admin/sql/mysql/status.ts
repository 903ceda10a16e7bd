import type { MigrationNames } from '../../../store/migration';
import type { StatusQueryName } from '../../status';

/** The database clock: the statement's start, UTC, to the microsecond. */
const NOW = 'current_timestamp(6)';

/**
 * @internal
 * MySQL's `statusQueries`: the same figures, by the same names and columns. MySQL has no
 * `filter` clause and no partial indexes: a count is a `sum` of a condition, and each read
 * goes through an index that leads with the column it filters on (`outbox_pending_idx` on
 * `status`, `idempotency_in_progress_idx`, the `expires_at` indexes, `consumer_activity`'s
 * `minute`). The retention counts stop at `limit` as on PostgreSQL. `operation` is bytes
 * (`varbinary`) on MySQL: it is read back as text in the table's binary order, which
 * `utf8mb4_bin` names share.
 */
export function mysqlStatusQueries(
  names: MigrationNames,
  limit: number,
): Readonly<Record<StatusQueryName, string>> {
  const outbox = names.table('outbox');
  const idempotency = names.table('idempotency');
  const records = names.table('inbox_records');
  const activity = names.table('consumer_activity');
  const operation = 'convert(operation using utf8mb4) collate utf8mb4_bin';
  return {
    outbox: `select destination,
        sum(status = 'pending') as pending,
        timestampdiff(microsecond,
          min(case when status = 'pending' then created_at end), ${NOW}) / 1e6
          as oldest_pending_seconds,
        sum(status = 'dead') as dead
      from ${outbox}
      where status in ('pending', 'dead')
      group by destination
      order by destination`,
    deadLetters: `select consumer, reason, count(*) as count, max(dead_at) as newest_at
      from ${names.table('dead_letters')}
      where requeued_at is null
      group by consumer, reason
      order by consumer, reason`,
    consumers: `select name, sum(handled) as handled
      from (select consumer as name, count(*) as handled
              from ${records}
             where status = 'SUCCEEDED' and created_at > ${NOW} - interval 1 hour
             group by consumer
            union all
            select ${operation}, count(*)
              from ${idempotency}
             where status = 'SUCCEEDED' and created_at > ${NOW} - interval 1 hour
             group by operation) h
      group by name
      order by name`,
    // The last hour's minutes through consumer_activity_minute_idx, summed per consumer.
    activity: `select consumer, sum(handled) as handled, sum(duplicates) as duplicates,
        sum(dead_lettered) as dead_lettered
      from ${activity}
      where minute >= ${NOW} - interval 1 hour
      group by consumer
      order by consumer`,
    operations: `select ${operation} as operation,
        coalesce(sum(lease_until is null or lease_until > ${NOW}), 0) as in_progress,
        coalesce(sum(lease_until <= ${NOW}), 0) as past_lease
      from ${idempotency}
      where status = 'IN_PROGRESS'
      group by operation
      order by operation`,
    retention: `select ${NOW} as at,
        least(${limit},
          (select count(*) from (select 1 from ${idempotency}
             where expires_at is not null and expires_at < ${NOW}
             limit ${limit}) e)
          + (select count(*) from (select 1 from ${records} where expires_at < ${NOW}
             limit ${limit}) r)) as expired,
        (select count(*) from (select 1 from ${outbox} where status = 'published'
           limit ${limit}) p) as published`,
  };
}
