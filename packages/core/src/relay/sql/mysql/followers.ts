import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../../store/prepared';
import { ascendingId, idsAscending } from '../../row-order';
import type { ClaimedRow } from '../claimed-row';
import { mysqlClaimedRows, mysqlColumns } from './claimed-row';

/**
 * The pending events of each key after its cursor, at most `perKey` each, in id order: one
 * index range scan per key on the pending key index `(status, partition_key, id)`, joined by
 * `union all` (MariaDB has no `lateral`). A plain read: the claiming transaction holds each
 * key's head, which keeps every other relay off the key. @internal
 */
export async function mysqlFollowersOf(
  trx: Knex.Transaction,
  store: StatementStore,
  cursors: ReadonlyArray<readonly [key: string, after: string]>,
  perKey: number,
): Promise<ClaimedRow[]> {
  if (cursors.length === 0 || perKey < 1) return [];
  const t = store.names.table('outbox');
  const one = `(select ${mysqlColumns('r')}
      from ${t} r
      where r.status = 'pending'
        and r.partition_key = ?
        and r.id > cast(? as signed)
      order by r.id
      limit ${Math.floor(perKey)})`;
  const bindings: unknown[] = [];
  for (const [key, after] of cursors) bindings.push(key, after);
  const result = await prepared(
    store,
    trx,
    `${cursors.map(() => one).join('\nunion all\n')}\norder by id`,
    bindings,
  );
  const rows = mysqlClaimedRows(result.rows);
  if (!idsAscending(rows)) rows.sort(ascendingId);
  return rows;
}

/** MySQL's {@link readFollowers}: a fair share of `limit` per held key, as PostgreSQL's. */
export async function mysqlReadFollowers(
  trx: Knex.Transaction,
  store: StatementStore,
  cursors: ReadonlyMap<string, string>,
  limit: number,
): Promise<ClaimedRow[]> {
  if (cursors.size === 0) return [];
  const perKey = Math.max(1, Math.ceil(limit / cursors.size));
  return mysqlFollowersOf(trx, store, [...cursors], perKey);
}
