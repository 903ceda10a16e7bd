import type { DeadLetterReason } from '../dead-letters/types';
import { rowsOf } from '../store/migrate';
import type { MigrationNames } from '../store/migration';
import type { Store } from '../store/store';
import { isMysql } from '../store/dialect';
import { mysqlStatusQueries } from './sql/mysql/status';
import { readReplicationSlots } from './replication-slots';
import { readResilience } from './resilience';
import type {
  ConsumerActivity,
  DeadLetterCount,
  DestinationStatus,
  OperationStatus,
  RetentionBacklog,
  StoreStatus,
} from './types';

/**
 * The most rows a retention backlog count of `status()` reads: a figure equal to it means at
 * least that many ({@link RetentionBacklog.countLimit}).
 */
export const STATUS_COUNT_LIMIT = 100_000;

/**
 * A retention backlog figure as the CLI and the dashboard show it: the count, or "≥ limit"
 * when the count stopped at its limit.
 */
export function backlogFigure(count: number, limit: number): string {
  return count >= limit ? `≥ ${limit}` : String(count);
}

/**
 * A size in bytes as the CLI and the dashboard show it: `512 B`, `1.5 KiB`, `37.2 MiB`,
 * `4.0 GiB` (powers of 1024).
 */
export function bytesFigure(count: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = Math.max(0, count);
  let unit = 0;
  // Up a unit while the figure, as rounded for display, would reach 1024.
  const shown = (): number => (unit === 0 ? value : Math.round(value * 10) / 10);
  while (shown() >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** The statements {@link readStatus} runs, one round trip each. */
export type StatusQueryName =
  'outbox' | 'deadLetters' | 'consumers' | 'activity' | 'operations' | 'retention';

/**
 * The SQL of each status figure, for a store's table names. Exposed so that a test (or an
 * operator) can `EXPLAIN` exactly what `status()` runs. None takes a binding. Each reads
 * through a partial index that holds only the rows it counts:
 *
 * - `outbox`: `outbox_pending_idx` and `outbox_dead_idx` (pending and dead rows only, never
 *   the published ones kept for cleanup);
 * - `deadLetters`: `dead_letters_waiting_idx` (letters not requeued), index-only;
 * - `consumers`: `inbox_records_succeeded_created_idx` and `idempotency_succeeded_created_idx`,
 *   the last hour's range of each, index-only;
 * - `activity`: the primary key of `consumer_activity`: the distinct consumers found by
 *   skipping through the key (a recursive query, one probe per consumer), then each
 *   consumer's last hour as a range of the key;
 * - `operations`: `idempotency_in_progress_idx`, index-only;
 * - `retention`: `inbox_records_expires_at_idx`, `idempotency_expires_at_idx` and
 *   `outbox_published_idx`, index-only, each count stopping at {@link STATUS_COUNT_LIMIT}
 *   rows; it also reads the database clock for `StoreStatus.at`.
 */
export function statusQueries(names: MigrationNames): Readonly<Record<StatusQueryName, string>> {
  if (isMysql(names)) return mysqlStatusQueries(names, STATUS_COUNT_LIMIT);
  const outbox = names.table('outbox');
  const idempotency = names.table('idempotency');
  const records = names.table('inbox_records');
  const activity = names.table('consumer_activity');
  return {
    outbox: `select destination,
        count(*) filter (where status = 'pending')::bigint as pending,
        extract(epoch from now() - min(created_at) filter (where status = 'pending'))::float8
          as oldest_pending_seconds,
        count(*) filter (where status = 'dead')::bigint as dead
      from ${outbox}
      where status = 'pending' or status = 'dead'
      group by destination
      order by destination`,
    deadLetters: `select consumer, reason, count(*)::bigint as count, max(dead_at) as newest_at
      from ${names.table('dead_letters')}
      where requeued_at is null
      group by consumer, reason
      order by consumer, reason`,
    // The inbox's records and operations' live apart; a consumer and an operation of the
    // same name add up in the one entry of that name.
    consumers: `select name, sum(handled)::bigint as handled
      from (select consumer as name, count(*) as handled
              from ${records}
             where status = 'SUCCEEDED' and created_at > now() - interval '1 hour'
             group by consumer
            union all
            select operation, count(*)
              from ${idempotency}
             where status = 'SUCCEEDED' and created_at > now() - interval '1 hour'
             group by operation) h
      group by name
      order by name`,
    // PostgreSQL before 18 has no skip scan: a recursive query walks the distinct consumers
    // through the key, so the read never scans the minutes older than the hour.
    activity: `with recursive consumers as (
        (select consumer from ${activity} order by consumer limit 1)
        union all
        select (select a.consumer from ${activity} a
                 where a.consumer > c.consumer order by a.consumer limit 1)
          from consumers c
         where c.consumer is not null)
      select c.consumer, h.handled, h.duplicates, h.dead_lettered
        from consumers c
        cross join lateral (
          select sum(a.handled)::bigint as handled,
                 sum(a.duplicates)::bigint as duplicates,
                 sum(a.dead_lettered)::bigint as dead_lettered
            from ${activity} a
           where a.consumer = c.consumer and a.minute >= now() - interval '1 hour') h
       where c.consumer is not null and h.handled is not null
       order by c.consumer`,
    operations: `select operation,
        count(*) filter (where lease_until is null or lease_until > now())::bigint as in_progress,
        count(*) filter (where lease_until <= now())::bigint as past_lease
      from ${idempotency}
      where status = 'IN_PROGRESS'
      group by operation
      order by operation`,
    // Each backlog count stops at STATUS_COUNT_LIMIT rows: past it, counting would read the
    // whole index on every refresh (seconds at tens of millions of published rows).
    retention: `select now() as at,
        least(${STATUS_COUNT_LIMIT},
          (select count(*) from (select 1 from ${idempotency}
             where expires_at is not null and expires_at < now()
             limit ${STATUS_COUNT_LIMIT}) e)
          + (select count(*) from (select 1 from ${records} where expires_at < now()
             limit ${STATUS_COUNT_LIMIT}) r))::bigint as expired,
        (select count(*) from (select 1 from ${outbox} where status = 'published'
           limit ${STATUS_COUNT_LIMIT}) p)::bigint as published`,
  };
}

type Count = string | number;

interface ActivityRow {
  consumer: string;
  handled: Count;
  duplicates: Count;
  dead_lettered: Count;
}

/**
 * One entry per name: `handledLastHour` from the dedup records (`inbox_records` of inbox
 * consumers, `idempotency` of operations), duplicates and dead letters from the inboxes' activity counts
 * (operations have none). Sorted by name.
 */
function mergeActivity(
  handled: ReadonlyArray<{ name: string; handled: Count }>,
  activity: readonly ActivityRow[],
): ConsumerActivity[] {
  const byName = new Map<string, ConsumerActivity>();
  for (const r of handled) {
    byName.set(r.name, {
      name: r.name,
      handledLastHour: Number(r.handled),
      duplicatesLastHour: 0,
      deadLetteredLastHour: 0,
    });
  }
  for (const r of activity) {
    byName.set(r.consumer, {
      name: r.consumer,
      handledLastHour: byName.get(r.consumer)?.handledLastHour ?? 0,
      duplicatesLastHour: Number(r.duplicates),
      deadLetteredLastHour: Number(r.dead_lettered),
    });
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

async function rows<T>(store: Store, sql: string): Promise<T[]> {
  return rowsOf<T>(await store.knex.raw(sql));
}

/**
 * Reads every status figure: six statements, the consumers' load shedding, and on PostgreSQL
 * the replication slots, run at once (each on its own connection on PostgreSQL; PGlite runs them one after
 * the other). @internal
 */
export async function readStatus(store: Store): Promise<StoreStatus> {
  const sql = statusQueries(store.names);
  const [outbox, deadLetters, consumers, activity, operations, retention, slots, resilience] =
    await Promise.all([
      rows<{
        destination: string;
        pending: Count;
        oldest_pending_seconds: number | string | null;
        dead: Count;
      }>(store, sql.outbox),
      rows<{ consumer: string; reason: string; count: Count; newest_at: Date | string }>(
        store,
        sql.deadLetters,
      ),
      rows<{ name: string; handled: Count }>(store, sql.consumers),
      rows<ActivityRow>(store, sql.activity),
      rows<{ operation: string; in_progress: Count; past_lease: Count }>(store, sql.operations),
      rows<{ at: Date | string; expired: Count; published: Count }>(store, sql.retention),
      readReplicationSlots(store),
      readResilience(store),
    ]);
  const backlog = retention[0];
  return {
    schema: store.schema,
    at: new Date(backlog?.at ?? Date.now()),
    outbox: outbox.map((r): DestinationStatus => ({
      destination: r.destination,
      pending: Number(r.pending),
      oldestPendingSeconds:
        r.oldest_pending_seconds === null ? null : Number(r.oldest_pending_seconds),
      dead: Number(r.dead),
    })),
    deadLetters: deadLetters.map((r): DeadLetterCount => ({
      consumer: r.consumer,
      reason: r.reason as DeadLetterReason,
      count: Number(r.count),
      newestAt: new Date(r.newest_at),
    })),
    consumers: mergeActivity(consumers, activity),
    operations: operations.map((r): OperationStatus => ({
      operation: r.operation,
      inProgress: Number(r.in_progress),
      pastLease: Number(r.past_lease),
    })),
    retention: {
      expiredDedupRecords: Number(backlog?.expired ?? 0),
      publishedOutboxRows: Number(backlog?.published ?? 0),
      countLimit: STATUS_COUNT_LIMIT,
    } satisfies RetentionBacklog,
    slots,
    resilience,
  };
}
