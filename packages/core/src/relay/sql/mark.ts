import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import { prepared, type StatementStore } from '../../store/prepared';
import { idArray } from './id-array';
import { statementCache } from '../../store/statement-cache';
import { isMysql } from '../../store/dialect';
import { mysqlMarkFailed, mysqlMarkPublished } from './mysql/mark';

/** One failed publish to record. @internal */
export interface FailureMark {
  readonly id: string;
  readonly error: string;
  /** Backoff before the next attempt. */
  readonly delayMs: number;
  /** Give up on it: status becomes `dead`. */
  readonly dead: boolean;
  /**
   * Count the attempt against the event. Not when the publish call as a whole failed: the
   * broker (or the way to it) was down, which is no fault of the event's.
   */
  readonly charged: boolean;
}

/** Deletes published events (`remove`) or marks them published. */
const published = statementCache((names, remove: boolean) => {
  const t = names.table('outbox');
  return remove
    ? `delete from ${t} where id = any(?::bigint[]) and status = 'pending'`
    : `update ${t}
         set status = 'published', published_at = statement_timestamp()
         where id = any(?::bigint[]) and status = 'pending'`;
});

/** Records failed attempts, each with its error and backoff, or as dead. */
const failed = statementCache(
  (names, _variant: null) => `update ${names.table('outbox')} o
     set attempts = o.attempts + case when f.charged then 1 else 0 end,
         last_error = f.error,
         available_at = statement_timestamp() + f.delay_ms * interval '1 millisecond',
         status = case when f.dead then 'dead' else 'pending' end
     from unnest(?::bigint[], ?::text[], ?::double precision[], ?::boolean[], ?::boolean[])
       as f(id, error, delay_ms, dead, charged)
     where o.id = f.id and o.status = 'pending'
     returning o.id, o.status`,
);

/**
 * Marks claimed events published, or deletes them when `remove` is set; runs in the claiming
 * transaction. Returns how many rows it changed.
 */
export async function markPublished(
  trx: Knex.Transaction,
  store: StatementStore,
  ids: readonly string[],
  remove: boolean,
): Promise<number> {
  if (isMysql(store)) return mysqlMarkPublished(trx, store, ids, remove);
  if (ids.length === 0) return 0;
  const result = await prepared(store, trx, published(store.names, remove), [idArray(ids)]);
  const r = result as { rowCount?: number | null; affectedRows?: number } | null;
  return Number(r?.rowCount ?? r?.affectedRows ?? 0);
}

/**
 * Records failed attempts in the claiming transaction: counts the attempt, keeps the error,
 * and either schedules the next attempt after the backoff or marks the event dead. Returns
 * the ids that went dead.
 */
export async function markFailed(
  trx: Knex.Transaction,
  store: StatementStore,
  failures: readonly FailureMark[],
): Promise<string[]> {
  if (isMysql(store)) return mysqlMarkFailed(trx, store, failures);
  if (failures.length === 0) return [];
  const result = await prepared(store, trx, failed(store.names, null), [
    idArray(failures.map((f) => f.id)),
    failures.map((f) => f.error),
    failures.map((f) => f.delayMs),
    failures.map((f) => f.dead),
    failures.map((f) => f.charged),
  ]);
  return rowsOf<{ id: string | number; status: string }>(result)
    .filter((row) => row.status === 'dead')
    .map((row) => String(row.id));
}
