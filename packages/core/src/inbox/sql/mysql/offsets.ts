import { runSql, type SqlRunner } from '../../../transactions/sql';
import type { MigrationNames } from '../../../store/migration';
import { rowsOf } from '../../../store/migrate';
import { partitionKey, type PartitionRef } from '../offsets';
import { isDuplicateKey } from './message-key';

/** The key of a partition's row; `partition` is a reserved word in MySQL. */
const ROW = 'consumer = ? and topic = ? and `partition` = ?';

/** MySQL's `readWatermarks`: the partitions as a list of pairs. @internal */
export async function mysqlReadWatermarks(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partitions: readonly PartitionRef[],
): Promise<Map<string, bigint>> {
  const marks = new Map<string, bigint>();
  if (partitions.length === 0) return marks;
  const result = await runSql(
    db,
    `select topic, \`partition\`, cast(high_offset as char) as high_offset
       from ${names.table('inbox_offsets')}
      where consumer = ? and (topic, \`partition\`) in (${partitions.map(() => '(?, ?)').join(', ')})`,
    [consumer, ...partitions.flatMap((p) => [p.topic, p.partition])],
  );
  for (const row of rowsOf<{ topic: string; partition: number; high_offset: string }>(result)) {
    marks.set(
      partitionKey({ topic: row.topic, partition: Number(row.partition) }),
      BigInt(row.high_offset),
    );
  }
  return marks;
}

/** The raise of an existing watermark that is below `first`: one row matched, or none. */
async function raise(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partition: PartitionRef,
  first: bigint,
  last: bigint,
): Promise<boolean> {
  const result = await runSql(
    db,
    `update ${names.table('inbox_offsets')}
        set high_offset = ?, updated_at = current_timestamp(6)
      where ${ROW} and high_offset < ?`,
    [last.toString(), consumer, partition.topic, partition.partition, first.toString()],
  );
  return result.rowCount > 0;
}

/**
 * MySQL's `advanceWatermark`, without `on conflict … do update … where` (MySQL's upsert
 * cannot leave a row alone and say so: mysql2's CLIENT_FOUND_ROWS counts an insert and an
 * untouched row alike). The raise of the row where it is below `first`, which waits on a row
 * another transaction holds and then reads its committed watermark; no row: the insert; a
 * duplicate key (another transaction inserted the row first) undoes the insert alone, and the
 * raise runs again against that row. Either way, as on PostgreSQL, a raise holds the row's
 * lock until the transaction ends, and a second owner is refused. @internal
 */
export async function mysqlAdvanceWatermark(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partition: PartitionRef,
  first: bigint,
  last: bigint,
): Promise<boolean> {
  if (await raise(db, names, consumer, partition, first, last)) return true;
  try {
    await runSql(
      db,
      `insert into ${names.table('inbox_offsets')} (consumer, topic, \`partition\`, high_offset)
       values (?, ?, ?, ?)`,
      [consumer, partition.topic, partition.partition, last.toString()],
    );
    return true;
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
  }
  return raise(db, names, consumer, partition, first, last);
}

/** MySQL's `lockWatermark`. @internal */
export async function mysqlLockWatermark(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partition: PartitionRef,
): Promise<bigint> {
  const result = await runSql(
    db,
    `select cast(high_offset as char) as high_offset from ${names.table('inbox_offsets')}
      where ${ROW} for update`,
    [consumer, partition.topic, partition.partition],
  );
  const row = rowsOf<{ high_offset: string }>(result)[0];
  if (row === undefined) throw new Error('the offset watermark row vanished while locked');
  return BigInt(row.high_offset);
}

/** MySQL's `setWatermark`. @internal */
export async function mysqlSetWatermark(
  db: SqlRunner,
  names: MigrationNames,
  consumer: string,
  partition: PartitionRef,
  high: bigint,
): Promise<void> {
  await runSql(
    db,
    `update ${names.table('inbox_offsets')}
        set high_offset = ?, updated_at = current_timestamp(6)
      where ${ROW}`,
    [high.toString(), consumer, partition.topic, partition.partition],
  );
}
