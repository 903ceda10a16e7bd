import type { Knex } from 'knex';
import { rowsOf } from '../../../store/migrate';
import type { MigrationNames } from '../../../store/migration';
import type { TableStats } from '../stats';

/** MySQL's {@link readTableStats}: the same counts, the age from the database's clock. */
export async function mysqlReadTableStats(knex: Knex, names: MigrationNames): Promise<TableStats> {
  const t = names.table('outbox');
  const row = rowsOf<{ pending: unknown; dead: unknown; oldest_ms: unknown }>(
    await knex.raw(
      `select
         (select count(*) from ${t} where status = 'pending') as pending,
         (select count(*) from ${t} where status = 'dead') as dead,
         (select timestampdiff(microsecond, min(created_at), current_timestamp(6)) / 1000
            from ${t} where status = 'pending') as oldest_ms`,
    ),
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
