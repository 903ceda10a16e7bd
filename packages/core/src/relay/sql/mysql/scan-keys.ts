import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../../store/prepared';
import type { ClaimedRow } from '../claimed-row';
import type { KeyCursor } from '../scan-keys';
import { idMarks, mysqlClaimedRows, mysqlColumns } from './claimed-row';

/**
 * MySQL's {@link claimByKeys}: the same walk in two statements. The first walks at most
 * `keys` distinct keys with pending events after the cursor, in key order, with each key's
 * earliest pending event (a `group by` over the pending key index `(status, partition_key,
 * id)`, which InnoDB reads as a loose index scan: one descent per key); the second locks
 * those heads that are due, oldest first, `for update skip locked`. The lock re-reads each
 * head's latest version, so one published or failed since the walk is passed over, as on
 * PostgreSQL. Keys are walked in byte order (`utf8mb4_bin`), PostgreSQL's in its collation's:
 * the walk needs only a total order.
 */
export async function mysqlClaimByKeys(
  trx: Knex.Transaction,
  store: StatementStore,
  cursor: KeyCursor,
  keys: number,
  exclude: readonly string[],
  limit: number,
): Promise<ClaimedRow[]> {
  const t = store.names.table('outbox');
  const from = cursor.key;
  const walked = (
    await prepared(
      store,
      trx,
      `select o.partition_key as k, min(o.id) as id
       from ${t} o
       where o.status = 'pending'
         and o.partition_key is not null${from !== null ? ' and o.partition_key > ?' : ''}
       group by o.partition_key
       order by o.partition_key
       limit ?`,
      from !== null ? [from, keys] : [keys],
    )
  ).rows as { k: string; id: string | number }[];
  cursor.key = walked.length < keys ? null : (walked[walked.length - 1]?.k ?? null);
  const skip = new Set(exclude);
  const ids = walked.filter((w) => !skip.has(w.k)).map((w) => String(w.id));
  if (ids.length === 0) return [];
  const locked = await prepared(
    store,
    trx,
    `select ${mysqlColumns('h')}
     from ${t} h force index (primary)
     where h.id in (${idMarks(ids.length)})
       and h.status = 'pending'
       and h.available_at <= current_timestamp(6)
     order by h.id
     limit ?
     for update skip locked`,
    [...ids, limit],
  );
  return mysqlClaimedRows(locked.rows);
}
