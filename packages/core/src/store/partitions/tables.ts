import type { MigrationNames } from '../migration';

/** A unique key of a plain table, which the partitioned table extends with `created_at`. @internal */
export interface PartitionedKey {
  /** The constraint's name without the table, e.g. `pkey` for `outbox_pkey`. */
  readonly suffix: string;
  readonly kind: 'primary key' | 'unique';
  /** The plain table's key columns, comma-separated. */
  readonly columns: string;
}

/**
 * A table the partitioned layout range-partitions by `created_at` (docs/store.md,
 * "Partitioned layout"): what its conversion and upkeep need to know. @internal
 */
export interface PartitionedTable {
  /** The table's name without prefix. */
  readonly table: 'inbox_records' | 'outbox';
  /** The plain table's unique keys: PostgreSQL wants the partition column in each. */
  readonly keys: readonly PartitionedKey[];
  /** Its plain indexes (name suffixes), each recreated on the partitioned table. */
  readonly indexes: readonly string[];
  /**
   * The columns whose values the dedup trigger keeps unique across partitions, the way the
   * plain table's own unique key did.
   */
  readonly dedupColumns: readonly string[];
  /** An identity column the conversion turns into a shared sequence's default. */
  readonly identity?: string;
}

/** The column every partitioned table is partitioned by. @internal */
export const PARTITION_COLUMN = 'created_at';

/** The inbox's dedup records. @internal */
export const INBOX_RECORDS: PartitionedTable = {
  table: 'inbox_records',
  keys: [{ suffix: 'pkey', kind: 'primary key', columns: 'consumer, scope, message_id' }],
  indexes: ['expires_at_idx', 'succeeded_created_idx'],
  dedupColumns: ['consumer', 'scope', 'message_id'],
};

/** The outbox: its row ids from a shared sequence, its message ids unique by trigger. @internal */
export const OUTBOX: PartitionedTable = {
  table: 'outbox',
  keys: [
    { suffix: 'pkey', kind: 'primary key', columns: 'id' },
    { suffix: 'message_id_key', kind: 'unique', columns: 'message_id' },
  ],
  indexes: ['pending_idx', 'pending_key_idx', 'pending_keyless_idx', 'published_idx', 'dead_idx'],
  dedupColumns: ['message_id'],
  identity: 'id',
};

/** Every table of the layout, in the order `migrate()` converts them. @internal */
export const PARTITIONED_TABLES: readonly PartitionedTable[] = [INBOX_RECORDS, OUTBOX];

/** The name (unquoted, prefixed) of the table's object `suffix`: `outbox_pkey`. @internal */
export function objectName(names: MigrationNames, spec: PartitionedTable, suffix: string): string {
  return names.name(`${spec.table}_${suffix}`);
}

/** The same object of the old table a conversion keeps: `outbox_plain_pkey`. @internal */
export function plainName(names: MigrationNames, spec: PartitionedTable, suffix: string): string {
  return names.name(`${spec.table}_plain_${suffix}`);
}
