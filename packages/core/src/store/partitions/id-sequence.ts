import type { Knex } from 'knex';
import type { MigrationNames } from '../migration';
import { rowsOf } from '../rows';
import type { PartitionedTable } from './tables';

/** The statements that move a table's identity to a shared sequence, around the swap. @internal */
export interface SequenceSwap {
  /** On the old table once renamed `<table>_plain`: its identity dropped (with its sequence). */
  readonly before: readonly string[];
  /** On the partitioned table: the sequence, its default, and its owner. */
  readonly after: readonly string[];
}

/**
 * Row ids on the partitioned table. PostgreSQL 17 and later refuse to attach a table with an
 * identity column as a partition (before 17 it would keep a sequence of its own), so the old
 * table's identity becomes a plain sequence, `<table>_id_seq`, the partitioned table's
 * default for `id`: every partition draws from it, so ids keep
 * increasing across the conversion and across partitions, which the relay's per-key order
 * relies on. It starts after the identity's last value and the largest id present (read
 * under the swap's lock, so no insert draws in between). Nothing for a table without one.
 * @internal
 */
export async function sharedSequence(
  trx: Knex.Transaction,
  names: MigrationNames,
  spec: PartitionedTable,
): Promise<SequenceSwap> {
  const column = spec.identity;
  if (column === undefined) return { before: [], after: [] };
  const t = names.table(spec.table);
  const identity = rowsOf<{ seq: string | null }>(
    await trx.raw(`select pg_get_serial_sequence(?, ?) as seq`, [t, column]),
  )[0]?.seq;
  let next = 1n;
  if (identity !== null && identity !== undefined) {
    const result = await trx.raw(
      `select case when is_called then last_value + 1 else last_value end as next from ${identity}`,
    );
    next = BigInt(String(rowsOf<{ next: string | number }>(result)[0]?.next ?? 1));
  }
  const max = rowsOf<{ max: string | number | null }>(
    await trx.raw(`select max(${column}) as max from ${t}`),
  )[0]?.max;
  if (max !== null && max !== undefined && BigInt(String(max)) >= next) {
    next = BigInt(String(max)) + 1n;
  }
  const legacy = names.table(`${spec.table}_plain`);
  const sequence = names.table(`${spec.table}_${column}_seq`);
  return {
    before:
      identity === null || identity === undefined
        ? []
        : [`alter table ${legacy} alter column ${column} drop identity`],
    after: [
      `create sequence ${sequence} as bigint start with ${next.toString()}`,
      // Validated identifiers only: safe inside the string literal.
      `alter table ${t} alter column ${column} set default nextval('${sequence}'::regclass)`,
      `alter sequence ${sequence} owned by ${t}.${column}`,
    ],
  };
}
