import type { Knex } from 'knex';
import { prepared, type StatementStore } from '../../../store/prepared';
import { ascendingId, idsAscending } from '../../row-order';
import type { Claim, ClaimRequest } from '../claim';
import type { ClaimedRow } from '../claimed-row';
import { idMarks, mysqlClaimedRows, mysqlColumns } from './claimed-row';
import { mysqlFollowersOf } from './followers';

/** One key of the window: its first pending event there, and how many it holds there. */
interface Candidate {
  readonly id: string;
  readonly events: number;
}

/** The window of oldest pending keyed events, by key (see `claimSql`). */
async function windowKeys(
  trx: Knex.Transaction,
  store: StatementStore,
  request: ClaimRequest,
): Promise<{ candidates: Candidate[]; rows: number }> {
  const t = store.names.table('outbox');
  const bindings: unknown[] = [];
  if (request.after !== null) bindings.push(request.after);
  bindings.push(request.window);
  const result = await prepared(
    store,
    trx,
    `select min(w.id) as id, count(*) as events
     from (
       select b.id, b.partition_key
       from ${t} b
       where b.status = 'pending'
         and b.partition_key is not null${request.after !== null ? ' and b.id > cast(? as signed)' : ''}
       order by b.id
       limit ?
     ) w
     group by w.partition_key
     order by min(w.id)`,
    bindings,
  );
  let rows = 0;
  const candidates = result.rows.map((row) => {
    const events = Number(row.events);
    rows += events;
    return { id: String(row.id as string | number), events };
  });
  return { candidates, rows };
}

/**
 * The candidates that are their key's head when the window starts after `after`: no earlier
 * pending event of the key, which the window may have cut off. A plain (consistent) read, on
 * its own: as a subquery of the locking read it would itself be read with locks on MariaDB,
 * and `skip locked` would then pass over an earlier event another relay holds, the very
 * event that makes the candidate no head.
 */
async function headsOnly(
  trx: Knex.Transaction,
  store: StatementStore,
  ids: readonly string[],
): Promise<string[]> {
  const t = store.names.table('outbox');
  const result = await prepared(
    store,
    trx,
    `select h.id from ${t} h
     where h.id in (${idMarks(ids.length)})
       and not exists (
         select 1 from ${t} e
         where e.status = 'pending'
           and e.partition_key = h.partition_key
           and e.id < h.id
       )`,
    ids,
  );
  return result.rows.map((row) => String(row.id as string | number));
}

/**
 * MySQL's {@link claimBatch}: the same claim as PostgreSQL's one statement, in a few
 * statements of the claiming transaction (MySQL has no data-modifying or materialized CTEs
 * and MariaDB no `lateral`):
 *
 * 1. the window: the oldest `window` pending keyed events, by key (a plain read);
 * 2. the heads: as many of the window's keys as the batch needs, each by its first event
 *    there, locked `for update skip locked`, oldest first. The lock is the claim of the key,
 *    as on PostgreSQL; InnoDB's locking read sees the row's latest committed version, so a
 *    head another relay published or failed since step 1 is no longer pending and is
 *    passed over, and one it holds is skipped. A key's earlier pending event can only come
 *    from an insert that committed after a later one, as on PostgreSQL;
 * 3. events without a key, each locked on its own;
 * 4. the locked keys' next events (a plain read: the heads' locks keep other relays off
 *    them), a fair share each, and the batch is the lowest `(rank, id)`, as on PostgreSQL.
 *
 * The window bounds the work of a claim as there. There is no lease: MySQL has no per
 * transaction idle timeout (see `cycle.ts`). The statements run one after another on the
 * transaction's connection; each is bounded by the window or the batch.
 */
export async function mysqlClaimBatch(
  trx: Knex.Transaction,
  store: StatementStore,
  request: ClaimRequest,
): Promise<Claim> {
  const t = store.names.table('outbox');
  const { limit } = request;
  const window = await windowKeys(trx, store, request);
  let before = 0;
  let fitting = 0;
  for (const candidate of window.candidates) {
    if (before < limit) fitting += 1;
    before += candidate.events;
  }
  const needed = Math.max(request.minKeys ?? 1, fitting);
  let ids = window.candidates.map((c) => c.id);
  if (request.after !== null && ids.length > 0) ids = await headsOnly(trx, store, ids);
  let heads: ClaimedRow[] = [];
  if (ids.length > 0) {
    const locked = await prepared(
      store,
      trx,
      `select ${mysqlColumns('h')}
       from ${t} h force index (primary)
       where h.id in (${idMarks(ids.length)})
         and h.status = 'pending'
         and h.partition_key is not null
         and h.available_at <= current_timestamp(6)
       order by h.id
       limit ?
       for update skip locked`,
      [...ids, needed],
    );
    heads = mysqlClaimedRows(locked.rows);
  }
  const keyless = mysqlClaimedRows(
    (
      await prepared(
        store,
        trx,
        `select ${mysqlColumns('l')}
         from ${t} l
         where l.status = 'pending'
           and l.partition_key is null
           and l.available_at <= current_timestamp(6)
         order by l.id
         limit ?
         for update skip locked`,
        [limit],
      )
    ).rows,
  );
  const share = Math.max(1, Math.ceil(limit / Math.max(1, heads.length))) - 1;
  const ranked: { rank: number; row: ClaimedRow }[] = [
    ...heads.map((row) => ({ rank: 1, row })),
    ...keyless.map((row) => ({ rank: 1, row })),
  ];
  if (share > 0 && heads.length > 0) {
    const followers = await mysqlFollowersOf(
      trx,
      store,
      heads.map((h) => [h.partition_key!, h.id] as const),
      share,
    );
    const seen = new Map<string, number>();
    for (const row of followers) {
      const rank = (seen.get(row.partition_key!) ?? 1) + 1;
      seen.set(row.partition_key!, rank);
      ranked.push({ rank, row });
    }
  }
  ranked.sort((a, b) => a.rank - b.rank || ascendingId(a.row, b.row));
  const rows = ranked.slice(0, limit).map((r) => r.row);
  if (!idsAscending(rows)) rows.sort(ascendingId);
  return { rows, windowFull: window.rows >= request.window };
}
