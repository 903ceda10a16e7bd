import type { Knex } from 'knex';
import type { RetentionTable } from '../../types';
import type { CleanupWindows } from '../../targets';

/** The database clock (UTC, microseconds) and a window back from it; the binding is µs. */
const NOW = 'current_timestamp(6)';
const AGO = `date_sub(${NOW}, interval ? microsecond)`;

/** A window in milliseconds as the whole microseconds {@link AGO} binds. */
function micros(ms: number): number {
  return Math.round(ms * 1000);
}

type Condition = { sql: string; bindings: Knex.Value[] } | undefined;

/**
 * @internal
 * MySQL's cleanup conditions, the same as PostgreSQL's (see `CLEANUP_TARGETS`) on the
 * database clock. MySQL's `current_timestamp` is the statement's start where PostgreSQL's
 * `now()` is the transaction's; a batch is one short transaction, so they differ by its
 * length at most.
 */
export const MYSQL_CONDITIONS: Record<RetentionTable, (windows: CleanupWindows) => Condition> = {
  idempotency: ({ retentionMs }) => ({
    sql: `expires_at < ${NOW}
          and updated_at < ${AGO}
          and not (status = 'IN_PROGRESS' and coalesce(lease_until > ${NOW}, false))`,
    bindings: [micros(retentionMs)],
  }),
  inbox_records: ({ retentionMs }) => ({
    sql: `expires_at < ${NOW} and created_at < ${AGO}`,
    bindings: [micros(retentionMs)],
  }),
  inbox_attempts: ({ retentionMs }) => ({
    sql: `last_attempt_at < ${AGO}`,
    bindings: [micros(retentionMs)],
  }),
  dead_letters: ({ deadLetterRetentionMs }) =>
    deadLetterRetentionMs === undefined
      ? undefined
      : { sql: `dead_at < ${AGO}`, bindings: [micros(deadLetterRetentionMs)] },
  consumer_activity: ({ retentionMs }) => ({
    sql: `minute < ${AGO}`,
    bindings: [micros(retentionMs)],
  }),
};
