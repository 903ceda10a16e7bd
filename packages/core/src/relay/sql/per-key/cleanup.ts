import { rowsOf } from '../../../store/migrate';
import { prepared, type StatementStore } from '../../../store/prepared';
import { statementCache } from '../../../store/statement-cache';
import type { Store } from '../../../store/store';
import { idArray } from '../id-array';

/**
 * The published events older than `olderThanMs`, oldest first, at most `limit` (its two
 * bindings), by distribution key and id, read without locks through the partial index on
 * `published_at`: on a distributed table a multi-shard read. @internal
 */
export function expiredPublishedSql(table: string): string {
  return `select distribution_key, id::text as id from ${table}
     where status = 'published'
       and published_at < statement_timestamp() - ? * interval '1 millisecond'
     order by published_at
     limit ?`;
}

const expired = statementCache((names, _variant: null) =>
  expiredPublishedSql(names.table('outbox')),
);

/** Deletes published events of one distribution key by id: one shard. */
const deleteKey = statementCache(
  (names, _variant: null) =>
    `delete from ${names.table('outbox')}
       where distribution_key = ? and id = any(?::bigint[]) and status = 'published'`,
);

/**
 * The per-key form of the relay's cleanup batch: reads at most `limit` published events older
 * than `olderThanMs` ({@link expiredPublishedSql}), then deletes them with one statement per
 * distribution key, each in its own transaction on the store's pool (published rows are
 * locked by nobody else for long: a delete that meets one a concurrent cleanup is deleting
 * waits for it and finds it gone). Resolves to how many rows went. @internal
 */
export async function perKeyDeletePublishedBatch(
  store: Pick<Store, 'knex'> & StatementStore,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  const rows = rowsOf<{ distribution_key: string; id: string }>(
    await prepared(store, store.knex, expired(store.names, null), [olderThanMs, limit]),
  );
  const byKey = new Map<string, string[]>();
  for (const { distribution_key: key, id } of rows) {
    const ids = byKey.get(key);
    if (ids === undefined) byKey.set(key, [String(id)]);
    else ids.push(String(id));
  }
  let deleted = 0;
  for (const [key, ids] of byKey) {
    const result = await prepared(store, store.knex, deleteKey(store.names, null), [
      key,
      idArray(ids),
    ]);
    deleted += Number(result.rowCount ?? 0);
  }
  return deleted;
}
