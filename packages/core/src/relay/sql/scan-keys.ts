import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import { prepared, type StatementStore } from '../../store/prepared';
import { statementCache } from '../../store/statement-cache';
import { claimedRows, columns, keyAfter, type ClaimedRow } from './claim';
import { isMysql } from '../../store/dialect';
import { mysqlClaimByKeys } from './mysql/scan-keys';

/**
 * The statement that looks for heads beyond the claim's window: it walks the distinct keys
 * with pending events in key order after a cursor (one index descent per key, through the
 * pending key index), at most `keys` of them, takes each key's earliest pending event (a seek
 * in the same index, see {@link keyAfter}; row ids start at 1), and locks those that are due,
 * oldest first, `for update skip locked` — the same head rule as {@link claimSql}, found by
 * key instead of by age. A key of the window's claim is left out.
 *
 * It returns the heads and, on every row (or on one row with a null id when none was taken),
 * the last key walked and how many keys were walked, so the relay can continue from there
 * next time and start over once it has reached the end. Bindings: with a cursor, the cursor;
 * then keys to walk, keys to leave out, limit. Exported so tests can check its plan.
 * @internal
 */
export function scanKeysSql(names: MigrationNames, options: { readonly cursor: boolean }): string {
  const t = names.table('outbox');
  const pendingKey = (alias: string): string =>
    `${alias}.status = 'pending' and ${alias}.partition_key is not null`;
  return `with recursive walk as (
      (
        select o.partition_key as key, 1 as n
        from ${t} o
        where ${pendingKey('o')}${options.cursor ? ' and o.partition_key > ?' : ''}
        order by o.partition_key
        limit 1
      )
      union all
      select (
          select o.partition_key
          from ${t} o
          where ${pendingKey('o')} and o.partition_key > walk.key
          order by o.partition_key
          limit 1
        ),
        walk.n + 1
      from walk
      where walk.key is not null and walk.n < ?
    ),
    walked as materialized (
      select key from walk where key is not null
    ),
    heads as materialized (
      select ${columns('h')}
      from ${t} h
      where h.id in (
          select first.id
          from walked
          cross join lateral (
            select r.id
            from ${t} r
            where ${keyAfter('r', 'walked.key', '0')}
            order by r.partition_key, r.id
            limit 1
          ) first
          where walked.key <> all(?::text[])
        )
        and h.status = 'pending'
        and h.available_at <= statement_timestamp()
      order by h.id
      limit ?
      for update skip locked
    )
    select s.last_key, s.keys_walked, ${columns('heads')}
    from (select max(key) as last_key, count(*) as keys_walked from walked) s
    left join heads on true
    order by heads.id`;
}

/**
 * Where a relay's key walk stands: the last key it walked, or null to start at the first; and
 * until when walks are paused (a `performance.now()` time, 0 when not).
 */
export interface KeyCursor {
  key: string | null;
  pausedUntil: number;
}

/**
 * Pauses the relay's walks for `ms`: a walk over every key found no head to take, so every
 * key with pending events is held by another cycle or relay, or backing off, and walking
 * again before their holds can end would only look at the same keys (one index descent per
 * key each time; with several relays on few keys these walks were most of the database's
 * work). The claim's window still runs every cycle. @internal
 */
export function pauseWalks(cursor: KeyCursor, ms: number): void {
  cursor.pausedUntil = performance.now() + ms;
}

/** Whether the relay's walks are paused (see {@link pauseWalks}). @internal */
export function walkPaused(cursor: KeyCursor): boolean {
  return performance.now() < cursor.pausedUntil;
}

const statement = statementCache((names, cursor: boolean) => scanKeysSql(names, { cursor }));

/**
 * Claims up to `limit` heads found by walking at most `keys` keys after `cursor.key`, leaving
 * out `exclude`, and moves the cursor on (back to the start once the walk reaches the last
 * key). Runs in the claiming transaction. @internal
 */
export async function claimByKeys(
  trx: Knex.Transaction,
  store: StatementStore,
  cursor: KeyCursor,
  keys: number,
  exclude: readonly string[],
  limit: number,
): Promise<ClaimedRow[]> {
  if (isMysql(store)) return mysqlClaimByKeys(trx, store, cursor, keys, exclude, limit);
  const from = cursor.key;
  const bindings: Knex.RawBinding[] = [keys, [...exclude], limit];
  if (from !== null) bindings.unshift(from);
  const raw = rowsOf<Record<string, unknown> & { last_key: string | null; keys_walked: unknown }>(
    await prepared(store, trx, statement(store.names, from !== null), bindings),
  );
  const walked = Number(raw[0]?.keys_walked ?? 0);
  cursor.key = walked < keys ? null : (raw[0]?.last_key ?? null);
  return claimedRows(raw);
}
