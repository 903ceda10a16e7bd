import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import { prepared, type StatementStore } from '../../store/prepared';
import type { MigrationNames } from '../../store/migration';
import { ascendingId, idsAscending } from '../row-order';
import { packedSql, unpackRows, type PackedRow } from './packed-rows';
import type { ClaimedRow } from './claimed-row';
import { statementCache } from '../../store/statement-cache';
import { isMysql } from '../../store/dialect';
import { mysqlClaimBatch } from './mysql/claim';

export type { ClaimedRow } from './claimed-row';

/** The columns a claim returns, qualified by `alias`. @internal */
export function columns(alias: string): string {
  return ['id', 'destination', 'partition_key', 'message_id', 'headers', 'payload', 'attempts']
    .map((column) => `${alias}.${column}`)
    .join(', ');
}

/**
 * The condition that selects the pending events of one key after a row id (SQL expressions),
 * for a scan in `(partition_key, id)` order. The row comparison is what makes the scan a
 * seek in the pending key index straight to the key's cursor: given only
 * `partition_key = key and id > after`, the planner may walk the id index and filter by key
 * (it prices that walk as if keys were spread evenly over uncached pages), which looks at
 * every event of the other keys in between — tens of thousands of rows for a rare key.
 * @internal
 */
export function keyAfter(alias: string, key: string, after: string): string {
  return `${alias}.partition_key = ${key}
          and (${alias}.partition_key, ${alias}.id) > (${key}, ${after})
          and ${alias}.status = 'pending'
          and ${alias}.partition_key is not null`;
}

/**
 * The pending events of one key after its head, in id order and ranked from 2 (the head is
 * 1), at most `limit` (SQL expressions, of the statement's own aliases): the subquery a
 * `lateral` join runs per head, an index range scan on the pending key index (see
 * {@link keyAfter}).
 */
function followersOfHead(table: string, at: { key: string; after: string; limit: string }): string {
  return `
        select 1 + row_number() over (order by r.partition_key, r.id) as rank, ${columns('r')}
        from ${table} r
        where ${keyAfter('r', at.key, at.after)}
        order by r.partition_key, r.id
        limit ${at.limit}
      `;
}

/**
 * The claim statement. Exported so tests can check its plan; {@link claimBindings} gives its
 * bindings. @internal
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
 * Heads are looked for among the oldest `window` pending keyed events only (`oldest`), so a
 * claim's work is bounded whatever the backlog: a few keys with deep queues would otherwise
 * make it test every pending row for head-ness. Within the window only each key's first
 * event can be its head (`candidates`): every earlier pending event of the key is older, so
 * in the window too. With `after` the window starts later, and may cut a key's earlier
 * events off: then each head is also tested against every earlier pending event of its key
 * (an index probe per head); without it, the window starts at the first pending event and
 * the test would tell nothing more. The statement reports how many rows the window held and
 * when it was full and gave too few heads (its keys held by other relays or
 * backing off), the relay looks further with {@link scanKeysSql}.
 *
 * A claim locks only as many keys as its batch needs (`needed`): as many as the oldest keys
 * of the window whose events in it add up to the batch, and at least `minKeys` (the lanes
 * the cycle publishes in, so each has a key); `heads` then locks that many, oldest first,
 * passing over keys that are not due or held elsewhere. Keys with deep queues are taken
 * few at a time, deeply, and the rest stay free for the relay's other cycles and for other
 * relays; before, a claim took as many keys as the batch had room for, so on a backlog of a
 * few hundred keys one relay's cycles held every key and further relays found none. Keys
 * held elsewhere are skipped and do not count; the fair share then gives each locked key
 * more of the batch.
 *
 * The rows are returned whole from where they were read (the locked heads, the followers'
 * index scan), so nothing is read twice; one row with a null id stands in when nothing was
 * claimed, so the window count always comes back. With `lease`, the timeout is set by a
 * one-time filter evaluated before anything else, which saves the transaction a round trip.
 */
export function claimSql(
  names: MigrationNames,
  options: { readonly lease?: boolean; readonly after?: boolean } = {},
): string {
  const t = names.table('outbox');
  const after = (alias: string): string =>
    options.after === true
      ? `
        and ${alias}.id > ?::bigint`
      : '';
  return `with oldest as materialized (
      select b.id, b.partition_key
      from ${t} b
      where b.status = 'pending'
        and b.partition_key is not null${after('b')}
      order by b.id
      limit ?
    ),
    bound as materialized (
      select count(*) as rows_seen from oldest
    ),
    candidates as materialized (
      select min(id) as id, count(*) as window_events from oldest group by partition_key
    ),
    needed as (
      select greatest(?::int, count(*)) as keys
      from (
        select sum(window_events) over (order by id) - window_events as before
        from candidates
      ) e
      where e.before < ?
    ),
    heads as materialized (
      select ${columns('h')}
      from ${t} h
      where h.id = any(array(select id from candidates))
        and h.status = 'pending'
        and h.partition_key is not null
        and h.available_at <= statement_timestamp()${
          options.after === true
            ? `
        and not exists (
          select 1 from ${t} e
          where e.partition_key = h.partition_key
            and e.status = 'pending'
            and e.partition_key is not null
            and e.id < h.id
        )`
            : ''
        }
      order by h.id
      limit (select keys from needed)
      for update of h skip locked
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
      cross join lateral (${followersOfHead(t, {
        key: 'heads.partition_key',
        after: 'heads.id',
        limit: '(select followers from share)',
      })}) f
      union all
      select 1::bigint as rank, ${columns('keyless')}
      from keyless
    )
    select (select rows_seen from bound) as window_rows, ${columns('c')}
    from (select 1) as one
    left join (select * from picked order by rank, id limit ?) c on true${
      options.lease === true
        ? `
    where (select set_config('idle_in_transaction_session_timeout', ?, true)) is not null`
        : ''
    }
    order by c.id`;
}

/** What a claim is asked for. @internal */
export interface ClaimRequest {
  /** Most events to claim. */
  readonly limit: number;
  /** Oldest pending keyed events among which heads are looked for. */
  readonly window: number;
  /** Only heads with a greater row id (a sibling cycle's hint), or null. */
  readonly after: string | null;
  /** `idle_in_transaction_session_timeout` to set for the transaction, or null. */
  readonly leaseMs: number | null;
  /** Fewest keys to lock when there are that many to take (the cycle's lanes). Default 1. */
  readonly minKeys?: number;
}

/** The bindings of {@link claimSql} for a request, in statement order. @internal */
export function claimBindings(request: ClaimRequest): Knex.RawBinding[] {
  const { limit, window, after, leaseMs } = request;
  const bindings: Knex.RawBinding[] = [];
  if (after !== null) bindings.push(after);
  bindings.push(window, request.minKeys ?? 1, limit, limit, limit, limit);
  if (leaseMs !== null) bindings.push(String(leaseMs));
  return bindings;
}

/** The claim statement per variant (bit 1 with the lease, bit 2 with `after`), packed. */
const statement = statementCache((names, variant: number) =>
  packedSql(
    claimSql(names, { lease: (variant & 1) !== 0, after: (variant & 2) !== 0 }),
    'max(z.window_rows) as window_rows',
  ),
);

/** Claimed rows with row ids as text (pg returns bigint as text; other drivers may not). */
export function claimedRows(rows: ReadonlyArray<Record<string, unknown>>): ClaimedRow[] {
  const claimed: ClaimedRow[] = [];
  for (const row of rows) {
    if (row.id === null || row.id === undefined) continue;
    if (typeof row.id !== 'string') row.id = String(row.id as number | bigint);
    claimed.push(row as unknown as ClaimedRow);
  }
  return claimed;
}

/** What {@link claimBatch} took. @internal */
export interface Claim {
  /** The claimed events in id order. */
  readonly rows: ClaimedRow[];
  /** The window of oldest pending keyed events was full: heads may lie beyond it. */
  readonly windowFull: boolean;
}

/**
 * Claims up to `limit` events in `trx`: the claim lasts as long as the transaction, which
 * marks the batch and commits (or rolls back, and the events are simply claimable again).
 * With `leaseMs`, the same statement sets `idle_in_transaction_session_timeout` for the rest
 * of the transaction (PostgreSQL only). With `after`, only heads with a greater row id are
 * considered (a hint that skips keys a sibling cycle of this relay holds; it narrows what may
 * be claimed, never what is verified). The rows travel packed (see `packed-rows.ts`).
 */
export async function claimBatch(
  trx: Knex.Transaction,
  store: StatementStore,
  request: ClaimRequest,
): Promise<Claim> {
  if (isMysql(store)) return mysqlClaimBatch(trx, store, request);
  const result = await prepared(
    store,
    trx,
    statement(store.names, (request.leaseMs !== null ? 1 : 0) + (request.after !== null ? 2 : 0)),
    claimBindings(request),
  );
  const [packed] = rowsOf<PackedRow & { window_rows: unknown }>(result);
  const rows = await unpackRows(trx, store, packed);
  if (!idsAscending(rows)) rows.sort(ascendingId);
  return { rows, windowFull: Number(packed?.window_rows ?? 0) >= request.window };
}
