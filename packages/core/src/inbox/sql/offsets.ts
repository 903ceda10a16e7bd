import { runSql, type SqlRunner } from '../../transactions/sql';
import type { MigrationNames } from '../../store/migration';
import { rowsOf } from '../../store/migrate';
import { isMysql } from '../../store/dialect';
import {
  mysqlAdvanceWatermark,
  mysqlLockWatermark,
  mysqlReadWatermarks,
  mysqlSetWatermark,
} from './mysql/offsets';

/** A broker partition of one consumer's watermark. @internal */
export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** The key of a partition in maps: `topic\0partition`. @internal */
export function partitionKey(p: PartitionRef): string {
  return `${p.topic}\u0000${p.partition}`;
}

/**
 * Reads the watermarks of partitions, in one statement, by {@link partitionKey}; a partition
 * without a row has none yet (every offset is new). @internal
 */
export async function readWatermarks(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partitions: readonly PartitionRef[],
): Promise<Map<string, bigint>> {
  if (isMysql(names)) return mysqlReadWatermarks(db, names, consumer, partitions);
  const result = await runSql(
    db,
    `select o.topic, o.partition, o.high_offset::text as high_offset
       from ${names.table('inbox_offsets')} o
       join unnest(?::text[], ?::integer[]) as p (topic, partition)
         on o.topic = p.topic and o.partition = p.partition
      where o.consumer = ?`,
    [partitions.map((p) => p.topic), partitions.map((p) => p.partition), consumer],
  );
  const marks = new Map<string, bigint>();
  for (const row of rowsOf<{ topic: string; partition: number; high_offset: string }>(result)) {
    marks.set(
      partitionKey({ topic: row.topic, partition: Number(row.partition) }),
      BigInt(row.high_offset),
    );
  }
  return marks;
}

/**
 * The compare-and-set of a partition's watermark, in the business transaction: raises it to
 * `last` only where it is below `first` (or there is none yet). A transaction that set it
 * holds the row lock until it ends, so a second one (another consumer that believes it owns
 * the partition) waits here and then finds the watermark at or above its `first`: it is
 * refused (false) and must not run its handlers for the records the first one handled.
 * @internal
 */
export async function advanceWatermark(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partition: PartitionRef,
  first: bigint,
  last: bigint,
): Promise<boolean> {
  if (isMysql(names)) return mysqlAdvanceWatermark(db, names, consumer, partition, first, last);
  const result = await runSql(
    db,
    `insert into ${names.table('inbox_offsets')} as o (consumer, topic, partition, high_offset)
     values (?, ?, ?, ?::bigint)
     on conflict (consumer, topic, partition) do update
        set high_offset = excluded.high_offset, updated_at = now()
      where o.high_offset < ?::bigint
     returning 1 as advanced`,
    [consumer, partition.topic, partition.partition, last.toString(), first.toString()],
  );
  return rowsOf(result).length > 0;
}

/**
 * After a refused {@link advanceWatermark}: locks the partition's row and reads the watermark
 * the other transaction committed (a fresh snapshot under read committed). @internal
 */
export async function lockWatermark(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partition: PartitionRef,
): Promise<bigint> {
  if (isMysql(names)) return mysqlLockWatermark(db, names, consumer, partition);
  const result = await runSql(
    db,
    `select high_offset::text as high_offset from ${names.table('inbox_offsets')}
      where consumer = ? and topic = ? and partition = ?
      for update`,
    [consumer, partition.topic, partition.partition],
  );
  const row = rowsOf<{ high_offset: string }>(result)[0];
  if (row === undefined) throw new Error('the offset watermark row vanished while locked');
  return BigInt(row.high_offset);
}

/**
 * Sets the watermark of a partition whose row this transaction has locked (after
 * {@link advanceWatermark} or {@link lockWatermark}): the offset below the first record that
 * failed, so it and everything after it are delivered again. @internal
 */
export async function setWatermark(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partition: PartitionRef,
  high: bigint,
): Promise<void> {
  if (isMysql(names)) return mysqlSetWatermark(db, names, consumer, partition, high);
  await runSql(
    db,
    `update ${names.table('inbox_offsets')} set high_offset = ?::bigint, updated_at = now()
      where consumer = ? and topic = ? and partition = ?`,
    [high.toString(), consumer, partition.topic, partition.partition],
  );
}
