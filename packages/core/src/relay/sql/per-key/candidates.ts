import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import type { MigrationNames } from '../../../store/migration';
import { prepared, type StatementStore } from '../../../store/prepared';
import { statementCache } from '../../../store/statement-cache';

/**
 * A row a per-key claim may try to lock: a key's head (its earliest pending event as the read
 * saw it), or an event without a key. @internal
 */
export interface Candidate {
  readonly id: string;
  /** The event's partition key; null for an event without one. */
  readonly key: string | null;
  /** The row's distribution key: the partition key, or for a keyless event its message id. */
  readonly distributionKey: string;
  /** The key's pending events the read saw (1 for a keyless event). */
  readonly events: number;
  /** Whether the head was due (`available_at` passed) when read. */
  readonly due: boolean;
}

/**
 * The per-key claim's first statement, which locks nothing: among the oldest `window` pending
 * keyed events (after a sibling's hint, with `after`), each key's first (its head as this
 * read sees it), how many of the window's events it has and whether it is due; and the
 * oldest due events without a key, at most `limit`. Every row carries how many rows the
 * window held; one row with a null id stands in when there is no candidate. On a distributed
 * table both reads are multi-shard reads (ordered and limited on each shard, merged), and the
 * grouping runs over their result. Bindings: with `after`, the hint; the window; the limit.
 * @internal
 */
export function windowCandidatesSql(
  names: MigrationNames,
  options: { readonly after: boolean },
): string {
  const t = names.table('outbox');
  return `with oldest as materialized (
      select b.id, b.partition_key, b.available_at
      from ${t} b
      where b.status = 'pending'
        and b.partition_key is not null${
          options.after
            ? `
        and b.id > ?::bigint`
            : ''
        }
      order by b.id
      limit ?
    ),
    keyless as materialized (
      select l.id, l.message_id
      from ${t} l
      where l.status = 'pending'
        and l.partition_key is null
        and l.available_at <= statement_timestamp()
      order by l.id
      limit ?
    )
    select (select count(*) from oldest) as window_rows, c.id::text as id, c.partition_key,
      c.distribution_key, c.events, c.due
    from (select 1) as one
    left join (
      select min(o.id) as id, o.partition_key, o.partition_key as distribution_key,
        count(*) as events,
        (array_agg(o.available_at <= statement_timestamp() order by o.id))[1] as due
      from oldest o
      group by o.partition_key
      union all
      select l.id, null, l.message_id, 1, true
      from keyless l
    ) c on true
    order by c.id`;
}

/**
 * The statement that looks for heads beyond the window, locking nothing: the pending keyed
 * events in `(partition_key, id)` order after a cursor key, at most `rows` of them (an index
 * range scan of the pending key index), grouped by key: each key's first event (its head as
 * this read sees it), the count read of it, and whether the head is due. The last key's
 * group may be cut short; its first event is still its head. Bindings: with a cursor, the
 * cursor; the row limit. @internal
 */
export function keyWalkSql(names: MigrationNames, options: { readonly cursor: boolean }): string {
  const t = names.table('outbox');
  return `select min(s.id)::text as id, s.partition_key, s.partition_key as distribution_key,
      count(*) as events,
      (array_agg(s.available_at <= statement_timestamp() order by s.id))[1] as due
    from (
      select r.id, r.partition_key, r.available_at
      from ${t} r
      where r.status = 'pending'
        and r.partition_key is not null${
          options.cursor
            ? `
        and r.partition_key > ?`
            : ''
        }
      order by r.partition_key, r.id
      limit ?
    ) s
    group by s.partition_key
    order by s.partition_key`;
}

const windowStatement = statementCache((names, after: boolean) =>
  windowCandidatesSql(names, { after }),
);
const walkStatement = statementCache((names, cursor: boolean) => keyWalkSql(names, { cursor }));

interface CandidateRow {
  readonly window_rows?: unknown;
  readonly id: string | null;
  readonly partition_key: string | null;
  readonly distribution_key: string;
  readonly events: unknown;
  readonly due: boolean;
}

function candidate(row: CandidateRow & { id: string }): Candidate {
  return {
    id: String(row.id),
    key: row.partition_key,
    distributionKey: row.distribution_key,
    events: Number(row.events),
    due: row.due === true,
  };
}

/** What {@link readWindowCandidates} found. @internal */
export interface WindowCandidates {
  /** Keys' heads in id order. */
  readonly heads: Candidate[];
  /** Due events without a key in id order. */
  readonly keyless: Candidate[];
  /** How many rows the window held. */
  readonly windowRows: number;
}

/** Runs {@link windowCandidatesSql} in `trx`. @internal */
export async function readWindowCandidates(
  trx: Knex.Transaction,
  store: StatementStore,
  request: { readonly window: number; readonly after: string | null; readonly limit: number },
): Promise<WindowCandidates> {
  const bindings: Knex.RawBinding[] = [request.window, request.limit];
  if (request.after !== null) bindings.unshift(request.after);
  const rows = rowsOf<CandidateRow>(
    await prepared(store, trx, windowStatement(store.names, request.after !== null), bindings),
  );
  const heads: Candidate[] = [];
  const keyless: Candidate[] = [];
  for (const row of rows) {
    if (row.id === null) continue;
    const found = candidate(row as CandidateRow & { id: string });
    (found.key === null ? keyless : heads).push(found);
  }
  return { heads, keyless, windowRows: Number(rows[0]?.window_rows ?? 0) };
}

/**
 * Runs {@link keyWalkSql} from `cursor` (null: the first key) over at most `rows` rows;
 * resolves to the heads found in key order and the cursor to go on from: the last key read,
 * or null when the walk reached the last pending event. @internal
 */
export async function walkKeys(
  trx: Knex.Transaction,
  store: StatementStore,
  cursor: string | null,
  rows: number,
): Promise<{ heads: Candidate[]; next: string | null }> {
  const bindings: Knex.RawBinding[] = cursor === null ? [rows] : [cursor, rows];
  const found = rowsOf<CandidateRow & { id: string }>(
    await prepared(store, trx, walkStatement(store.names, cursor !== null), bindings),
  ).map(candidate);
  const read = found.reduce((sum, head) => sum + head.events, 0);
  return { heads: found, next: read < rows ? null : (found[found.length - 1]?.key ?? null) };
}
