import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';

/** One claimed outbox row as the relay reads it. @internal */
export interface ClaimedRow {
  readonly id: string;
  readonly destination: string;
  readonly partition_key: string | null;
  readonly message_id: string;
  readonly headers: Record<string, string> | string;
  readonly payload: Uint8Array;
  readonly attempts: number;
}

/**
 * The claim statement; bindings: keys (heads to lock), keyless rows, batch size. Exported so
 * tests can check its plan. @internal
 *
 * How it keeps per-key order across relays:
 *
 * 1. `heads`: the earliest pending event of each key (its head) that is due, oldest first,
 *    locked `for update skip locked`. Holding a key's head row lock *is* holding the key: no
 *    other relay can lock that row until this transaction ends, and every relay that changes
 *    a key's rows (marks, failures) changes its head, so a head that is still pending and due
 *    after the lock (PostgreSQL re-checks a row changed since the snapshot) proves the
 *    snapshot's view of the key is current. A head held elsewhere is skipped; a row that is
 *    not its key's head is never taken as one.
 * 2. For each locked key, its next pending events in id order, a fair share of the batch
 *    each, ranked within the key; the batch is the lowest `(rank, id)` — so what is taken of
 *    each key is always a prefix of its pending events.
 * 3. Events without a key are independent: each is locked on its own.
 */
export function claimSql(names: MigrationNames): string {
  const t = names.table('outbox');
  return `with heads as materialized (
      select h.id, h.partition_key
      from ${t} h
      where h.status = 'pending'
        and h.partition_key is not null
        and h.available_at <= statement_timestamp()
        and not exists (
          select 1 from ${t} e
          where e.partition_key = h.partition_key
            and e.status = 'pending'
            and e.partition_key is not null
            and e.id < h.id
        )
      order by h.id
      limit ?
      for update skip locked
    ),
    keyless as materialized (
      select l.id
      from ${t} l
      where l.status = 'pending'
        and l.partition_key is null
        and l.available_at <= statement_timestamp()
      order by l.id
      limit ?
      for update skip locked
    ),
    share as (
      select greatest(1, ceil(?::numeric / greatest(1, (select count(*) from heads))))::int as per_key
    ),
    picked as (
      select k.id, k.rank
      from heads
      cross join lateral (
        select r.id, row_number() over (order by r.id) as rank
        from ${t} r
        where r.partition_key = heads.partition_key
          and r.status = 'pending'
          and r.partition_key is not null
          and r.id >= heads.id
        order by r.id
        limit (select per_key from share)
      ) k
      union all
      select id, 1 as rank from keyless
    ),
    chosen as (
      select id from picked order by rank, id limit ?
    )
    select o.id, o.destination, o.partition_key, o.message_id, o.headers, o.payload, o.attempts
    from ${t} o
    where o.id = any(array(select id from chosen))
    order by o.id`;
}

/**
 * Claims up to `limit` events in `trx`: the claim lasts as long as the transaction, which
 * marks the batch and commits (or rolls back, and the events are simply claimable again).
 */
export async function claimBatch(
  trx: Knex.Transaction,
  names: MigrationNames,
  limit: number,
): Promise<ClaimedRow[]> {
  const result = await trx.raw(claimSql(names), [limit, limit, limit, limit]);
  return rowsOf<ClaimedRow & { id: string | number }>(result).map((row) => ({
    ...row,
    id: String(row.id),
  }));
}
