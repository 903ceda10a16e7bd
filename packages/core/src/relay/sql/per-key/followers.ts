import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import type { MigrationNames } from '../../../store/migration';
import { prepared, type StatementStore } from '../../../store/prepared';
import { statementCache } from '../../../store/statement-cache';
import { ascendingId } from '../../row-order';
import { claimedRows, columns, type ClaimedRow } from '../claim';
import { keyEventsAfter } from './lock';

/**
 * The statement that reads the next events of one key the transaction holds, after its cursor
 * (see {@link keyEventsAfter}): one shard, nothing locked (the head's lock keeps other relays
 * off the key). @internal
 */
export function keyFollowersSql(names: MigrationNames): string {
  return `select ${columns('f')} from ${keyEventsAfter(names.table('outbox'))} f order by f.id`;
}

const statement = statementCache((names, _variant: null) => keyFollowersSql(names));

/**
 * The per-key form of `readFollowers` (`followers.ts`): for each held key in `cursors`, its
 * pending events after its cursor, a fair share of `limit` each (`ceil(limit / keys)`), one
 * statement per key; in id order, so any prefix is a prefix of each key's events. @internal
 */
export async function perKeyReadFollowers(
  trx: Knex.Transaction,
  store: StatementStore,
  cursors: ReadonlyMap<string, string>,
  limit: number,
): Promise<ClaimedRow[]> {
  if (cursors.size === 0) return [];
  const share = Math.max(1, Math.ceil(limit / cursors.size));
  const rows: ClaimedRow[] = [];
  for (const [key, after] of cursors) {
    // A keyed event's distribution key is its partition key.
    const result = await prepared(store, trx, statement(store.names, null), [
      key,
      key,
      key,
      after,
      share,
    ]);
    rows.push(...claimedRows(rowsOf<Record<string, unknown>>(result)));
  }
  return rows.sort(ascendingId);
}
