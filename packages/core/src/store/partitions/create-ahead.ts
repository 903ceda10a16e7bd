import type { Knex } from 'knex';
import type { ResolvedStorePartitions } from '../layout';
import type { MigrationNames } from '../migration';
import { rowsOf } from '../rows';
import {
  boundLiteral,
  listPartitions,
  nextBoundary,
  partitionSuffix,
  type PartitionInfo,
  type RawRunner,
} from './catalog';
import { PARTITION_COLUMN, type PartitionedTable } from './tables';

/** The server's clock, in epoch milliseconds. @internal */
export async function serverNowMs(db: RawRunner): Promise<number> {
  const result = await db.raw(`select extract(epoch from clock_timestamp()) * 1000 as now_ms`);
  return Number(rowsOf<{ now_ms: string | number }>(result)[0]?.now_ms);
}

/** Sets `lock_timeout` for the rest of `trx`, so DDL gives up rather than queue writers. @internal */
export async function boundLockWait(trx: Knex.Transaction, lockTimeoutMs: number): Promise<void> {
  await trx.raw(`select set_config('lock_timeout', ?, true)`, [`${lockTimeoutMs}ms`]);
}

/**
 * Locks the partitioned table before any change to its partitions, and resolves to its
 * name. Writers lock it (an insert, the dedup trigger's lookup) before any partition: taking
 * the default partition first, to move its rows, then the table to attach the new one,
 * deadlocked with inserts that held the table and read the default partition. Within one
 * transaction a second request for the lock it holds is granted at once.
 */
async function lockParent(
  trx: Knex.Transaction,
  names: MigrationNames,
  spec: PartitionedTable,
): Promise<string> {
  const parent = names.table(spec.table);
  await trx.raw(`lock table ${parent} in access exclusive mode`);
  return parent;
}

/**
 * Creates one range partition `[fromMs, toMs)`. Rows of that range already in the default
 * partition (the partitions ahead fell behind: nothing ran maintenance for `ahead` intervals)
 * are moved into it first, in the same transaction, since PostgreSQL refuses a partition whose
 * rows sit in the default one.
 */
async function createPartition(
  trx: Knex.Transaction,
  names: MigrationNames,
  spec: PartitionedTable,
  defaultName: string | undefined,
  fromMs: number | null,
  toMs: number,
): Promise<void> {
  const parent = await lockParent(trx, names, spec);
  const part = names.table(`${spec.table}_${partitionSuffix(fromMs ?? toMs)}`);
  const bounds = `for values from (${boundLiteral(fromMs, 'MINVALUE')}) to (${boundLiteral(toMs, 'MAXVALUE')})`;
  const col = PARTITION_COLUMN;
  const range = `${col} < ${boundLiteral(toMs, 'MAXVALUE')}${
    fromMs === null ? '' : ` and ${col} >= ${boundLiteral(fromMs, 'MINVALUE')}`
  }`;
  const stray =
    defaultName === undefined
      ? false
      : rowsOf<{ found: boolean }>(
          await trx.raw(
            `select exists (select 1 from ${names.schema}."${defaultName}" where ${range}) as found`,
          ),
        )[0]?.found === true;
  if (!stray) {
    await trx.raw(`create table ${part} partition of ${parent} ${bounds}`);
    return;
  }
  await trx.raw(`lock table ${names.schema}."${defaultName}" in access exclusive mode`);
  await trx.raw(`create table ${part} (like ${parent} including defaults including constraints)`);
  await trx.raw(
    `with moved as (delete from ${names.schema}."${defaultName}" where ${range} returning *)
     insert into ${part} select * from moved`,
  );
  await trx.raw(`alter table ${parent} attach partition ${part} ${bounds}`);
}

/**
 * Creates the partitions for rows the default partition holds from before the first range
 * (rows written with an earlier `created_at`: an import, a backfill), from the interval of
 * the oldest of them up to the first range, moving them in; the retention job can then drop
 * them whole. The default partition is meant to stay empty, so reading its oldest row (a scan
 * of it) costs nothing in normal operation. Resolves to the number created.
 */
async function createPartitionsBehind(
  trx: Knex.Transaction,
  names: MigrationNames,
  spec: PartitionedTable,
  intervalMs: number,
  ranges: readonly PartitionInfo[],
  defaultName: string | undefined,
): Promise<number> {
  if (defaultName === undefined || ranges.length === 0) return 0;
  const first = ranges.reduce<number | null>(
    (start, p) => (start === null || p.fromMs === null ? null : Math.min(start, p.fromMs)),
    Infinity,
  );
  if (first === null) return 0;
  const result = await trx.raw(
    `select extract(epoch from min(${PARTITION_COLUMN})) * 1000 as oldest
       from ${names.schema}."${defaultName}"`,
  );
  const oldest = rowsOf<{ oldest: string | number | null }>(result)[0]?.oldest ?? null;
  if (oldest === null || Number(oldest) >= first) return 0;
  let created = 0;
  for (let from = Math.floor(Number(oldest) / intervalMs) * intervalMs; from < first;) {
    const to = Math.min(nextBoundary(from, intervalMs), first);
    await createPartition(trx, names, spec, defaultName, from, to);
    from = to;
    created += 1;
  }
  return created;
}

/**
 * Inside `trx` (which holds the table's maintenance lock): creates the range partitions from
 * the end of the last one up to `ahead` intervals past the server's clock, each ending on a
 * multiple of `intervalMs`, those for rows the default partition holds from before the first
 * one, and the default partition if there is none. Resolves to the
 * number of partitions created. @internal
 */
export async function createPartitionsAhead(
  trx: Knex.Transaction,
  names: MigrationNames,
  spec: PartitionedTable,
  settings: ResolvedStorePartitions,
): Promise<number> {
  const parent = names.table(spec.table);
  const parts = await listPartitions(trx, parent);
  const ranges = parts.filter((p) => !p.isDefault);
  const defaultPart = parts.find((p) => p.isDefault);
  const nowMs = await serverNowMs(trx);
  const { intervalMs, ahead } = settings;
  let from =
    ranges.length === 0
      ? Math.floor(nowMs / intervalMs) * intervalMs
      : ranges.reduce<number | null>(
          (end, p) => (end === null || p.toMs === null ? null : Math.max(end, p.toMs)),
          -Infinity,
        );
  let created = 0;
  const until = nowMs + ahead * intervalMs;
  while (from !== null && from < until) {
    const to = nextBoundary(from, intervalMs);
    await createPartition(trx, names, spec, defaultPart?.name, from, to);
    from = to;
    created += 1;
  }
  created += await createPartitionsBehind(trx, names, spec, intervalMs, ranges, defaultPart?.name);
  if (defaultPart === undefined) {
    await lockParent(trx, names, spec);
    const name = names.table(`${spec.table}_default`);
    await trx.raw(`create table ${name} partition of ${parent} default`);
    created += 1;
  }
  return created;
}

/** The advisory lock key under which one process at a time changes the table's partitions. @internal */
export function maintenanceLockKey(names: MigrationNames, spec: PartitionedTable): string {
  return `justonce:partitions:${names.table(spec.table)}`;
}
