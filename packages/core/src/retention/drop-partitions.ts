import type { Knex } from 'knex';
import { rowsOf } from '../store/rows';
import { listPartitions } from '../store/partitions/catalog';
import { boundLockWait, maintenanceLockKey, serverNowMs } from '../store/partitions/create-ahead';
import { isLockTimeout, maintainPartitions } from '../store/partitions/maintain';
import type { RetentionRuntime } from './runtime';
import type { CleanupTarget } from './targets';
import type { PartitionCleanup } from './types';

/** What a pass did to a partitioned table's partitions, and what is left for row deletes. @internal */
export interface PartitionPass extends PartitionCleanup {
  /** Partitions (quoted, qualified) whose stale rows are deleted row by row. */
  readonly rowTables: readonly string[];
}

async function allExpired(
  db: Knex | Knex.Transaction,
  rt: RetentionRuntime,
  target: CleanupTarget,
  partition: string,
): Promise<boolean> {
  if (target.partitioned === undefined) return false;
  const { sql, bindings } = target.partitioned.allExpired(partition, rt.options.windows);
  const result = await db.raw(sql, bindings);
  return rowsOf<{ expired: boolean }>(result)[0]?.expired === true;
}

/**
 * Detaches and drops `partition` of `parent` in one short transaction, when every row of it
 * may still go once the parent is locked (no insert, and no writer's update, can reach it
 * then: a pending outbox event found now keeps it). The lock is
 * waited for at most `lockTimeoutMs`. Resolves to `dropped`, `kept` (a row not yet expired)
 * or `busy` (the lock was not granted: the next pass tries again).
 */
async function dropPartition(
  rt: RetentionRuntime,
  target: CleanupTarget,
  parent: string,
  partition: string,
): Promise<'dropped' | 'kept' | 'busy'> {
  const { store } = rt.options;
  const spec = target.partitioned?.spec;
  if (spec === undefined) return 'kept';
  try {
    return await store.knex.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [
        maintenanceLockKey(store.names, spec),
      ]);
      await boundLockWait(trx, store.partitions.lockTimeoutMs);
      await trx.raw(`lock table ${parent} in access exclusive mode`);
      if (!(await allExpired(trx, rt, target, partition))) return 'kept';
      await trx.raw(`alter table ${parent} detach partition ${partition}`);
      await trx.raw(`drop table ${partition}`);
      return 'dropped';
    });
  } catch (error) {
    if (isLockTimeout(error)) return 'busy';
    throw error;
  }
}

/**
 * Retention on a partitioned table: first the partitions ahead are created (as `migrate()`
 * does), then every range partition that ends before the retention window (all its rows were
 * written before it) and whose rows may all go (the inbox's: past their own expiry; the
 * outbox's: no pending event, no dead one still kept) is dropped whole, with no row deleted
 * and nothing left for vacuum. What cannot go whole is left to row deletes (none on the
 * outbox): the default partition, partitions before the window that still hold a row to
 * keep, and the partition a live conversion kept the old table as (it starts at `MINVALUE`),
 * which goes whole too once its bound is past the window and it holds nothing to keep.
 * @internal
 */
export async function dropExpiredPartitions(
  rt: RetentionRuntime,
  target: CleanupTarget,
  parent: string,
): Promise<PartitionPass> {
  const { store, windows } = rt.options;
  const spec = target.partitioned?.spec;
  const upkeep =
    spec === undefined
      ? { created: 0, busy: false }
      : await maintainPartitions(store.knex, store.names, spec, store.partitions);
  const parts = await listPartitions(store.knex, parent);
  const cutoffMs = (await serverNowMs(store.knex)) - windows.retentionMs;
  const qualified = (name: string): string => `${store.names.schema}."${name}"`;
  const rowTables: string[] = [];
  let dropped = 0;
  let busy = upkeep.busy;
  for (const part of parts) {
    const table = qualified(part.name);
    if (part.isDefault) {
      rowTables.push(table);
      continue;
    }
    // The partition of everything before a live conversion's bound (from MINVALUE) takes
    // row deletes until it can go whole: it holds the table's whole past.
    const legacy = part.fromMs === null;
    if (part.toMs === null || part.toMs > cutoffMs || busy) {
      if (legacy) rowTables.push(table);
      continue;
    }
    const outcome = (await allExpired(store.knex, rt, target, table))
      ? await dropPartition(rt, target, parent, table)
      : 'kept';
    if (outcome === 'dropped') dropped += 1;
    else if (outcome === 'busy') busy = true;
    else rowTables.push(table);
  }
  return { dropped, created: upkeep.created, busy, rowTables };
}
