import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../../store/prepared';
import type { ClaimedRow } from '../claimed-row';
import type { KeyCursor } from '../scan-keys';
import { idMarks, mysqlClaimedRows, mysqlColumns } from './claimed-row';

/**
 * MySQL's {@link claimByKeys}: the same walk in two statements, bounded by rows rather than
 * by keys. PostgreSQL's walk skips from key to key, one index descent each; MySQL and MariaDB
 * have none for this (no loose index scan over the pending key index, and a recursive CTE's
 * correlated seek is planned as a scan of every pending row). So the first statement reads
 * at most {@link WALK_ROWS_PER_KEY} × `keys` pending keyed rows after the cursor in `(partition_key, id)` order (a range
 * of the pending key index), and takes each key's first row there, which is its earliest
 * pending event, whether or not the range cut the key's later rows off. A key deeper than the
 * walk takes a walk of its own, and the next walk goes on after it: the work of one stays
 * bounded as the claim's window is, and the cursor still goes round every key. The second
 * statement locks the heads that are due, oldest first, `for update skip locked`; the lock
 * re-reads each head's latest version, so one published or failed since the walk is passed
 * over, as on PostgreSQL. Keys are walked in byte order (the outbox's NO PAD binary
 * collation), PostgreSQL's in its collation's: the walk needs only a total order.
 */
/**
 * Rows a walk reads per key it may walk: rows of the index alone, read in order, cost far
 * less than PostgreSQL's descent per key, and keys a few events deep then take one walk.
 */
const WALK_ROWS_PER_KEY = 4;

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
  const bound = keys * WALK_ROWS_PER_KEY;
  const walked = (
    await prepared(
      store,
      trx,
      `select w.partition_key as k, min(w.id) as id, count(*) as n
       from (
         select o.partition_key, o.id
         from ${t} o
         where o.status = 'pending'
           and o.partition_key is not null${from !== null ? ' and o.partition_key > ?' : ''}
         order by o.partition_key, o.id
         limit ?
       ) w
       group by w.partition_key
       order by w.partition_key`,
      from !== null ? [from, bound] : [bound],
    )
  ).rows as { k: string; id: string | number; n: unknown }[];
  let rows = 0;
  for (const w of walked) rows += Number(w.n);
  // Fewer rows than the walk may read: it reached the last key, and starts over next time.
  cursor.key = rows < bound ? null : (walked[walked.length - 1]?.k ?? null);
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
