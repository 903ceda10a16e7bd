import type { Knex } from 'knex';
import { INBOX_RECORDS, OUTBOX, type PartitionedTable } from '../store/partitions/tables';
import type { RetentionTable } from './types';
import type { MigrationNames } from '../store/migration';
import { isMysql } from '../store/dialect';
import { MYSQL_CONDITIONS } from './sql/mysql/targets';

/** A millisecond count as an SQL interval; the binding is the count. */
const MILLISECONDS = `(?::double precision * interval '1 millisecond')`;

/**
 * @internal
 * One table the retention job cleans: which rows are stale, given the configured windows.
 * This is the extension point: a new table with data that ages out gets an entry here (and,
 * for large tables, an index on the column its condition filters by).
 */
export interface CleanupTarget {
  readonly table: RetentionTable | 'outbox';
  /** SQL condition on the table's own columns; `undefined` when the table is not cleaned. */
  condition(windows: CleanupWindows): { sql: string; bindings: Knex.Value[] } | undefined;
  /**
   * The timestamp column the condition bounds from above, which an index leads with: a
   * pass's batches walk it in order, each from where the last ended (see `deleteBatch`).
   */
  readonly walk: string;
  /**
   * For a table the partitioned layout partitions by time (`created_at`): the table, and a
   * query on one partition (quoted, qualified) answering `expired`, true when every row of it
   * may go. Read through an index, so it costs the same however big the partition is.
   */
  readonly partitioned?: {
    readonly spec: PartitionedTable;
    readonly allExpired: (
      partition: string,
      windows: CleanupWindows,
    ) => { sql: string; bindings: Knex.Value[] };
    /**
     * Cleaned on the partitioned layout only, by dropping partitions and never by row
     * deletes; a plain table of that name is left alone and not reported.
     */
    readonly only?: boolean;
  };
}

/** @internal The windows a run uses, in milliseconds. */
export interface CleanupWindows {
  readonly retentionMs: number;
  readonly deadLetterRetentionMs: number | undefined;
}

/** @internal Every table the retention job knows, in the order it cleans them. */
export const CLEANUP_TARGETS: readonly CleanupTarget[] = [
  {
    // Records of idempotent operations: only once past their own `expires_at`, AND not
    // written within the retention window (a floor that holds even when a writer chose a
    // shorter expiry), AND not holding a live lease.
    table: 'idempotency',
    walk: 'expires_at',
    condition: ({ retentionMs }) => ({
      sql: `expires_at < now()
            and updated_at < now() - ${MILLISECONDS}
            and not (status = 'IN_PROGRESS' and coalesce(lease_until > now(), false))`,
      bindings: [retentionMs],
    }),
  },
  {
    // The inbox's dedup records: past their own `expires_at` AND written before the
    // retention window (they are never updated, so `created_at` is when they were written).
    table: 'inbox_records',
    walk: 'expires_at',
    condition: ({ retentionMs }) => ({
      sql: `expires_at < now() and created_at < now() - ${MILLISECONDS}`,
      bindings: [retentionMs],
    }),
    partitioned: {
      spec: INBOX_RECORDS,
      // Backward scan of inbox_records_expires_at_idx: the latest expiry, or none when empty.
      allExpired: (partition) => ({
        sql: `select coalesce(max(expires_at) < now(), true) as expired from ${partition}`,
        bindings: [],
      }),
    },
  },
  {
    // Attempt counters of messages that stopped failing without finishing here (the
    // broker gave up, or moved them elsewhere): nothing redelivers them after the window.
    table: 'inbox_attempts',
    walk: 'last_attempt_at',
    condition: ({ retentionMs }) => ({
      sql: `last_attempt_at < now() - ${MILLISECONDS}`,
      bindings: [retentionMs],
    }),
  },
  {
    // Dead letters only when the user opted in with `deadLetterRetentionMs`.
    table: 'dead_letters',
    walk: 'dead_at',
    condition: ({ deadLetterRetentionMs }) =>
      deadLetterRetentionMs === undefined
        ? undefined
        : { sql: `dead_at < now() - ${MILLISECONDS}`, bindings: [deadLetterRetentionMs] },
  },
  {
    // Per-minute activity counts: only the last hour is shown, nothing needs them past the
    // retention window.
    table: 'consumer_activity',
    walk: 'minute',
    condition: ({ retentionMs }) => ({
      sql: `minute < now() - ${MILLISECONDS}`,
      bindings: [retentionMs],
    }),
  },
  {
    // The outbox, on the partitioned layout only (a plain outbox's published events are
    // the relay's `cleanup`): a partition past the window goes whole once it holds no
    // pending event, whatever its age (it must still be published), and no dead one, unless
    // `deadLetterRetentionMs` is set and it died (`available_at`, set when it was marked
    // dead) longer ago than that. Through the partial indexes of pending and dead events.
    table: 'outbox',
    walk: 'created_at',
    condition: () => undefined,
    partitioned: {
      spec: OUTBOX,
      only: true,
      allExpired: (partition, { deadLetterRetentionMs }) => ({
        sql: `select not exists (select 1 from ${partition} where status = 'pending')
                 and not exists (select 1 from ${partition} where status = 'dead'${
                   deadLetterRetentionMs === undefined
                     ? ''
                     : ` and available_at >= now() - ${MILLISECONDS}`
                 }) as expired`,
        bindings: deadLetterRetentionMs === undefined ? [] : [deadLetterRetentionMs],
      }),
    },
  },
];

/**
 * @internal
 * The condition of `target` for the store's dialect: MySQL's twin, or PostgreSQL's own;
 * `undefined` when the table is not cleaned.
 */
export function cleanupCondition(
  target: CleanupTarget,
  windows: CleanupWindows,
  names: MigrationNames,
): { sql: string; bindings: Knex.Value[] } | undefined {
  if (!isMysql(names)) return target.condition(windows);
  // The outbox is cleaned on PostgreSQL's partitioned layout only, never on MySQL.
  return target.table === 'outbox' ? undefined : MYSQL_CONDITIONS[target.table](windows);
}
