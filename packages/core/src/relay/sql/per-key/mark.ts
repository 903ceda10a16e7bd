import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import { prepared, type StatementStore } from '../../../store/prepared';
import { statementCache } from '../../../store/statement-cache';
import { distributionKeyOf } from '../../../store/distribution';
import type { ClaimedRow } from '../claim';
import { idArray } from '../id-array';
import type { FailureMark } from '../mark';

/** Deletes one distribution key's published events (`remove`) or marks them published. */
const published = statementCache((names, remove: boolean) => {
  const t = names.table('outbox');
  return remove
    ? `delete from ${t}
         where distribution_key = ? and id = any(?::bigint[]) and status = 'pending'`
    : `update ${t}
         set status = 'published', published_at = statement_timestamp()
         where distribution_key = ? and id = any(?::bigint[]) and status = 'pending'`;
});

/** Records one failed attempt, with its error and backoff, or as dead. */
const failed = statementCache(
  (names, _variant: null) => `update ${names.table('outbox')}
     set attempts = attempts + ?::int,
         last_error = ?,
         available_at = statement_timestamp() + ?::double precision * interval '1 millisecond',
         status = ?
     where distribution_key = ? and id = ?::bigint and status = 'pending'
     returning status`,
);

/** The distribution key of each row of `rows`, by id. */
function distributionKeys(rows: readonly ClaimedRow[]): Map<string, string> {
  const keys = new Map<string, string>();
  for (const row of rows) keys.set(row.id, distributionKeyOf(row.partition_key, row.message_id));
  return keys;
}

/** The distribution key of a claimed id; a mark of a row the batch does not hold is a bug. */
function keyOf(keys: ReadonlyMap<string, string>, id: string): string {
  const key = keys.get(id);
  if (key === undefined) throw new Error(`outbox row ${id} is not in the batch it is marked with`);
  return key;
}

/**
 * The per-key form of the relay's marks: the published `ids` of `batch` deleted (`remove`) or
 * marked published with one statement per distribution key, and each failure recorded with
 * one statement (a key has at most one per batch: its later events are released), every one
 * naming its row's distribution key by equality. Runs in the claiming transaction; resolves to
 * how many rows were marked published and which ids went dead. @internal
 */
export async function perKeyMark(
  trx: Knex.Transaction,
  store: StatementStore,
  batch: readonly ClaimedRow[],
  marks: { readonly published: readonly string[]; readonly failures: readonly FailureMark[] },
  remove: boolean,
): Promise<{ published: number; dead: string[] }> {
  const keys = distributionKeys(batch);
  const byKey = new Map<string, string[]>();
  for (const id of marks.published) {
    const key = keyOf(keys, id);
    const ids = byKey.get(key);
    if (ids === undefined) byKey.set(key, [id]);
    else ids.push(id);
  }
  let count = 0;
  for (const [key, ids] of byKey) {
    const result = await prepared(store, trx, published(store.names, remove), [key, idArray(ids)]);
    count += Number(result.rowCount ?? 0);
  }
  const dead: string[] = [];
  for (const f of marks.failures) {
    const result = await prepared(store, trx, failed(store.names, null), [
      f.charged ? 1 : 0,
      f.error,
      f.delayMs,
      f.dead ? 'dead' : 'pending',
      keyOf(keys, f.id),
      f.id,
    ]);
    if (rowsOf<{ status: string }>(result)[0]?.status === 'dead') dead.push(f.id);
  }
  return { published: count, dead };
}
