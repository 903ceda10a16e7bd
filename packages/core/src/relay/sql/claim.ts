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

/** The columns a claim returns, qualified by `alias`. */
function columns(alias: string): string {
  return ['id', 'destination', 'partition_key', 'message_id', 'headers', 'payload', 'attempts']
    .map((column) => `${alias}.${column}`)
    .join(', ');
}

/**
 * The claim statement; bindings: with `after`, the row id heads must come after; then keys
 * (heads to lock), keyless rows, batch size, batch size; and with `lease` one more: the `idle_in_transaction_session_timeout` to set for the rest of
 * the claiming transaction (milliseconds, as text). Exported so tests can check its plan.
 * @internal
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
 * 2. For each locked key, its next pending events after the head in id order, up to a fair
 *    share of the batch per key (the head included), ranked within the key; the batch is the
 *    lowest `(rank, id)` — so what is taken of each key is always a prefix of its pending
 *    events. When there are at least as many heads as the batch holds, the share is the head
 *    alone and the followers are not read at all.
 * 3. Events without a key are independent: each is locked on its own.
 *
 * The rows are returned whole from where they were read (the locked heads, the followers'
 * index scan), so nothing is read twice; with `lease`, the timeout is set by a one-time
 * filter evaluated before anything else, which saves the transaction a round trip.
 */
export function claimSql(
  names: MigrationNames,
  options: { readonly lease?: boolean; readonly after?: boolean } = {},
): string {
  const t = names.table('outbox');
  return `with heads as materialized (
      select ${columns('h')}
      from ${t} h
      where h.status = 'pending'
        and h.partition_key is not null${
          options.after === true
            ? `
        and h.id > ?::bigint`
            : ''
        }
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
      select ${columns('l')}
      from ${t} l
      where l.status = 'pending'
        and l.partition_key is null
        and l.available_at <= statement_timestamp()
      order by l.id
      limit ?
      for update skip locked
    ),
    share as (
      select greatest(1, ceil(?::numeric / greatest(1, (select count(*) from heads))))::int - 1
        as followers
    ),
    picked as (
      select 1::bigint as rank, ${columns('heads')}
      from heads
      union all
      select f.rank, ${columns('f')}
      from heads
      cross join lateral (
        select 1 + row_number() over (order by r.id) as rank, ${columns('r')}
        from ${t} r
        where r.partition_key = heads.partition_key
          and r.status = 'pending'
          and r.partition_key is not null
          and r.id > heads.id
        order by r.id
        limit (select followers from share)
      ) f
      union all
      select 1::bigint as rank, ${columns('keyless')}
      from keyless
    )
    select ${columns('c')}
    from (select * from picked order by rank, id limit ?) c${
      options.lease === true
        ? `
    where (select set_config('idle_in_transaction_session_timeout', ?, true)) is not null`
        : ''
    }
    order by c.id`;
}

/** Statements per table names, by lease and after flags, built once. */
const statements = new WeakMap<MigrationNames, Map<number, string>>();

function statement(names: MigrationNames, lease: boolean, after: boolean): string {
  let cached = statements.get(names);
  if (cached === undefined) {
    cached = new Map();
    statements.set(names, cached);
  }
  const slot = (lease ? 1 : 0) + (after ? 2 : 0);
  let sql = cached.get(slot);
  if (sql === undefined) {
    sql = claimSql(names, { lease, after });
    cached.set(slot, sql);
  }
  return sql;
}

/**
 * Claims up to `limit` events in `trx`: the claim lasts as long as the transaction, which
 * marks the batch and commits (or rolls back, and the events are simply claimable again).
 * With `leaseMs`, the same statement sets `idle_in_transaction_session_timeout` for the rest
 * of the transaction (PostgreSQL only). With `after`, only heads with a greater row id are
 * considered (a hint that skips keys a sibling cycle of this relay holds; it narrows what may
 * be claimed, never what is verified).
 */
export async function claimBatch(
  trx: Knex.Transaction,
  names: MigrationNames,
  limit: number,
  leaseMs: number | null = null,
  after: string | null = null,
): Promise<ClaimedRow[]> {
  const bindings: Knex.RawBinding[] = [limit, limit, limit, limit];
  if (after !== null) bindings.unshift(after);
  if (leaseMs !== null) bindings.push(String(leaseMs));
  const result = await trx.raw(statement(names, leaseMs !== null, after !== null), bindings);
  const rows = rowsOf<ClaimedRow & { id: string | number | bigint }>(result);
  // pg returns bigint as text already; other drivers may hand back numbers.
  for (const row of rows) {
    if (typeof row.id !== 'string') (row as { id: unknown }).id = String(row.id);
  }
  return rows as ClaimedRow[];
}
