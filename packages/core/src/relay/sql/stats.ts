import type { Knex } from 'knex';
import { rowsOf } from '../../store/migrate';
import type { MigrationNames } from '../../store/migration';
import { isMysql } from '../../store/dialect';
import { mysqlReadTableStats } from './mysql/stats';

/** What the outbox table holds right now. @internal */
export interface TableStats {
  readonly pending: number;
  readonly oldestPendingAgeMs: number;
  readonly dead: number;
}

/** Counts pending and dead events and the age of the oldest pending one (partial indexes only). */
export async function readTableStats(knex: Knex, names: MigrationNames): Promise<TableStats> {
  if (isMysql(names)) return mysqlReadTableStats(knex, names);
  const t = names.table('outbox');
  const result = await knex.raw(
    `select
       (select count(*) from ${t} where status = 'pending') as pending,
       (select count(*) from ${t} where status = 'dead') as dead,
       (select extract(epoch from statement_timestamp() - min(created_at)) * 1000
          from ${t} where status = 'pending') as oldest_ms`,
  );
  const row = rowsOf<{ pending: string | number; dead: string | number; oldest_ms: unknown }>(
    result,
  )[0];
  return {
    pending: Number(row?.pending ?? 0),
    dead: Number(row?.dead ?? 0),
    oldestPendingAgeMs:
      row?.oldest_ms === null || row?.oldest_ms === undefined
        ? 0
        : Math.max(0, Math.round(Number(row.oldest_ms))),
  };
}
