import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import type { MigrationNames } from '../../../store/migration';
import { prepared, type StatementStore } from '../../../store/prepared';
import { statementCache } from '../../../store/statement-cache';
import { claimedRows, columns, type ClaimedRow } from '../claim';
import type { Candidate } from './candidates';

/**
 * The pending events of one key after a row id, oldest first, at most `limit`, as a `from`
 * item (SQL of the statement's own bindings, in this order: distribution key, key, key, after
 * id, limit). Filtered by the distribution column (one shard) and sought in the pending key
 * index by `(partition_key, id)` (see `keyAfter` in `claim.ts`). @internal
 */
export function keyEventsAfter(t: string): string {
  return `(
      select ${columns('r')}
      from ${t} r
      where r.distribution_key = ?
        and r.partition_key = ?
        and (r.partition_key, r.id) > (?::text, ?::bigint)
        and r.status = 'pending'
        and r.partition_key is not null
      order by r.partition_key, r.id
      limit ?
    )`;
}

/**
 * The statement that claims one key: it locks the key's head `for update skip locked`, found
 * by its distribution key and id (one shard, by the primary key), if it is still pending,
 * due and the key's earliest pending event (an index probe; the candidate was read without
 * locks, in an earlier snapshot); and, only if it locked it, reads up to `limit` of the
 * key's next events (nothing new is locked: the head's lock keeps every other relay off the
 * key, as in the batch claim). The head comes first, then the followers in id order.
 * Bindings: distribution key, id, key; distribution key, key, id (the earlier-event probe);
 * then the followers' (see {@link keyEventsAfter}). @internal
 */
export function lockKeySql(names: MigrationNames): string {
  const t = names.table('outbox');
  return `with head as materialized (
      select ${columns('h')}
      from ${t} h
      where h.distribution_key = ?
        and h.id = ?::bigint
        and h.partition_key = ?
        and h.status = 'pending'
        and h.available_at <= statement_timestamp()
        and not exists (
          select 1 from ${t} e
          where e.distribution_key = ?
            and e.partition_key = ?
            and e.status = 'pending'
            and e.partition_key is not null
            and e.id < ?::bigint
        )
      for update of h skip locked
    )
    select 1 as rank, ${columns('head')} from head
    union all
    select 2 as rank, ${columns('f')}
    from ${keyEventsAfter(t)} f
    where exists (select 1 from head)
    order by rank, id`;
}

/**
 * The statement that claims one event without a key: it locks the row by its distribution
 * key (its message id) and id, `for update skip locked`, if it is still pending and due.
 * Bindings: distribution key, id. @internal
 */
export function lockKeylessSql(names: MigrationNames): string {
  return `select ${columns('h')}
    from ${names.table('outbox')} h
    where h.distribution_key = ?
      and h.id = ?::bigint
      and h.partition_key is null
      and h.status = 'pending'
      and h.available_at <= statement_timestamp()
    for update of h skip locked`;
}

const lockKey = statementCache((names, _variant: null) => lockKeySql(names));
const lockKeyless = statementCache((names, _variant: null) => lockKeylessSql(names));

/**
 * Claims `candidate` in `trx` ({@link lockKeySql}, or {@link lockKeylessSql} for an event
 * without a key) with up to `followers` of its key's next events: the head first, then the
 * followers in id order; nothing when another relay holds the key or the candidate is no
 * longer its head, pending or due. @internal
 */
export async function claimCandidate(
  trx: Knex.Transaction,
  store: StatementStore,
  candidate: Candidate,
  followers: number,
): Promise<ClaimedRow[]> {
  const { id, key, distributionKey } = candidate;
  if (key === null) {
    const result = await prepared(store, trx, lockKeyless(store.names, null), [
      distributionKey,
      id,
    ]);
    return claimedRows(rowsOf<Record<string, unknown>>(result));
  }
  const result = await prepared(store, trx, lockKey(store.names, null), [
    distributionKey,
    id,
    key,
    distributionKey,
    key,
    id,
    distributionKey,
    key,
    key,
    id,
    followers,
  ]);
  return claimedRows(rowsOf<Record<string, unknown>>(result));
}
