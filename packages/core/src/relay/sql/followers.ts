import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import { prepared, type StatementStore } from '../../store/prepared';
import { ascendingId, idsAscending } from '../row-order';
import { columns, keyAfter, type ClaimedRow } from './claim';
import { idArray } from './id-array';
import { packedSql, unpackRows, type PackedRow } from './packed-rows';
import { statementCache } from '../../store/statement-cache';
import { isMysql } from '../../store/dialect';
import { mysqlReadFollowers } from './mysql/followers';

/**
 * The statement that continues a claim: the next pending events of keys this transaction
 * already holds (their head rows stay locked by it until it ends, so no other relay can take
 * them), each key after its own cursor: a fair share of `limit` per key (`ceil(limit / keys)`,
 * so a little over `limit` in all when every key has its share), each share a prefix of what
 * follows the key's cursor. The rows come back in id order, so any prefix of them is again a
 * prefix of each key's events, oldest first. Ranking each key's rows and taking the lowest
 * `(rank, id)` up to `limit` exactly would cost PostgreSQL about twice as much per row (a
 * window function and a sort of whole rows). Bindings: keys, cursors (row ids), limit.
 * Exported so tests can check its plan. @internal
 */
export function followersSql(names: MigrationNames): string {
  const t = names.table('outbox');
  return `with held as materialized (
      select k.key, k.after from unnest(?::text[], ?::bigint[]) as k(key, after)
    ),
    share as (
      select greatest(1, ceil(?::numeric / greatest(1, (select count(*) from held))))::int
        as per_key
    )
    select ${columns('f')}
    from held
    cross join lateral (
      select ${columns('r')}
      from ${t} r
      where ${keyAfter('r', 'held.key', 'held.after')}
      order by r.partition_key, r.id
      limit (select per_key from share)
    ) f
    order by f.id`;
}

const statement = statementCache((names, _variant: null) => packedSql(followersSql(names)));

/**
 * Reads, in the claiming transaction, about `limit` further events of the held keys (see
 * {@link followersSql}): for each key in `cursors`, the pending events after its cursor (the
 * last row id taken of it), in id order.
 * Nothing is locked anew: the transaction's locks on the keys' heads already keep every
 * other relay off these keys.
 */
export async function readFollowers(
  trx: Knex.Transaction,
  store: StatementStore,
  cursors: ReadonlyMap<string, string>,
  limit: number,
): Promise<ClaimedRow[]> {
  if (isMysql(store)) return mysqlReadFollowers(trx, store, cursors, limit);
  if (cursors.size === 0) return [];
  const result = await prepared(store, trx, statement(store.names, null), [
    [...cursors.keys()],
    idArray(cursors.values()),
    limit,
  ]);
  const rows = await unpackRows(trx, store, rowsOf<PackedRow>(result)[0]);
  // Any prefix of id order is also a prefix of each key's events.
  if (!idsAscending(rows)) rows.sort(ascendingId);
  return rows;
}
