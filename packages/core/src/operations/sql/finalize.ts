import type { Knex } from 'knex';
import { prepared, preparedOn, type StatementStore } from '../../store/prepared';
import type { SqlRunner } from '../../transactions/sql';
import { rowsOf } from '../../store/migrate';
import { MILLISECONDS, type RecordKey } from './row';
import { isMysql } from '../../store/dialect';
import { mysqlFinalizeRow, mysqlFinalizeRows } from './mysql/finalize';

/** @internal The final state an owner writes. */
export type Final =
  | { readonly status: 'SUCCEEDED'; readonly responseJson: string }
  | { readonly status: 'FAILED_RETRIABLE' | 'FAILED_FINAL'; readonly errorJson: string };

/**
 * @internal
 * Finalizes a record by compare-and-set on its owner: the update matches only while the row
 * is IN_PROGRESS and `owner_id` is still `ownerId`, so a fenced-off stale owner changes
 * nothing. Returns whether it matched. `expires_at` restarts from now.
 *
 * The response goes into a `json` column, which keeps its text as written (key order, and
 * `\u0000` or lone-surrogate escapes that `jsonb` refuses), so every replay parses to the
 * same JSON the first caller got. The error is `jsonb`: its text must already be storable.
 * A fixed text, run as a prepared statement when the store allows.
 */
export async function finalizeRow(
  db: SqlRunner,
  store: StatementStore,
  record: RecordKey,
  ownerId: string,
  final: Final,
  retentionMs: number,
): Promise<boolean> {
  if (isMysql(store)) return mysqlFinalizeRow(db, store, record, ownerId, final, retentionMs);
  const response = final.status === 'SUCCEEDED' ? final.responseJson : null;
  const error = final.status === 'SUCCEEDED' ? null : final.errorJson;
  const result = await preparedOn(
    store,
    db,
    `update ${store.names.table('idempotency')}
        set status = ?,
            response = ?::json,
            error = ?::jsonb,
            lease_until = null,
            updated_at = now(),
            expires_at = now() + ${MILLISECONDS}
      where scope = ? and operation = ? and key = ?
        and owner_id = ? and status = 'IN_PROGRESS'
      returning status`,
    [
      final.status,
      response,
      error,
      retentionMs,
      record.scope,
      record.operation,
      record.key,
      ownerId,
    ],
  );
  return rowsOf(result).length === 1;
}

/** @internal One final state to write, by compare-and-set on its owner. */
export interface Finalize extends RecordKey {
  readonly ownerId: string;
  readonly final: Final;
  readonly retentionMs: number;
}

/**
 * @internal
 * {@link finalizeRow} for several records at once (distinct keys, sorted by the caller), on
 * the store's pool (`knex`): one update over arrays. Resolves to whether each matched, in the
 * items' order.
 */
export async function finalizeRows(
  knex: Knex,
  store: StatementStore,
  items: readonly Finalize[],
): Promise<boolean[]> {
  if (isMysql(store)) return mysqlFinalizeRows(knex, store, items);
  const result = await prepared(
    store,
    knex,
    `update ${store.names.table('idempotency')} as t
        set status = f.status,
            response = f.response::json,
            error = f.error::jsonb,
            lease_until = null,
            updated_at = now(),
            expires_at = now() + f.retention_ms * interval '1 millisecond'
       from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                   ?::text[], ?::double precision[])
            as f (scope, operation, key, owner_id, status, response, error, retention_ms)
      where t.scope = f.scope and t.operation = f.operation and t.key = f.key
        and t.owner_id = f.owner_id and t.status = 'IN_PROGRESS'
      returning t.owner_id`,
    [
      items.map((i) => i.scope),
      items.map((i) => i.operation),
      items.map((i) => i.key),
      items.map((i) => i.ownerId),
      items.map((i) => i.final.status),
      items.map((i) => (i.final.status === 'SUCCEEDED' ? i.final.responseJson : null)),
      items.map((i) => (i.final.status === 'SUCCEEDED' ? null : i.final.errorJson)),
      items.map((i) => i.retentionMs),
    ],
  );
  const matched = new Set(rowsOf<{ owner_id: string }>(result).map((row) => row.owner_id));
  return items.map((item) => matched.has(item.ownerId));
}
