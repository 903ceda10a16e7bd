import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import type { MigrationNames } from '../../../store/migration';

/** An event the log relay gave up on: its row id, attempts made and last error. @internal */
export interface DeadMark {
  readonly id: string;
  readonly attempts: number;
  readonly error: string;
}

/**
 * Marks events dead, the log mode's only write to an outbox row: an event the broker refuses
 * for good is recorded as the polling relay records it (`status = 'dead'`, its attempts and
 * last error, `available_at` = when it died), for `listDead` and `requeue`. The publication
 * carries inserts only, so the update never comes back through the slot. Resolves to the ids
 * it marked (a row already deleted by retention is not there to mark). @internal
 */
export async function markDeadEvents(
  knex: Knex,
  names: MigrationNames,
  marks: readonly DeadMark[],
): Promise<string[]> {
  if (marks.length === 0) return [];
  const result = await knex.raw(
    `update ${names.table('outbox')} o
        set status = 'dead', attempts = f.attempts, last_error = f.error,
            available_at = statement_timestamp()
       from unnest(?::bigint[], ?::int[], ?::text[]) as f(id, attempts, error)
      where o.id = f.id and o.status = 'pending'
      returning o.id::text as id`,
    [marks.map((m) => m.id), marks.map((m) => m.attempts), marks.map((m) => m.error)],
  );
  return rowsOf<{ id: string }>(result).map((row) => row.id);
}

/** What one retention batch of the log mode did. @internal */
export interface OldEventsBatch {
  /** Rows deleted. */
  readonly deleted: number;
  /** The greatest id the batch looked at: the next batch starts after it; null when none. */
  readonly lastId: string | null;
  /** Whether every row it looked at was younger than the window (the walk is done). */
  readonly allYoung: boolean;
}

/**
 * Walks the pending events in id order, `limit` after `afterId`, through the partial index of
 * pending rows, and deletes those created more than `olderThanMs` ago: the log mode's
 * retention, since it never marks an event published. Ids follow insert order, so once a
 * whole batch is younger than the window the older events are behind the walk. Deleting an
 * event the slot has not confirmed yet loses nothing: its insert is decoded from the WAL the
 * slot retains, not read from the table. @internal
 */
export async function deleteOldEventsBatch(
  knex: Knex,
  names: MigrationNames,
  olderThanMs: number,
  afterId: string | null,
  limit: number,
): Promise<OldEventsBatch> {
  const t = names.table('outbox');
  const result = await knex.raw(
    `with head as (
       select id, created_at < statement_timestamp() - ? * interval '1 millisecond' as old
         from ${t}
        where status = 'pending' and id > ?
        order by id
        limit ?
     ), gone as (
       delete from ${t} where id in (select id from head where old) returning 1
     )
     select (select count(*) from gone)::int as deleted,
            (select max(id) from head)::text as last_id,
            coalesce((select bool_and(not old) from head), true) as all_young`,
    [olderThanMs, afterId ?? '0', limit],
  );
  const row = rowsOf<{ deleted: number; last_id: string | null; all_young: boolean }>(result)[0];
  return {
    deleted: Number(row?.deleted ?? 0),
    lastId: row?.last_id ?? null,
    allYoung: row?.all_young ?? true,
  };
}
