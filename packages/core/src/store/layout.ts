import { durationOption, integerOption, optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';

/**
 * How `store.migrate()` lays out the inbox's dedup records (`inbox_records`) and the outbox
 * (`outbox`): plain tables (`'plain'`, the default), or tables range-partitioned by
 * `created_at`, whose retention drops whole partitions instead of deleting rows
 * (`'partitioned'`). See
 * docs/store.md, "Partitioned layout".
 */
export type StoreLayout = 'plain' | 'partitioned';

/** The partitions of the `'partitioned'` layout. */
export interface StorePartitions {
  /**
   * The time range of one partition, in milliseconds; boundaries fall on multiples of it
   * since the Unix epoch (UTC). Default one day; from one minute to 31 days.
   */
  intervalMs?: number;
  /** How many intervals past now `migrate()` and the retention job keep created. Default 3. */
  ahead?: number;
  /**
   * How long creating or dropping a partition waits for the table's lock before giving up
   * until the next pass (`lock_timeout`), so that it never queues writers behind a long
   * transaction. Default 2 000 ms.
   */
  lockTimeoutMs?: number;
}

/** {@link StorePartitions} with defaults applied. */
export interface ResolvedStorePartitions {
  readonly intervalMs: number;
  readonly ahead: number;
  readonly lockTimeoutMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const PARTITION_KEYS = optionKeys<StorePartitions>()(['intervalMs', 'ahead', 'lockTimeoutMs']);

/** Validates `layout`, refusing anything but the two layouts. @internal */
export function resolveLayout(value: unknown): StoreLayout {
  if (value === undefined) return 'plain';
  if (value !== 'plain' && value !== 'partitioned') {
    throw new ConfigurationError(`layout must be 'plain' or 'partitioned'`, { layout: value });
  }
  return value;
}

/** Validates `partitions` and applies its defaults. @internal */
export function resolvePartitions(value: unknown): ResolvedStorePartitions {
  if (value !== undefined && (typeof value !== 'object' || value === null)) {
    throw new ConfigurationError('partitions must be an object', { partitions: value });
  }
  const given = (value ?? {}) as StorePartitions;
  rejectUnknownOptions(given, PARTITION_KEYS, 'createStore', 'partitions');
  return {
    intervalMs: integerOption(
      given.intervalMs,
      'partitions.intervalMs',
      DAY_MS,
      60_000,
      31 * DAY_MS,
    ),
    ahead: integerOption(given.ahead, 'partitions.ahead', 3, 1, 1000),
    lockTimeoutMs: Math.round(
      durationOption(given.lockTimeoutMs, 'partitions.lockTimeoutMs', 2000, 1),
    ),
  };
}
