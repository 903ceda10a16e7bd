import type { Knex } from 'knex';
import type { ResolvedStorePartitions } from '../layout';
import type { MigrationNames } from '../migration';
import { tableKind } from './catalog';
import { boundLockWait, createPartitionsAhead, maintenanceLockKey } from './create-ahead';
import type { PartitionedTable } from './tables';

/** What {@link maintainPartitions} did. @internal */
export interface PartitionUpkeep {
  /** Partitions created (ahead, and the default one when it was missing). */
  readonly created: number;
  /** The table's lock was not granted within `lockTimeoutMs`: nothing changed, try again later. */
  readonly busy: boolean;
}

/** Whether `error` is PostgreSQL's `lock_not_available` (a `lock_timeout` that fired). @internal */
export function isLockTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '55P03';
}

/**
 * Keeps `ahead` intervals of partitions created past now on the table `spec` names, when it
 * is partitioned; does nothing on a plain one. One short transaction under the table's maintenance lock, its
 * DDL bounded by `lockTimeoutMs` so that it never holds writers queued behind a long
 * transaction: when the lock is not granted it reports `busy` and changes nothing. @internal
 */
export async function maintainPartitions(
  knex: Knex,
  names: MigrationNames,
  spec: PartitionedTable,
  settings: ResolvedStorePartitions,
): Promise<PartitionUpkeep> {
  if ((await tableKind(knex, names.table(spec.table))) !== 'p') {
    return { created: 0, busy: false };
  }
  try {
    const created = await knex.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [maintenanceLockKey(names, spec)]);
      await boundLockWait(trx, settings.lockTimeoutMs);
      return createPartitionsAhead(trx, names, spec, settings);
    });
    return { created, busy: false };
  } catch (error) {
    if (isLockTimeout(error)) return { created: 0, busy: true };
    throw error;
  }
}
